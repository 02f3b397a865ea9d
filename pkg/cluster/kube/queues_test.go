package kube_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vodascheduler/voda/internal/testenv"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/cluster/kube"
)

func clusterQueue(name, cohort, gpuType string, nominal int32) *v1alpha1.ClusterQueue {
	return &v1alpha1.ClusterQueue{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.ClusterQueueSpec{Cohort: cohort,
			Quotas: []v1alpha1.GPUQuota{{GPUType: gpuType, NominalQuota: nominal}}},
	}
}

func localQueue(ns, name, cq string) *v1alpha1.LocalQueue {
	return &v1alpha1.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.LocalQueueSpec{ClusterQueue: cq}}
}

func inQueue(name string) jobOpt {
	return func(tj *v1alpha1.TrainingJob) { tj.Spec.QueueName = name }
}

// testQueues: two teams in two namespaces, quotas of 8 + 8 GPUs in one
// cohort on 16 GPUs. Team A's elastic jobs (an MPIJob and a PyTorchJob)
// borrow team B's idle quota; team B submits a job of 2-GPU workers; the
// controller is killed in the middle of the reclaim and a new one takes
// over; team A's jobs shrink (scale-ins, no restart from scratch) and team
// B's job runs on its 8 GPUs. No node is ever over-committed, nothing is
// lost or duplicated, the queues' status says who borrows, and a job
// naming a LocalQueue that does not exist waits and says so.
func testQueues(t *testing.T, k *cluster) {
	const gpu = "queue-gpu"
	ctx := context.Background()
	nodes := k.scenario(t, "team-a", gpu, 4, 4)
	if err := k.env.CreateNamespace(ctx, "team-b"); err != nil {
		t.Fatal(err)
	}
	k.watchOvercommit(t, nodes)
	a, b := clusterQueue("team-a", "research", gpu, 8), clusterQueue("team-b", "research", gpu, 8)
	k.create(t, a, b, localQueue("team-a", v1alpha1.DefaultLocalQueue, "team-a"), localQueue("team-b", "gpu", "team-b"))
	// The queues are cluster-wide: the scenarios after this one run
	// without them.
	t.Cleanup(func() {
		for _, cq := range []client.Object{a, b} {
			_ = k.c.Delete(ctx, cq)
		}
	})
	// The API server refuses limits without a cohort and a lending limit
	// above the quota, naming what to change.
	two := int32(2)
	for want, bad := range map[string]*v1alpha1.ClusterQueue{
		"need spec.cohort": {ObjectMeta: metav1.ObjectMeta{Name: "no-cohort"},
			Spec: v1alpha1.ClusterQueueSpec{Quotas: []v1alpha1.GPUQuota{{GPUType: gpu, NominalQuota: 4, BorrowingLimit: &two}}}},
		"lendingLimit must not exceed nominalQuota": {ObjectMeta: metav1.ObjectMeta{Name: "lends-more"},
			Spec: v1alpha1.ClusterQueueSpec{Cohort: "research", Quotas: []v1alpha1.GPUQuota{{GPUType: gpu, NominalQuota: 1, LendingLimit: &two}}}},
	} {
		if err := k.c.Create(ctx, bad); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ClusterQueue %s: %v, want refused saying %q", bad.Name, err, want)
		}
	}
	o := controllerOpts(t, gpu)
	_, stop := k.startController(t, o)

	// Team A alone: its two jobs take all 16 GPUs, 8 of them borrowed.
	k.create(t, newJob("team-a", "a-mpi", gpu, 1, 8), newPyTorchJob("team-a", "a-pt", gpu, 1, 8, 1))
	waitFor(t, "team A on 16 GPUs", func(ctx context.Context) (bool, error) {
		mpi, err1 := k.settled(ctx, "team-a", "a-mpi", 8)
		pt, err2 := k.ptSettled(ctx, "team-a", "a-pt", 8)
		return mpi && pt, joinErrs(err1, err2)
	})
	waitFor(t, "team-a's status shows 8 GPUs borrowed", func(ctx context.Context) (bool, error) {
		return queueStatus(ctx, k, "team-a", func(s v1alpha1.ClusterQueueStatus) bool { return s.Used == 16 && s.Borrowed == 8 && s.Nominal == 8 })
	})
	before := map[string]*v1alpha1.TrainingJob{"a-mpi": k.job(t, "team-a", "a-mpi"), "a-pt": k.job(t, "team-a", "a-pt")}

	// Team B submits; the controller dies as it starts taking GPUs back.
	k.create(t, newPyTorchJob("team-b", "b-pt", gpu, 1, 4, 2, inQueue("gpu")))
	waitFor(t, "the reclaim begins", func(ctx context.Context) (bool, error) {
		tj := &v1alpha1.TrainingJob{}
		if err := k.c.Get(ctx, types.NamespacedName{Namespace: "team-a", Name: "a-mpi"}, tj); err != nil {
			return false, err
		}
		return tj.Status.Workers < 8 || k.job(t, "team-a", "a-pt").Status.Workers < 8, nil
	})
	stop()
	k.startController(t, o)
	waitFor(t, "team B on its 8 GPUs, team A on its 8", func(ctx context.Context) (bool, error) {
		pt, err := k.ptSettled(ctx, "team-b", "b-pt", 4)
		if !pt {
			return false, err
		}
		total := int32(0)
		for _, name := range []string{"a-mpi", "a-pt"} {
			tj := k.job(t, "team-a", name)
			if tj.Status.Phase != v1alpha1.PhaseRunning {
				return false, fmt.Errorf("%s is %s: %s", name, tj.Status.Phase, tj.Status.Message)
			}
			total += tj.Status.Workers
		}
		if total != 8 {
			return false, fmt.Errorf("team A holds %d GPUs, want 8", total)
		}
		mpi, err1 := k.settled(ctx, "team-a", "a-mpi", 0)
		apt, err2 := k.ptSettled(ctx, "team-a", "a-pt", 0)
		return mpi && apt, joinErrs(err1, err2)
	})
	for name, old := range before {
		tj := k.job(t, "team-a", name)
		s := tj.Status
		// Shrunk, never stopped. (Placement may then gather the shrunk
		// job's workers on fewer nodes, a migration of every worker that
		// counts as a restart; being stopped would count a preemption.)
		if s.Preemptions != old.Status.Preemptions || s.Rescales <= old.Status.Rescales {
			t.Errorf("%s: %d preemptions, %d restarts, %d rescales (before: %d, %d, %d), want it shrunk, not stopped",
				name, s.Preemptions, s.Restarts, s.Rescales, old.Status.Preemptions, old.Status.Restarts, old.Status.Rescales)
		}
		if s.ClusterQueue != "team-a" {
			t.Errorf("%s: status.clusterQueue %q, want team-a", name, s.ClusterQueue)
		}
	}
	// One child per job: nothing duplicated by the controller's death.
	if n := len(k.pytorchJobs(t, "team-b")); n != 1 {
		t.Errorf("team-b has %d PyTorchJobs, want 1", n)
	}
	waitFor(t, "the queues' status after the reclaim", func(ctx context.Context) (bool, error) {
		okA, err := queueStatus(ctx, k, "team-a", func(s v1alpha1.ClusterQueueStatus) bool { return s.Used == 8 && s.Borrowed == 0 })
		if !okA {
			return false, err
		}
		return queueStatus(ctx, k, "team-b", func(s v1alpha1.ClusterQueueStatus) bool { return s.Used == 8 && s.RunningJobs == 1 })
	})

	// A job naming a LocalQueue that does not exist waits and says why.
	k.create(t, newJob("team-b", "lost", gpu, 1, 1, inQueue("nope")))
	waitFor(t, "the lost job says why it waits", func(ctx context.Context) (bool, error) {
		tj := k.job(t, "team-b", "lost")
		if tj.Status.Phase == v1alpha1.PhaseWaiting && strings.Contains(tj.Status.Message, "LocalQueue nope does not exist in namespace team-b") {
			return true, nil
		}
		return false, fmt.Errorf("%s: %s", tj.Status.Phase, tj.Status.Message)
	})
	// Deleting team B's ClusterQueue keeps its running job at its size.
	if err := k.c.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "b-pt says its queue is gone and keeps its GPUs", func(ctx context.Context) (bool, error) {
		tj := k.job(t, "team-b", "b-pt")
		if tj.Status.Workers == 4 && strings.Contains(tj.Status.Message, "ClusterQueue team-b, which does not exist") {
			return true, nil
		}
		return false, fmt.Errorf("%d workers: %s", tj.Status.Workers, tj.Status.Message)
	})
}

// waitFor polls cond for up to two minutes.
func waitFor(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := testenv.PollUntil(context.Background(), 120*time.Second, what, cond); err != nil {
		t.Fatal(err)
	}
}

func joinErrs(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// queueStatus reports whether a ClusterQueue's status satisfies ok.
func queueStatus(ctx context.Context, k *cluster, name string, ok func(v1alpha1.ClusterQueueStatus) bool) (bool, error) {
	var cq v1alpha1.ClusterQueue
	if err := k.c.Get(ctx, types.NamespacedName{Name: name}, &cq); err != nil {
		return false, err
	}
	if ok(cq.Status) {
		return true, nil
	}
	return false, fmt.Errorf("ClusterQueue %s status %+v", name, cq.Status)
}

// pytorchJobs lists a namespace's PyTorchJobs.
func (k *cluster) pytorchJobs(t *testing.T, ns string) []string {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(kube.PyTorchJobGVK.GroupVersion().WithKind("PyTorchJobList"))
	if err := k.c.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, u := range list.Items {
		names = append(names, u.GetName())
	}
	return names
}
