package kube

import (
	"testing"

	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/scheduler"
)

// TestEventWorkersReadsDescribe checks that the dashboard reads back the
// size every action's Event states, as describe words it.
func TestEventWorkersReadsDescribe(t *testing.T) {
	nodes := []api.NodeName{"n1", "n1", "n2"}
	cases := []struct {
		a       api.Action
		j       scheduler.Job
		workers int
		sized   bool
	}{
		{api.Action{Kind: api.ActionStart, To: 3, Nodes: nodes, Reason: "fifo: running: 3 GPUs"}, scheduler.Job{}, 3, true},
		{api.Action{Kind: api.ActionStart, To: 12, Nodes: nodes}, scheduler.Job{Preemptions: 2}, 12, true},
		{api.Action{Kind: api.ActionScaleOut, From: 2, To: 3, Nodes: nodes, Reason: "x with 9 workers"}, scheduler.Job{}, 3, true},
		{api.Action{Kind: api.ActionScaleIn, From: 10, To: 1, Nodes: nodes[:1]}, scheduler.Job{}, 1, true},
		{api.Action{Kind: api.ActionHalt, From: 4, Reason: "preempted by srjf: waiting: 4 GPUs needed, 2 free"}, scheduler.Job{}, 0, true},
		{api.Action{Kind: api.ActionMigrate, Moves: []api.WorkerMove{{Index: 0, From: "a", To: "b"}}}, scheduler.Job{}, 0, false},
	}
	for _, c := range cases {
		reason, msg := describe(c.a, c.j)
		n, ok := EventWorkers(reason, msg)
		if ok != c.sized || n != c.workers {
			t.Errorf("%s %q: read %d workers (sized %v), want %d (%v)", reason, msg, n, ok, c.workers, c.sized)
		}
	}
	for _, bad := range [][2]string{{"Started", "Started on n1"}, {"Scaled", "Scaled up"}, {"Submitted", "Queued"}} {
		if n, ok := EventWorkers(bad[0], bad[1]); ok {
			t.Errorf("%q %q read as %d workers", bad[0], bad[1], n)
		}
	}
}
