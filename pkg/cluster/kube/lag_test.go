package kube_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vodascheduler/voda/internal/testenv"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
)

// testMPIOperatorLag: mpi-operator falls behind a job (here it is frozen,
// as its backoff after a burst of events can hold it for minutes). It has
// left discover_hosts.sh listing fewer workers than run: the controller
// that sees the workers run writes the list elastic Horovod reads. A
// second job then makes the first shrink: the controller removes the
// workers mpi-operator leaves beyond the new count once they have stayed
// there surplusGrace (10 s), so the GPUs they held are free, and lists the
// remaining workers. Let go, mpi-operator finds the list current, leaves
// it, and starts the second job.
func testMPIOperatorLag(t *testing.T, k *cluster) {
	const ns, gpu = "oplag", "oplag-gpu"
	k.scenario(t, ns, gpu, 1, 4)
	o := controllerOpts(t, gpu)
	_, stop := k.startController(t, o)
	k.create(t, newJob(ns, "j1", gpu, 1, 4))
	before := k.waitSettled(t, ns, "j1", 4)
	stop()

	resume, err := k.env.Pause("mpi-operator")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resume() })
	ctx := context.Background()
	key := types.NamespacedName{Namespace: ns, Name: "j1-config"}
	hosts := func() string {
		t.Helper()
		var cm corev1.ConfigMap
		if err := k.c.Get(ctx, key, &cm); err != nil {
			t.Fatal(err)
		}
		return cm.Data["discover_hosts.sh"]
	}
	var cm corev1.ConfigMap
	if err := k.c.Get(ctx, key, &cm); err != nil {
		t.Fatal(err)
	}
	full := cm.Data["discover_hosts.sh"]
	if strings.Count(full, "echo ") != 4 {
		t.Fatalf("mpi-operator listed %q for 4 workers", full)
	}
	cm.Data["discover_hosts.sh"] = listing(ns, "j1", 2)
	if err := k.c.Update(ctx, &cm); err != nil {
		t.Fatal(err)
	}

	// A controller that sees j1's four workers run corrects the list while
	// mpi-operator does nothing.
	k.startController(t, o)
	after := k.waitSettled(t, ns, "j1", 4) // settled includes the list
	if s := after.Status; s.Restarts != before.Status.Restarts || s.Rescales != before.Status.Rescales {
		t.Errorf("j1 restarted or rescaled (%d, %d; before %d, %d): the list alone was behind",
			s.Restarts, s.Rescales, before.Status.Restarts, before.Status.Rescales)
	}
	if got := hosts(); got != full {
		t.Fatalf("discover_hosts.sh is %q, want %q as mpi-operator wrote it", got, full)
	}

	// j2 arrives: ElasticFIFO shares the node, two workers each.
	// mpi-operator, frozen, neither deletes j1's workers 2 and 3 nor
	// creates j2's: the controller deletes j1's two.
	shrunk := time.Now()
	k.create(t, newJob(ns, "j2", gpu, 1, 4))
	after = k.waitSettled(t, ns, "j1", 2)
	if took := time.Since(shrunk); took < 10*time.Second {
		t.Errorf("j1 settled at 2 workers %s after j2 arrived: its workers were removed before mpi-operator had its 10 s", took)
	}
	if s := after.Status; s.Rescales != before.Status.Rescales+1 || s.Preemptions != before.Status.Preemptions {
		t.Errorf("j1: %d rescales, %d preemptions (before %d, %d), want one scale-in", s.Rescales, s.Preemptions,
			before.Status.Rescales, before.Status.Preemptions)
	}
	if got, want := hosts(), listing(ns, "j1", 2); got != want {
		t.Errorf("after the scale-in discover_hosts.sh is %q, want %q", got, want)
	}

	// mpi-operator goes on (it may restart, having lost its lease): it
	// starts j2 and leaves j1's list as it is.
	if err := resume(); err != nil {
		t.Fatal(err)
	}
	k.waitSettled(t, ns, "j2", 2)
	k.waitSettled(t, ns, "j1", 2)
	if got, want := hosts(), listing(ns, "j1", 2); got != want {
		t.Errorf("after mpi-operator resumed, discover_hosts.sh is %q, want %q", got, want)
	}
}

// listing is discover_hosts.sh for workers 0 … n-1 (n ≤ 10) of job in ns.
func listing(ns, job string, n int) string {
	s := "#!/bin/sh\n"
	for i := range n {
		s += fmt.Sprintf("echo %s-worker-%d.%s.%s.svc\n", job, i, job, ns)
	}
	return s
}

// testSuspendedLag: mpi-operator lags (frozen here) while a job is
// preempted. Its launcher and workers would run on, holding the GPUs the
// next job was given, and keeping the job itself from resuming: once they
// have outlived the suspension by surplusGrace (10 s), the controller
// suspends the launcher Job, whose pod the Job controller then deletes,
// and deletes the workers. Let go, mpi-operator finds nothing left to
// stop: it starts the next job and, when that completes, resumes the
// first.
func testSuspendedLag(t *testing.T, k *cluster) {
	const ns, gpu = "suslag", "suslag-gpu"
	k.tiresiasDemoted(t, ns, gpu)
	ctx := context.Background()

	resume, err := k.env.Pause("mpi-operator")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resume() })
	preempted := time.Now()
	k.create(t, newJob(ns, "j2", gpu, 2, 2, launcherCompletesAfter("3s")))
	k.waitPhase(t, ns, "j1", v1alpha1.PhaseWaiting)
	err = testenv.PollUntil(ctx, 60*time.Second, "j1's pods gone", func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		if err := k.c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{v1alpha1.JobLabel: "j1"}); err != nil {
			return false, err
		}
		return len(pods.Items) == 0, nil
	})
	if err != nil {
		t.Fatalf("%v with mpi-operator frozen:\n%s", err, k.explain(ns, "j1"))
	}
	if took := time.Since(preempted); took < 10*time.Second {
		t.Errorf("j1's pods went %s after j2 arrived: before mpi-operator had its 10 s", took)
	}
	var launcher batchv1.Job
	if err := k.c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "j1-launcher"}, &launcher); err != nil {
		t.Fatal(err)
	}
	if launcher.Spec.Suspend == nil || !*launcher.Spec.Suspend {
		t.Error("j1's launcher Job is not suspended")
	}

	if err := resume(); err != nil {
		t.Fatal(err)
	}
	k.waitSettled(t, ns, "j2", 2)
	k.waitPhase(t, ns, "j2", v1alpha1.PhaseCompleted)
	k.waitSettled(t, ns, "j1", 2)
	k.expectEvents(t, ns, "j1", map[string]int{"Started:": 1, "Preempted:": 1, "Resumed:": 1})
}
