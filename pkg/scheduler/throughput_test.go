package scheduler_test

import (
	"fmt"
	"testing"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/scheduler"
)

// The engine hands Config.Throughput to the placement: a job rated faster
// on more nodes is spread over the three nodes the packed one leaves, one
// without a rate stays packed.
func TestThroughputReachesThePlacement(t *testing.T) {
	c := &fakeClock{t: t0}
	cfg := scheduler.DefaultConfig("gpu", c)
	cfg.Policy = algorithm.NameFIFO
	cfg.Throughput = func(id api.JobID, layout []int) float64 {
		if id != "spread" {
			return 0
		}
		return float64(len(layout))
	}
	e, err := scheduler.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if err := e.Step(scheduler.NodeSet{Node: api.Node{Name: api.NodeName(fmt.Sprintf("n%d", i)), GPUs: 4}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []api.JobID{"spread", "packed"} {
		spec := api.JobSpec{MinWorkers: 4, MaxWorkers: 4, RequestedWorkers: 4}
		if err := e.Step(scheduler.JobSubmitted{ID: id, Spec: spec}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Tick(); err != nil {
		t.Fatal(err)
	}
	want := map[api.JobID]int{"spread": 3, "packed": 1}
	for _, j := range e.Jobs() {
		nodes := map[api.NodeName]bool{}
		for _, n := range j.Nodes {
			nodes[n] = true
		}
		if j.Phase != api.PhaseRunning || len(nodes) != want[j.ID] {
			t.Errorf("job %s: %s on nodes %v, want running on %d nodes", j.ID, j.Phase, j.Nodes, want[j.ID])
		}
	}
}
