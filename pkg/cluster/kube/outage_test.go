package kube_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vodascheduler/voda/internal/testenv"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
)

// running is what a running job looked like before an outage: its MPIJob
// and its worker pods, which must all be the same after it.
type running struct {
	name   string
	mpiJob types.UID
	pods   []types.UID
}

func (k *cluster) snapshotRunning(t *testing.T, ns string, names ...string) []running {
	t.Helper()
	var out []running
	for _, n := range names {
		out = append(out, running{name: n, mpiJob: k.mpiJob(t, ns, n).GetUID(), pods: podUIDs(t, k, ns, n)})
	}
	return out
}

// expectUntouched checks that jobs that ran before an outage still run,
// with the same MPIJob and the same worker pods (nothing restarted), and
// were started exactly once.
func (k *cluster) expectUntouched(t *testing.T, ns string, before []running) {
	t.Helper()
	for _, r := range before {
		j := k.job(t, ns, r.name)
		if j.Status.Phase != v1alpha1.PhaseRunning {
			t.Errorf("%s is %s after the outage, want Running", r.name, j.Status.Phase)
		}
		if uid := k.mpiJob(t, ns, r.name).GetUID(); uid != r.mpiJob {
			t.Errorf("%s's MPIJob was replaced during the outage", r.name)
		}
		pods := podUIDs(t, k, ns, r.name)
		slices.Sort(pods)
		want := slices.Clone(r.pods)
		slices.Sort(want)
		if !slices.Equal(pods, want) {
			t.Errorf("%s's worker pods changed during the outage: %v, were %v", r.name, pods, want)
		}
		if j.Status.Restarts != 0 || j.Status.Preemptions != 0 {
			t.Errorf("%s restarted %d times, preempted %d", r.name, j.Status.Restarts, j.Status.Preemptions)
		}
		k.expectEvents(t, ns, r.name, map[string]int{"Started:": 1})
	}
}

// testAPIServerOutage stops kube-apiserver for 60 s while two jobs run and
// two more have just been submitted: afterwards the running ones were not
// touched, the new ones start, each exactly once, and the controller acts
// within seconds of the API server's return.
func testAPIServerOutage(t *testing.T, k *cluster) {
	const ns, gpu = "outage", "outage-gpu"
	k.scenario(t, ns, gpu, 2, 4)
	k.startController(t, controllerOpts(t, gpu))
	k.create(t, newJob(ns, "r1", gpu, 2, 2), newJob(ns, "r2", gpu, 2, 2))
	k.waitSettled(t, ns, "r1", 2)
	k.waitSettled(t, ns, "r2", 2)
	before := k.snapshotRunning(t, ns, "r1", "r2")

	// Two jobs arrive just before the API server goes.
	k.create(t, newJob(ns, "a1", gpu, 2, 2), newJob(ns, "a2", gpu, 1, 1))
	ctx := context.Background()
	stopped := time.Now()
	if err := k.env.Outage(ctx, "kube-apiserver", 60*time.Second); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	defer k.dumpPods(t, ns)
	err := testenv.PollUntil(ctx, 3*time.Minute, "Voda placing a1 and a2", func(ctx context.Context) (bool, error) {
		return len(k.job(t, ns, "a1").Status.Placement) == 2 && len(k.job(t, ns, "a2").Status.Placement) == 1, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	placed := time.Since(back)
	// The operators' own recovery (mpi-operator waits out its old lease,
	// kwok's nodes are unreachable until their next heartbeat) took 55-85 s
	// here: give it room.
	k.waitSettledWithin(t, ns, "a1", 2, 4*time.Minute)
	k.waitSettledWithin(t, ns, "a2", 1, 4*time.Minute)
	t.Logf("Voda placed a1 and a2 %s after kube-apiserver was ready", placed.Round(time.Millisecond))
	t.Logf("kube-apiserver down from +0 to +%s (ready); the jobs submitted before it went were running %s after it was ready",
		back.Sub(stopped).Round(time.Millisecond), time.Since(back).Round(time.Millisecond))
	k.expectUntouched(t, ns, before)
	for _, n := range []string{"a1", "a2"} {
		k.expectEvents(t, ns, n, map[string]int{"Started:": 1})
	}
}

// testEtcdRestart restarts etcd (down 10 s) under running jobs and one
// just submitted: the same checks as for the API server.
func testEtcdRestart(t *testing.T, k *cluster) {
	const ns, gpu = "etcd-restart", "etcd-gpu"
	k.scenario(t, ns, gpu, 1, 4)
	k.startController(t, controllerOpts(t, gpu))
	k.create(t, newJob(ns, "r1", gpu, 2, 2))
	k.waitSettled(t, ns, "r1", 2)
	before := k.snapshotRunning(t, ns, "r1")
	k.create(t, newJob(ns, "a1", gpu, 2, 2))
	stopped := time.Now()
	if err := k.env.Outage(context.Background(), "etcd", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	defer k.dumpPods(t, ns)
	k.waitSettledWithin(t, ns, "a1", 2, 4*time.Minute)
	t.Logf("etcd down from +0 to +%s (API server ready again); the job submitted before was running %s later",
		back.Sub(stopped).Round(time.Millisecond), time.Since(back).Round(time.Millisecond))
	k.expectUntouched(t, ns, before)
	k.expectEvents(t, ns, "a1", map[string]int{"Started:": 1})
}

// testNodeDeleted deletes a GPU node outright (the Node object, as a
// cloud provider does when it reclaims a machine) under a running job:
// the job is preempted, not left Running on a node that is gone (the job
// on the other node comes first in FIFO order, so it keeps its node and is
// not touched); when a new node joins, the job runs again, on it.
func testNodeDeleted(t *testing.T, k *cluster) {
	const ns, gpu = "node-deleted", "del-gpu"
	k.scenario(t, ns, gpu, 2, 2)
	k.startController(t, controllerOpts(t, gpu))
	defer k.dumpPods(t, ns)
	k.create(t, newJob(ns, "j1", gpu, 2, 2))
	k.waitSettled(t, ns, "j1", 2)
	k.create(t, newJob(ns, "j2", gpu, 2, 2))
	j2 := k.waitSettled(t, ns, "j2", 2)
	before := k.snapshotRunning(t, ns, "j1")
	victim := j2.Status.Placement[0]
	ctx := context.Background()
	deleted := time.Now()
	if err := k.c.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: victim}}); err != nil {
		t.Fatal(err)
	}
	k.waitPhase(t, ns, "j2", v1alpha1.PhaseWaiting)
	t.Logf("node %s deleted; j2 Waiting (preempted) %s later", victim, time.Since(deleted).Round(time.Millisecond))
	k.expectUntouched(t, ns, before)

	added := time.Now()
	if err := k.env.CreateGPUNode(ctx, gpu+"-new", testenv.NodeSpec{GPUType: gpu, GPUs: 2}); err != nil {
		t.Fatal(err)
	}
	j2 = k.waitSettled(t, ns, "j2", 2)
	t.Logf("node %s-new added; j2 running on it %s later", gpu, time.Since(added).Round(time.Millisecond))
	if j2.Status.Placement[0] != gpu+"-new" {
		t.Errorf("j2 runs on %v, want %s-new", j2.Status.Placement, gpu)
	}
	k.expectEvents(t, ns, "j2", map[string]int{"Started:": 1, "Preempted:": 1, "Resumed:": 1})
}

// waitSettledWithin is waitSettled with its own timeout.
func (k *cluster) waitSettledWithin(t *testing.T, ns, name string, n int32, timeout time.Duration) {
	t.Helper()
	err := testenv.PollUntil(context.Background(), timeout, name+" settled", func(ctx context.Context) (bool, error) {
		return k.settled(ctx, ns, name, n)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// dumpPods logs the namespace's pods, for a failed test.
func (k *cluster) dumpPods(t *testing.T, ns string) {
	if !t.Failed() {
		return
	}
	out, err := k.env.Kubectl(context.Background(), nil, "get", "pods,mpijobs", "-n", ns, "-o", "wide")
	t.Logf("pods of %s (%v):\n%s", ns, err, out)
	out, _ = k.env.Kubectl(context.Background(), nil, "get", "pods", "-n", ns, "-o", "jsonpath={range .items[*]}{.metadata.name} gates={.spec.schedulingGates} node={.spec.nodeName} sel={.spec.nodeSelector} phase={.status.phase} {.status.conditions}{\"\\n\"}{end}")
	t.Logf("%s", out)
}
