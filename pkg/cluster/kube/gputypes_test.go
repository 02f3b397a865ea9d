package kube_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vodascheduler/voda/internal/testenv"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/metrics"
)

// multiType makes a job accept several GPU types, with speeds.
func multiType(types []string, speeds map[string]string) jobOpt {
	return func(tj *v1alpha1.TrainingJob) {
		tj.Spec.GPUType, tj.Spec.GPUTypes = "", types
		for t, s := range speeds {
			if tj.Spec.GPUTypeSpeeds == nil {
				tj.Spec.GPUTypeSpeeds = map[string]resource.Quantity{}
			}
			tj.Spec.GPUTypeSpeeds[t] = resource.MustParse(s)
		}
	}
}

// podsOnOneType checks that a job's pods all sit on nodes of the type its
// status names (or that it has none).
func (k *cluster) podsOnOneType(ctx context.Context, ns, name string) error {
	tj := &v1alpha1.TrainingJob{}
	if err := k.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, tj); err != nil {
		return err
	}
	pods, err := k.workers(ctx, ns, name)
	if err != nil {
		return err
	}
	for _, p := range pods {
		if p.Spec.NodeName == "" {
			continue
		}
		var n corev1.Node
		if err := k.c.Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, &n); err != nil {
			return err
		}
		if got := n.Labels[v1alpha1.AcceleratorLabel]; got != tj.Status.GPUType {
			return fmt.Errorf("%s's pod %s is on %s, a %s node, but the job is on %q", name, p.Name, n.Name, got, tj.Status.GPUType)
		}
	}
	return nil
}

// testGPUTypes runs jobs that accept two GPU types: a new one starts on the
// type with room; a waiting one moves to the other type when that frees,
// with an Event saying why and the move counted; no job ever has pods on
// two types; after a leader failover every job keeps its type and the new
// leader places new jobs.
func testGPUTypes(t *testing.T, k *cluster) {
	const ns, fast, slow = "gputypes", "gt-fast", "gt-slow"
	k.scenario(t, ns, fast, 1, 4)
	if _, err := k.env.CreateGPUNodes(context.Background(), testenv.NodeSpec{GPUType: slow, Count: 1, GPUs: 4}); err != nil {
		t.Fatal(err)
	}
	o := controllerOpts(t, fast, slow)
	o.Namespace = ns
	// With leader election: at the end a standby takes over.
	o.LeaderElect, o.LeaderElectionNamespace, o.LeaderElectionID = true, ns, "voda-gputypes"
	o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 4*time.Second, 3*time.Second, 500*time.Millisecond
	o.TypeChoiceEvery, o.TypeChoiceDwell = 500*time.Millisecond, time.Second
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, "test")
	if err != nil {
		t.Fatal(err)
	}
	o.Metrics = m
	_, stop := k.startController(t, o)
	ctx := context.Background()

	// A one-type job fills the fast node.
	k.create(t, newJob(ns, "hog", fast, 4, 4))
	k.waitSettled(t, ns, "hog", 4)
	// A job of both types, faster on "fast": that is full, so it starts
	// on the slow node.
	both := []string{fast, slow}
	k.create(t, newJob(ns, "flex", "", 4, 4, multiType(both, map[string]string{fast: "1.2", slow: "1"})))
	k.waitSettled(t, ns, "flex", 4)
	if tj := k.job(t, ns, "flex"); tj.Status.GPUType != slow || tj.Status.GPUTypeTime == nil {
		t.Fatalf("flex is on %q, want %s", tj.Status.GPUType, slow)
	}
	k.expectEvents(t, ns, "flex", map[string]int{"GPUTypeChosen: GPU type " + slow + " chosen among [" + fast + " " + slow + "]": 1, "Started:": 1})
	// A third job of both types waits: both are full. Its type is the
	// first with the earliest estimate.
	k.create(t, newJob(ns, "queued", "", 4, 4, multiType([]string{slow, fast}, nil)))
	tj := k.waitPhase(t, ns, "queued", v1alpha1.PhaseWaiting)
	first := tj.Status.GPUType
	if first == "" {
		t.Fatal("queued has no GPU type")
	}
	// The other type frees: the waiting job moves there and runs.
	other := fast
	if first == fast {
		other = slow
	}
	owner := map[string]string{fast: "hog", slow: "flex"}
	if err := k.c.Delete(ctx, k.job(t, ns, owner[other])); err != nil {
		t.Fatal(err)
	}
	k.waitSettled(t, ns, "queued", 4)
	if tj := k.job(t, ns, "queued"); tj.Status.GPUType != other || tj.Status.GPUTypeMoves != 1 {
		t.Fatalf("queued runs on %q after %d moves, want %s after 1 (it waited on %s)", tj.Status.GPUType, tj.Status.GPUTypeMoves, other, first)
	}
	ev := strings.Join(k.events(t, ns, "queued"), "\n")
	if !strings.Contains(ev, "GPUTypeMoved: Moved from GPU type "+first+" to "+other+" while waiting: moved from "+first+" to "+other+": estimated done in") {
		t.Errorf("no move Event naming the reason:\n%s", ev)
	}
	moved := 0.0
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "voda_scheduler_gpu_type_moves_total" {
			continue
		}
		for _, s := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range s.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if l["from"] == first && l["to"] == other {
				moved += s.GetCounter().GetValue()
			}
		}
	}
	if moved != 1 {
		t.Errorf("voda_scheduler_gpu_type_moves_total{from=%s,to=%s} is %v, want 1", first, other, moved)
	}
	for _, name := range []string{"queued", "flex", "hog"} {
		if err := k.podsOnOneType(ctx, ns, name); err != nil && !strings.Contains(err.Error(), "not found") {
			t.Error(err)
		}
	}

	// The leader is killed and a standby takes over: it rebuilds its
	// engines from the statuses (as a restarted controller does), so the
	// running job stays on its type with the same pods, and it chooses the
	// types of new jobs.
	before := k.job(t, ns, "queued")
	pods, err := k.workers(ctx, ns, "queued")
	if err != nil {
		t.Fatal(err)
	}
	_, stop2 := k.startController(t, o)
	defer stop2()
	time.Sleep(time.Second)
	stop()
	if err := k.c.Delete(ctx, k.job(t, ns, owner[first])); err != nil {
		t.Fatal(err)
	}
	k.create(t, newJob(ns, "late", "", 4, 4, multiType(both, nil)))
	late := k.waitSettled(t, ns, "late", 4)
	if late.Status.GPUType != first {
		t.Errorf("late runs on %q, want the free type %s", late.Status.GPUType, first)
	}
	after := k.waitSettled(t, ns, "queued", 4)
	if after.Status.GPUType != before.Status.GPUType || after.Status.Restarts != before.Status.Restarts {
		t.Errorf("after a restart: on %q with %d restarts, before on %q with %d", after.Status.GPUType, after.Status.Restarts, before.Status.GPUType, before.Status.Restarts)
	}
	again, err := k.workers(ctx, ns, "queued")
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range pods {
		if again[i].UID != p.UID {
			t.Errorf("worker %d was replaced across the restart", i)
		}
	}
	for _, name := range []string{"queued", "late"} {
		if err := k.podsOnOneType(ctx, ns, name); err != nil {
			t.Error(err)
		}
	}
	// And a controller restarted with no standby (after the lease expires)
	// keeps them too.
	want := map[string]string{}
	uids := map[string][]types.UID{}
	for _, name := range []string{"queued", "late"} {
		want[name], uids[name] = k.job(t, ns, name).Status.GPUType, podUIDs(t, k, ns, name)
	}
	stop2()
	_, stop3 := k.startController(t, o)
	defer stop3()
	// The lease lapses (4 s), the new controller restores and reschedules.
	time.Sleep(8 * time.Second)
	for _, name := range []string{"queued", "late"} {
		got := k.waitSettled(t, ns, name, 4)
		if got.Status.GPUType != want[name] || !slices.Equal(podUIDs(t, k, ns, name), uids[name]) {
			t.Errorf("%s after a restart: on %q (was %q), pods kept %v", name, got.Status.GPUType, want[name], slices.Equal(podUIDs(t, k, ns, name), uids[name]))
		}
	}
}
