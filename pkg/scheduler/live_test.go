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

// A job no node can run is held: the next round gives its GPUs to a job
// that can run, says why in its message and its halt, and the policy does
// not see it again until it is released.
func TestUnschedulableJobGivesItsGPUsBack(t *testing.T) {
	c := &fakeClock{t: t0}
	cfg := scheduler.DefaultConfig("gpu", c)
	cfg.Policy = algorithm.NameHeSRPT
	cfg.RateLimit = 0
	e, err := scheduler.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	step := func(ev scheduler.Event) {
		t.Helper()
		if err := e.Step(ev); err != nil {
			t.Fatal(err)
		}
	}
	tick := func() api.Plan {
		t.Helper()
		p, err := e.Tick()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	step(scheduler.NodeSet{Node: api.Node{Name: "n0", GPUs: 8}})
	step(scheduler.JobSubmitted{ID: "bad", Spec: api.JobSpec{MinWorkers: 8, MaxWorkers: 8}})
	tick()
	c.t = c.t.Add(time.Second)
	step(scheduler.JobSubmitted{ID: "good", Spec: api.JobSpec{MinWorkers: 4, MaxWorkers: 4}})
	const why = "no node of GPU type gpu offers example.com/fpga"
	step(scheduler.JobUnschedulable{ID: "bad", Reason: why})
	plan := tick()
	want := []string{"Halt bad unschedulable: " + why, "Start good"}
	var got []string
	for _, a := range plan.Actions {
		s := string(a.Kind) + " " + string(a.Job)
		if a.Kind == api.ActionHalt {
			s += " " + a.Reason
		}
		got = append(got, s)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("actions (-want +got):\n%s", d)
	}
	bad, _ := e.Job("bad")
	if bad.Phase != api.PhaseWaiting || bad.Message != "unschedulable: "+why {
		t.Errorf("bad is %s: %q", bad.Phase, bad.Message)
	}
	// The good job finishes; the held one stays out while the GPUs idle.
	step(scheduler.JobCompleted{ID: "good"})
	if plan := tick(); len(plan.Actions) != 0 {
		t.Errorf("a held job was scheduled: %+v", plan.Actions)
	}
	if bad, _ := e.Job("bad"); bad.Message != "unschedulable: "+why {
		t.Errorf("a round rewrote the held job's message: %q", bad.Message)
	}
	step(scheduler.JobUnschedulable{ID: "bad"})
	if plan := tick(); len(plan.Actions) != 1 || plan.Actions[0].Kind != api.ActionStart || plan.Actions[0].Job != "bad" {
		t.Errorf("released, bad was not started: %+v", plan.Actions)
	}
	if err := e.Step(scheduler.JobUnschedulable{ID: "nobody", Reason: why}); err == nil {
		t.Error("an unknown job was held without an error")
	}
}

// HeSRPT's aging acts on time: with nothing else happening, a waiting job
// whose weight grows past a running one's takes its GPUs within a tenth of
// Aging of the moment it does, the engine waking by Due alone.
func TestHeSRPTAgingActsWithoutOtherEvents(t *testing.T) {
	c := &fakeClock{t: t0}
	cfg := scheduler.DefaultConfig("gpu", c)
	cfg.Policy = algorithm.NameHeSRPT
	cfg.Algorithm.HeSRPT.Aging = 3600
	e, err := scheduler.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range []scheduler.Event{
		scheduler.NodeSet{Node: api.Node{Name: "n0", GPUs: 4}},
		scheduler.JobSubmitted{ID: "short", Spec: api.JobSpec{MinWorkers: 4, MaxWorkers: 4}, Remaining: 3600},
		scheduler.JobSubmitted{ID: "long", Spec: api.JobSpec{MinWorkers: 4, MaxWorkers: 4}, Remaining: 3600 * 1000},
	} {
		if err := e.Step(ev); err != nil {
			t.Fatal(err)
		}
	}
	// 1000^0.3 = 7.94 times lighter; the short job counts 1.2 times and
	// its restart 60 s over its 900 s at 4 workers: the long one must weigh
	// 10.06 times its own at arrival, after 9.06 hours of waiting.
	const crossing = 9.06 * 3600 * time.Second
	for rounds := 0; ; rounds++ {
		at, ok := e.Due()
		if !ok {
			t.Fatalf("after %d rounds, at +%s, nothing is due while long waits", rounds, c.t.Sub(t0))
		}
		c.t = at
		if _, err := e.Tick(); err != nil {
			t.Fatal(err)
		}
		if j, _ := e.Job("long"); j.Workers > 0 {
			if got := c.t.Sub(t0); got < crossing || got > crossing+6*time.Minute {
				t.Errorf("long started at +%s, want within 6 minutes after +%s", got, crossing.Round(time.Second))
			}
			return
		}
		if c.t.Sub(t0) > 20*time.Hour {
			t.Fatalf("long still waits at +%s", c.t.Sub(t0))
		}
	}
}
