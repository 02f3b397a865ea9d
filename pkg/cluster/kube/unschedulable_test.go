package kube_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/vodascheduler/voda/internal/testenv"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
)

// A job no node of its type can run holds no GPU: one asking for a
// resource no node offers waits, held, from the start, while the next job
// takes every GPU; a running job whose nodes are all tainted against it
// gives its GPUs back at the next round, not after the gang timeout, to a
// job that tolerates the taint; and it is let go once the nodes could run
// it. (With only some nodes tainted it counts as schedulable, and the
// engine, which sees GPUs and not taints, may still place a worker on a
// tainted node: the gang timeout handles that.)
func testUnschedulable(t *testing.T, k *cluster) {
	const ns, gpu = "unsched", "unsched-gpu"
	nodes := k.scenario(t, ns, gpu, 2, 4)
	o := controllerOpts(t, gpu)
	o.GangTimeout = 10 * time.Minute // so only the new rule can free the GPUs in time
	k.startController(t, o)

	fpga := newJob(ns, "fpga", gpu, 8, 8)
	fpga.Spec.Template.MPIJob.Worker.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"example.com/fpga": resourceOf("1")}
	k.create(t, fpga)
	held := func(name, want string) {
		t.Helper()
		err := testenv.PollUntil(context.Background(), 60*time.Second, name+" held", func(ctx context.Context) (bool, error) {
			tj := k.job(t, ns, name)
			return tj.Status.Phase == v1alpha1.PhaseWaiting && tj.Status.Message == want, nil
		})
		if err != nil {
			tj := k.job(t, ns, name)
			t.Fatalf("%v: %s %q, want Waiting %q", err, tj.Status.Phase, tj.Status.Message, want)
		}
	}
	held("fpga", "unschedulable: no node of GPU type unsched-gpu can run a worker: 2 nodes offer no example.com/fpga")
	k.create(t, newJob(ns, "next", gpu, 4, 8))
	k.waitSettled(t, ns, "next", 8)
	k.expectEvents(t, ns, "fpga", map[string]int{"Unschedulable:": 1, "Started:": 0})

	// Every node reserved for team b: next's workers are evicted and can
	// go nowhere; a team-b job takes the GPUs.
	taint := corev1.Taint{Key: "team", Value: "b", Effect: corev1.TaintEffectNoExecute}
	setTaint := func(node string, on bool) {
		t.Helper()
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var n corev1.Node
			if err := k.c.Get(context.Background(), types.NamespacedName{Name: node}, &n); err != nil {
				return err
			}
			n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(x corev1.Taint) bool { return x.Key == taint.Key })
			if on {
				n.Spec.Taints = append(n.Spec.Taints, taint)
			}
			return k.c.Update(context.Background(), &n)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	teamB := newJob(ns, "team-b", gpu, 8, 8)
	teamB.Spec.Template.MPIJob.Worker.Spec.Tolerations = []corev1.Toleration{{Key: "team", Operator: corev1.TolerationOpEqual, Value: "b"}}
	teamB.Spec.Template.MPIJob.Launcher.Spec.Tolerations = teamB.Spec.Template.MPIJob.Worker.Spec.Tolerations
	start := time.Now()
	for _, n := range nodes {
		setTaint(n, true)
	}
	k.create(t, teamB)
	held("next", "unschedulable: no node of GPU type unsched-gpu can run a worker: 2 nodes have taint team=b:NoExecute, which the workers do not tolerate")
	k.waitSettled(t, ns, "team-b", 8)
	t.Logf("team-b ran on every GPU %s after the nodes were tainted", time.Since(start).Round(time.Second))
	k.expectEvents(t, ns, "next", map[string]int{"Started:": 1, "Unschedulable:": 1, "GangTimeout:": 0})
	if ev := k.events(t, ns, "next"); !slices.ContainsFunc(ev, func(e string) bool {
		return strings.HasPrefix(e, "Preempted:") && strings.Contains(e, "unschedulable: no node of GPU type")
	}) {
		t.Errorf("next's events %q: want its halt to say it is unschedulable", ev)
	}

	// The nodes open again: next may be scheduled again and, first in
	// line under ElasticFIFO, runs; fpga stays held, since no node offers
	// its resource.
	for _, n := range nodes {
		setTaint(n, false)
	}
	err := testenv.PollUntil(context.Background(), 90*time.Second, "next let go and running again", func(ctx context.Context) (bool, error) {
		tj := k.job(t, ns, "next")
		return tj.Status.Phase == v1alpha1.PhaseRunning && tj.Status.Workers >= 4, nil
	})
	if err != nil {
		tj := k.job(t, ns, "next")
		t.Fatalf("%v: next is %s (%s)\n%s", err, tj.Status.Phase, tj.Status.Message, k.explain(ns, "next"))
	}
	k.expectEvents(t, ns, "next", map[string]int{"Schedulable:": 1, "Unschedulable:": 1})
	if tj := k.job(t, ns, "fpga"); tj.Status.Phase != v1alpha1.PhaseWaiting || !strings.HasPrefix(tj.Status.Message, "unschedulable: ") {
		t.Errorf("fpga is %s %q; want it still held: no node offers its resource", tj.Status.Phase, tj.Status.Message)
	}
	k.expectEvents(t, ns, "fpga", map[string]int{"Unschedulable:": 1, "Started:": 0, "Schedulable:": 0})
}
