package scheduler_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/scheduler"
)

// Between events the engine accounts nothing, but what it hands out is
// live: a running job's and a waiting job's counters read 98 s after the
// last event have grown by 98 s at their rates, say so in Accounted, and
// reading them changes nothing the engine decides with.
func TestJobsAreAccountedUpToTheClock(t *testing.T) {
	c := &fakeClock{t: t0}
	cfg := scheduler.DefaultConfig("gpu", c)
	cfg.Policy = algorithm.NameFIFO
	e, err := scheduler.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	steps := []scheduler.Event{
		scheduler.NodeSet{Node: api.Node{Name: "n0", GPUs: 4}},
		scheduler.JobSubmitted{ID: "run", Spec: api.JobSpec{MinWorkers: 2, MaxWorkers: 2, GPUsPerWorker: 2}},
		scheduler.JobSubmitted{ID: "wait", Spec: api.JobSpec{MinWorkers: 1, MaxWorkers: 1}},
	}
	for _, ev := range steps {
		if err := e.Step(ev); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Tick(); err != nil {
		t.Fatal(err)
	}
	c.t = t0.Add(98 * time.Second)
	type counters struct {
		Phase                                   api.Phase
		Waiting, Running, GPU, SinceStart, Wsrr float64
		Accounted                               time.Time
	}
	of := func(j scheduler.Job) counters {
		return counters{j.Phase, j.WaitingSeconds, j.RunningSeconds, j.GPUSeconds, j.SinceStartGPUSeconds, j.WaitingSinceRunSeconds, j.Accounted}
	}
	want := map[api.JobID]counters{
		"run":  {api.PhaseRunning, 0, 98, 98 * 4, 98 * 4, 0, c.t},
		"wait": {api.PhaseWaiting, 98, 0, 0, 0, 98, c.t},
	}
	for range 2 { // reading twice gives the same: reading accounts nothing
		got := map[api.JobID]counters{}
		for _, j := range e.Jobs() {
			got[j.ID] = of(j)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("Jobs() 98 s after the last event (-want +got):\n%s", d)
		}
		j, _ := e.Job("wait")
		if d := cmp.Diff(want["wait"], of(j)); d != "" {
			t.Errorf("Job(wait) (-want +got):\n%s", d)
		}
	}
	// An event at the same instant accounts the same values into the engine.
	if err := e.Step(scheduler.Tick{}); err != nil {
		t.Fatal(err)
	}
	j, _ := e.Job("run")
	if d := cmp.Diff(want["run"], of(j)); d != "" {
		t.Errorf("after a step at the same instant (-want +got):\n%s", d)
	}
}
