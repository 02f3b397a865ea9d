package scheduler_test

import (
	"testing"
	"time"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/scheduler"
)

// A job whose curve was learnt flat past 2 GPUs runs on 2 of 8 GPUs. A new
// curve that says it scales asks for a rescheduling once the policy has
// not run for IdleReplan, and the job grows into the idle GPUs; before
// that, or without a new curve, nothing is rescheduled.
func TestNewCurveReschedulesWhileGPUsIdle(t *testing.T) {
	c := &fakeClock{t: t0}
	cfg := scheduler.DefaultConfig("gpu", c)
	cfg.Policy = algorithm.NameHeSRPT
	e, err := scheduler.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Step(scheduler.NodeSet{Node: api.Node{Name: "n0", GPUs: 8}}); err != nil {
		t.Fatal(err)
	}
	flat := func(n int) float64 { return float64(min(n, 2)) }
	linear := func(n int) float64 { return float64(n) }
	spec := api.JobSpec{MinWorkers: 1, MaxWorkers: 8, RequestedWorkers: 1}
	if err := e.Step(scheduler.JobSubmitted{ID: "a", Spec: spec, Remaining: 1e6, Speedup: flat}); err != nil {
		t.Fatal(err)
	}
	workers := func() int {
		j, _ := e.Job("a")
		return j.Workers
	}
	if _, err := e.Tick(); err != nil || workers() != 2 {
		t.Fatalf("first round: %d workers (%v), want 2 on the flat curve", workers(), err)
	}
	progress := func(after time.Duration, curve algorithm.Speedup) api.Plan {
		t.Helper()
		c.t = t0.Add(after)
		if err := e.Step(scheduler.Progress{ID: "a", Remaining: 1e6, Speedup: curve}); err != nil {
			t.Fatal(err)
		}
		plan, err := e.Tick()
		if err != nil {
			t.Fatal(err)
		}
		return plan
	}
	if plan := progress(scheduler.IdleReplan/2, linear); plan.Rescheduled || workers() != 2 {
		t.Fatalf("rescheduled %v after the policy ran: %+v", scheduler.IdleReplan/2, plan)
	}
	if plan := progress(scheduler.IdleReplan, nil); plan.Rescheduled || workers() != 2 {
		t.Fatalf("rescheduled without a new curve: %+v", plan)
	}
	if progress(scheduler.IdleReplan, linear); workers() != 8 {
		t.Fatalf("after %v idle with a curve that scales: %d workers, want 8", scheduler.IdleReplan, workers())
	}
}
