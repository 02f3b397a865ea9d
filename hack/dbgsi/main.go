package main

import (
	"fmt"
	"os"
	"time"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/model"
	"github.com/vodascheduler/voda/pkg/quota"
	"github.com/vodascheduler/voda/pkg/simulator"
)

func main() {
	cat, _ := model.LoadProfiles("../shared/traces/pollux-adaptdl/profiles")
	sc := simulator.ModelCatalog(cat)
	w, err := simulator.ReadWorkload("../shared/traces/pollux-adaptdl/workloads/workload-"+os.Args[1]+".csv", sc)
	if err != nil {
		panic(err)
	}
	qs, _ := simulator.TeamQueues(4, 64)
	names := []string{"team-a", "team-b", "team-c", "team-d"}
	sw, _ := simulator.SpreadQueues(w, names, simulator.SpreadHalf)
	cfg := simulator.Config{Policy: os.Args[2], Nodes: 16, GPUsPerNode: 4, RestartDelay: 30 * time.Second, RateLimit: 30 * time.Second, Tiresias: algorithm.DefaultTiresias(), Queues: qs}
	cfg.RecordEvents = true
	shared, err := simulator.Run(cfg, sw, sc)
	if err != nil {
		panic(err)
	}
	team := os.Args[3]
	part := simulator.Workload{Name: "p"}
	for _, j := range sw.Jobs {
		if j.QueueName == team {
			part.Jobs = append(part.Jobs, j)
		}
	}
	q := qs[0]
	for _, x := range qs {
		if x.Name == team {
			q = x
		}
	}
	q.Cohort, q.BorrowingLimit, q.LendingLimit = "", quota.Unlimited, quota.Unlimited
	c2 := cfg
	c2.Queues = []quota.Queue{q}
	alone, err := simulator.Run(c2, part, sc)
	if err != nil {
		panic(err)
	}
	if len(os.Args) > 4 {
		for _, r := range []simulator.Result{shared, alone} {
			fmt.Println("---")
			for _, e := range r.Events {
				if e.Job == os.Args[4] {
					fmt.Printf("%7.0f %-9s %3d %s\n", e.T, e.Kind, e.GPUs, e.Reason)
				}
			}
		}
		return
	}
	am := map[string]simulator.JobResult{}
	for _, j := range alone.Jobs {
		am[j.Name] = j
	}
	for _, j := range shared.Jobs {
		if j.QueueName != team {
			continue
		}
		a := am[j.Name]
		fmt.Printf("%-16s sub %6.0f jct %7.0f alone %7.0f  q %5.0f/%5.0f restarts %d/%d rescales %d/%d gpus %d\n", j.Name, j.Submit, j.JCT, a.JCT, j.Queue, a.Queue, j.Restarts, a.Restarts, j.Rescales, a.Rescales, j.GPUs)
	}
}
