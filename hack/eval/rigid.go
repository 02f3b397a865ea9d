package main

import (
	"fmt"
	"io"
	"strconv"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/model"
	"github.com/vodascheduler/voda/pkg/simulator"
)

// Rigid jobs: the synthetic workload of `voda simulate` with half its jobs
// rigid (minimum = maximum), as every job of Philly's trace ran at a fixed
// size; the Pollux workloads let every job run on one GPU, so they never
// show what large minimums do to the elastic policies.
const (
	rigidShare = 0.5
	rigidSeeds = 4
)

var rigidLoads = []float64{0.5, 1, 1.5, 2}

// rigidRuns is every policy's result per load, one per seed.
type rigidRuns map[float64]map[string][]simulator.Result

func runRigid() (rigidRuns, error) {
	cat := model.Builtin()
	sc := simulator.ModelCatalog(cat)
	type job struct {
		load   float64
		policy string
		w      simulator.Workload
	}
	var jobs []job
	for _, l := range rigidLoads {
		for seed := uint64(1); seed <= rigidSeeds; seed++ {
			w, err := simulator.Generate(simulator.GenConfig{Jobs: 160, Load: l, Seed: seed, GPUsPerNode: 4, MaxGPUs: 64, RigidShare: rigidShare},
				sc, simulator.Batches(cat))
			if err != nil {
				return nil, err
			}
			for _, p := range algorithm.Names() {
				jobs = append(jobs, job{l, p, w})
			}
		}
	}
	results := make([]simulator.Result, len(jobs))
	errs := make([]error, len(jobs))
	forEach(len(jobs), func(i int) {
		results[i], errs[i] = simulator.Run(vodaConfig(jobs[i].policy), jobs[i].w, sc)
	})
	out := rigidRuns{}
	for i, j := range jobs {
		if errs[i] != nil {
			return nil, errs[i]
		}
		if out[j.load] == nil {
			out[j.load] = map[string][]simulator.Result{}
		}
		out[j.load][j.policy] = append(out[j.load][j.policy], results[i])
	}
	return out, nil
}

func writeRigid(w io.Writer, runs rigidRuns) {
	fmt.Fprintf(w, `## Rigid jobs

The built-in synthetic workload (160 jobs, Philly-like arrivals and
sizes, the built-in model catalog) with %.0f%% of its jobs rigid: they run
only at their GPUs, under every policy (`+"`voda simulate --rigid-share %g --load L --seed S`"+`,
seeds 1–%d, mean over the seeds). Voda's own conditions (event-driven, 30 s
rate limit, 30 s restart delay). The bound treats rigid jobs as elastic
under the elastic policies, so it is looser than for the Pollux workloads.

`, 100*rigidShare, rigidShare, rigidSeeds)
	for _, l := range rigidLoads {
		fmt.Fprintf(w, "### %s× load\n\n", strconv.FormatFloat(l, 'f', 1, 64))
		fmt.Fprintln(w, "| Policy | avg JCT | p99 JCT | makespan | GPU util | useful util | rescales/job | restarts/job | JCT / bound |")
		fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
		for _, p := range algorithm.Names() {
			a := aggregate(runs[l][p])
			fmt.Fprintf(w, "| %s | %.0f s | %.0f s | %s | %.0f%% | %.0f%% | %.2f | %.2f | %.2f |\n",
				p, a.avg, a.p99, hours(a.makespan), 100*a.util, 100*a.eff, a.rescales, a.restarts, a.avg/a.bound)
		}
		fmt.Fprintln(w)
	}
}
