package scheduler_test

import (
	"strings"
	"testing"
	"time"

	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/scheduler"
)

// A stalled gang gives its GPUs back, waits as a preempted job, and is
// started again at the next rescheduling; jobs that are not running are
// left alone.
func TestJobStalledRequeues(t *testing.T) {
	c := &fakeClock{t: t0}
	cfg := scheduler.DefaultConfig("gpu", c)
	cfg.RateLimit = 0
	e, err := scheduler.New(cfg)
	must(t, err)
	must(t, e.Step(scheduler.NodeSet{Node: api.Node{Name: "n1", GPUs: 4}}))
	must(t, e.Step(job("a", 2, 2)))
	if p, err := e.Tick(); err != nil || len(p.Actions) != 1 || p.Actions[0].Kind != api.ActionStart {
		t.Fatalf("first round: %v %v", p.Actions, err)
	}
	c.t = c.t.Add(5 * time.Minute)
	must(t, e.Step(scheduler.JobStalled{ID: "a", Reason: "1 of 2 workers not running after 5m0s"}))
	j, _ := e.Job("a")
	if j.Phase != api.PhaseWaiting || j.Workers != 0 || j.Nodes != nil || j.Preemptions != 1 ||
		!strings.Contains(j.Message, "requeued: 1 of 2 workers") || j.LastRunSeconds != 300 {
		t.Fatalf("after the stall: %+v", j)
	}
	p, err := e.Tick()
	if err != nil || len(p.Actions) != 1 || p.Actions[0].Kind != api.ActionStart || p.Actions[0].To != 2 {
		t.Fatalf("the next round does not start it again: %v %v", p.Actions, err)
	}
	if j, _ := e.Job("a"); j.Restarts != 1 {
		t.Errorf("restarts %d, want 1", j.Restarts)
	}
	// Waiting, unknown: nothing to do, or an error naming the job.
	must(t, e.Step(job("b", 8, 8)))
	must(t, e.Step(scheduler.JobStalled{ID: "b"}))
	if j, _ := e.Job("b"); j.Preemptions != 0 {
		t.Errorf("a waiting job was counted as preempted")
	}
	if err := e.Step(scheduler.JobStalled{ID: "nope"}); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("unknown job: %v", err)
	}
}
