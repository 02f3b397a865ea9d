package kube

import (
	"testing"
	"time"

	"github.com/vodascheduler/voda/pkg/api"
)

// The script is mpi-operator's, byte for byte: workers sorted by pod name
// (worker-10 before worker-2), behind the job's Service, after a shebang.
func TestDiscoverHostsAsMPIOperatorWritesIt(t *testing.T) {
	want := "#!/bin/sh\n" +
		"echo j-worker-0.j.ns.svc\n" +
		"echo j-worker-1.j.ns.svc\n" +
		"echo j-worker-10.j.ns.svc\n" +
		"echo j-worker-11.j.ns.svc\n" +
		"echo j-worker-2.j.ns.svc\n" +
		"echo j-worker-3.j.ns.svc\n" +
		"echo j-worker-4.j.ns.svc\n" +
		"echo j-worker-5.j.ns.svc\n" +
		"echo j-worker-6.j.ns.svc\n" +
		"echo j-worker-7.j.ns.svc\n" +
		"echo j-worker-8.j.ns.svc\n" +
		"echo j-worker-9.j.ns.svc\n"
	if got := discoverHosts("j", "ns", 12); got != want {
		t.Errorf("discoverHosts(j, ns, 12) =\n%s\nwant\n%s", got, want)
	}
	if got := discoverHosts("j", "ns", 0); got != "#!/bin/sh\n" {
		t.Errorf("no workers: %q", got)
	}
}

// A child the controller suspended to restart a job whole counts as
// suspended until the cache shows it so, for surplusGrace at most; and
// the controller waits to resume an MPIJob until mpi-operator has
// recorded its suspension, for surplusGrace at most.
func TestOwnWritesNotYetSeen(t *testing.T) {
	c := &Controller{suspendedAt: map[api.JobID]time.Time{}, unrecordedSince: map[api.JobID]time.Time{}}
	const id = api.JobID("ns/j")
	if c.suspendUnseen(id, childState{}) {
		t.Error("a child never suspended by the controller counts as suspended")
	}
	c.suspendedAt[id] = time.Now()
	if !c.suspendUnseen(id, childState{}) {
		t.Error("a suspension just written and not yet read does not count")
	}
	if c.suspendUnseen(id, childState{suspended: true}) || c.suspendUnseen(id, childState{}) {
		t.Error("once read suspended, the note should go")
	}
	c.suspendedAt[id] = time.Now().Add(-surplusGrace - time.Second)
	if c.suspendUnseen(id, childState{}) {
		t.Error("a suspension written long ago and never read still counts")
	}

	suspended := childState{suspended: true}
	if w := c.unrecorded(pytorchRuntime, id, suspended); w != 0 {
		t.Errorf("a PyTorchJob waits %v for its operator to record the suspension", w)
	}
	if w := c.unrecorded(mpiRuntime, id, childState{suspended: true, recorded: true}); w != 0 {
		t.Errorf("a recorded suspension waits %v", w)
	}
	if w := c.unrecorded(mpiRuntime, id, suspended); w <= 0 || w > surplusGrace {
		t.Errorf("an unrecorded suspension waits %v, want (0, %v]", w, surplusGrace)
	}
	c.unrecordedSince[id] = time.Now().Add(-surplusGrace - time.Second)
	if w := c.unrecorded(mpiRuntime, id, suspended); w != 0 {
		t.Errorf("unrecorded for longer than the grace, it still waits %v", w)
	}
}
