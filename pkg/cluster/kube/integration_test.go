package kube_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/vodascheduler/voda/internal/testenv"
	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/cluster/kube"
	"github.com/vodascheduler/voda/pkg/compat"
)

// TestIntegrationController runs the controller against a real control
// plane (etcd, kube-apiserver, controller manager, scheduler, kwok GPU
// nodes, mpi-operator), one scenario per subtest.
func TestIntegrationController(t *testing.T) {
	k := newCluster(t)

	t.Run("InvalidJobsRejected", func(t *testing.T) { testInvalidJobs(t, k) })
	t.Run("NodeLoss", func(t *testing.T) { testNodeLoss(t, k) })
	t.Run("TiresiasPreemption", func(t *testing.T) { testTiresias(t, k) })
	t.Run("LiveCountersAndTimedDemotion", func(t *testing.T) { testLiveCounters(t, k) })
	// Late enough for the garbage collector to know the MPIJob kind, which
	// deletes a deleted job's pods.
	t.Run("ElasticFIFO", func(t *testing.T) { testElasticFIFO(t, k) })
	t.Run("Restart", func(t *testing.T) { testRestart(t, k) })
	t.Run("MPIOperatorLag", func(t *testing.T) { testMPIOperatorLag(t, k) })
	t.Run("SuspendedLag", func(t *testing.T) { testSuspendedLag(t, k) })
	t.Run("KilledRepeatedly", func(t *testing.T) { testKilledRepeatedly(t, k) })
	t.Run("LeaderElection", func(t *testing.T) { testLeaderElection(t, k) })
	t.Run("RuntimeSettings", func(t *testing.T) { testRuntimeSettings(t, k) })
	t.Run("Seed003", func(t *testing.T) { testSeed003(t, k) })
	t.Run("Contention", func(t *testing.T) { testContention(t, k) })
	t.Run("GangTimeout", func(t *testing.T) { testGangTimeout(t, k) })
	t.Run("GangTimeoutNoPods", func(t *testing.T) { testGangTimeoutNoPods(t, k) })
	t.Run("Unschedulable", func(t *testing.T) { testUnschedulable(t, k) })
	t.Run("GangSchedulerPlugins", func(t *testing.T) { testGangSchedulerPlugins(t, k) })
	t.Run("GangTimeoutUnderGangScheduler", func(t *testing.T) { testGangTimeoutUnderGangScheduler(t, k) })
	t.Run("GangVolcano", func(t *testing.T) { testGangVolcano(t, k) })
	t.Run("PyTorch", func(t *testing.T) { testPyTorch(t, k) })
	t.Run("PyTorchLifecycle", func(t *testing.T) { testPyTorchLifecycle(t, k) })
	t.Run("Torchrun", func(t *testing.T) { testTorchrun(t, k) })
	t.Run("BatchSize", func(t *testing.T) { testBatchSize(t, k) })
	t.Run("Queues", func(t *testing.T) { testQueues(t, k) })
	t.Run("PyTorchGangTimeout", func(t *testing.T) { testPyTorchGangTimeout(t, k) })
	t.Run("WorkerGPUsMismatch", func(t *testing.T) { testWorkerGPUsMismatch(t, k) })
	t.Run("Accelerators", func(t *testing.T) { testAccelerators(t, k) })
	t.Run("GPUTypes", func(t *testing.T) { testGPUTypes(t, k) })
	t.Run("NodeDeleted", func(t *testing.T) { testNodeDeleted(t, k) })
	t.Run("EtcdRestart", func(t *testing.T) { testEtcdRestart(t, k) })
	t.Run("APIServerOutage", func(t *testing.T) { testAPIServerOutage(t, k) })
	// Last of those that run jobs: it removes the PyTorchJob kind.
	t.Run("PyTorchWithoutOperator", func(t *testing.T) { testPyTorchWithoutOperator(t, k) })
	// Every scenario above ran its controllers as the chart's
	// ServiceAccount: its rules are enough. Here: they are no more.
	t.Run("RBACMinimal", func(t *testing.T) { testRBACMinimal(t, k) })
}

// testRBACMinimal checks that the chart's ServiceAccount may not do what
// the controller never does.
func testRBACMinimal(t *testing.T, k *cluster) {
	ctx := context.Background()
	// The PodGroup CRD must be served for "forbidden" to mean the RBAC said
	// no, whichever subtests ran before.
	if err := k.env.ApplyPodGroupCRD(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(k.ctrlConfig, client.Options{Scheme: kube.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil || len(nodes.Items) == 0 {
		t.Fatalf("list nodes, which the controller needs: %v", err)
	}
	forbidden := map[string]error{
		"delete a node":       c.Delete(ctx, &nodes.Items[0]),
		"label a node":        c.Patch(ctx, &nodes.Items[0], client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`))),
		"list secrets":        c.List(ctx, &corev1.SecretList{}),
		"create a pod":        c.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "x"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "x", Image: "x"}}}}),
		"update a job's spec": c.Update(ctx, newJob("default", "x", "t", 1, 1)),
		// It reads and updates an MPIJob's ConfigMap by name (its host
		// list, hosts.go), nothing more.
		"list ConfigMaps elsewhere":    c.List(ctx, &corev1.ConfigMapList{}, client.InNamespace("kube-system")),
		"create a ConfigMap elsewhere": c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "x"}}),
		"delete a ConfigMap elsewhere": c.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "x"}}),
		// It reads and suspends an MPIJob's launcher Job by name (lag.go).
		"list Jobs":    c.List(ctx, &batchv1.JobList{}),
		"delete a Job": c.Delete(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "x"}}),
		// Only a release with a gang scheduler may make PodGroups.
		"create a PodGroup": c.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
			"metadata": map[string]any{"namespace": "default", "name": "x"}, "spec": map[string]any{"minMember": int64(1)}}}),
	}
	for what, err := range forbidden {
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s: %v, want forbidden", what, err)
		}
	}
}

// (g) the API server rejects bad TrainingJobs with a message saying what to
// change, before the controller ever sees them.
func testInvalidJobs(t *testing.T, k *cluster) {
	if err := k.env.CreateNamespace(context.Background(), "invalid"); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		edit func(*v1alpha1.TrainingJob)
		want string
	}{
		{"min above max", func(tj *v1alpha1.TrainingJob) { tj.Spec.MinWorkers, tj.Spec.MaxWorkers = 3, 2 }, "maxWorkers must be at least minWorkers"},
		{"zero min", func(tj *v1alpha1.TrainingJob) { tj.Spec.MinWorkers = 0 }, "spec.minWorkers: Invalid value: 0: spec.minWorkers in body should be greater than or equal to 1"},
		{"requested outside range", func(tj *v1alpha1.TrainingJob) { tj.Spec.RequestedWorkers = 9 }, "requestedWorkers must lie within [minWorkers, maxWorkers]"},
		{"no GPU type", func(tj *v1alpha1.TrainingJob) { tj.Spec.GPUType = "" }, "spec.gpuType"},
		{"no template", func(tj *v1alpha1.TrainingJob) { tj.Spec.Template.MPIJob = nil }, "set exactly one of template.mpiJob and template.pytorchJob"},
		{"negative priority", func(tj *v1alpha1.TrainingJob) { tj.Spec.Priority = -1 }, "spec.priority"},
		{"batch range upside down", func(tj *v1alpha1.TrainingJob) { tj.Spec.BatchSize = &v1alpha1.BatchSizeSpec{Initial: 256, Max: 128} },
			"batchSize.max must be at least batchSize.initial"},
		{"no initial batch", func(tj *v1alpha1.TrainingJob) { tj.Spec.BatchSize = &v1alpha1.BatchSizeSpec{Max: 128} },
			"spec.batchSize.initial"},
	}
	for _, c := range cases {
		tj := newJob("invalid", "bad", "v100", 1, 4)
		c.edit(tj)
		err := k.c.Create(context.Background(), tj)
		if err == nil {
			t.Errorf("%s: created, want rejected", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q does not say %q", c.name, err, c.want)
		}
	}
	// The examples are valid, and the original's job files convert into
	// TrainingJobs the API server accepts.
	for _, pattern := range []string{"../../../examples/*trainingjob*.yaml", "../../../examples/pytorch/*trainingjob*.yaml"} {
		k.dryRunExamples(t, pattern, func(data []byte) (*v1alpha1.TrainingJob, error) {
			tj := &v1alpha1.TrainingJob{}
			return tj, yaml.UnmarshalStrict(data, tj)
		})
	}
	k.dryRunExamples(t, "../../../examples/original/*.yaml", func(data []byte) (*v1alpha1.TrainingJob, error) {
		return compat.FromMPIJob(data, time.Now())
	})
	k.dryRunExamples(t, "../../../examples/pytorch/*pytorchjob*.yaml", func(data []byte) (*v1alpha1.TrainingJob, error) {
		return compat.FromPyTorchJob(data)
	})
	// And a valid job's scheduling fields cannot change afterwards.
	tj := newJob("invalid", "good", "v100", 1, 4)
	k.create(t, tj)
	tj.Spec.MaxWorkers = 8
	if err := k.c.Update(context.Background(), tj); err == nil || !strings.Contains(err.Error(), "maxWorkers is immutable") {
		t.Errorf("changing maxWorkers: %v, want rejected as immutable", err)
	}
}

// dryRunExamples decodes every file matching pattern into a TrainingJob and
// has the API server validate it without creating it.
func (k *cluster) dryRunExamples(t *testing.T, pattern string, decode func([]byte) (*v1alpha1.TrainingJob, error)) {
	t.Helper()
	files, _ := filepath.Glob(pattern)
	if len(files) == 0 {
		t.Fatalf("no examples match %s", pattern)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tj, err := decode(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		tj.Namespace = "invalid"
		if err := k.c.Create(context.Background(), tj, client.DryRunAll); err != nil {
			t.Errorf("%s rejected: %v", f, err)
		}
	}
}

// (a) three jobs on 2 nodes × 4 GPUs under ElasticFIFO follow the engine's
// plan, workers on the placement's nodes, discover_hosts.sh in step;
// (b) a completion lets the others scale out.
func testElasticFIFO(t *testing.T, k *cluster) {
	const ns, gpu = "fifo", "fifo-gpu"
	k.scenario(t, ns, gpu, 2, 4)
	ctl, _ := k.startController(t, controllerOpts(t, gpu))
	k.create(t, newJob(ns, "j1", gpu, 1, 4), newJob(ns, "j2", gpu, 1, 4), newJob(ns, "j3", gpu, 1, 4))

	// All at once: the first job may start alone on all it can take and
	// shrink when the others arrive.
	k.waitAllSettled(t, ns, []string{"j1", "j2", "j3"}, 8)
	// The statuses are the engine's plan.
	infos, err := ctl.Schedulers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 1 || infos[0].GPUs != 8 {
		t.Fatalf("schedulers %+v, want one with 8 GPUs", infos)
	}
	for _, j := range infos[0].Jobs {
		tj := k.job(t, ns, strings.TrimPrefix(string(j.ID), ns+"/"))
		if int(tj.Status.Workers) != j.Workers || len(tj.Status.Placement) != len(j.Nodes) {
			t.Errorf("%s: status %d workers on %v, engine %d on %v", j.ID, tj.Status.Workers, tj.Status.Placement, j.Workers, j.Nodes)
		}
	}

	// Statuses are written by several writers at once: one computed
	// earlier never overwrites one computed later, whichever write ends
	// last; the controller then writes the true one again.
	if err := ctl.WriteOutOfOrder(context.Background(), ns, "j2", gpu, "computed first", "computed second"); err != nil {
		t.Fatal(err)
	}
	if m := k.job(t, ns, "j2").Status.Message; m == "computed first" {
		t.Errorf("j2's status says %q: an earlier status overwrote a later one", m)
	}
	waitFor(t, "j2's true status written again", func(context.Context) (bool, error) {
		return !strings.HasPrefix(k.job(t, ns, "j2").Status.Message, "computed"), nil
	})

	k.completeLauncher(t, ns, "j1")
	k.waitPhase(t, ns, "j1", v1alpha1.PhaseCompleted)
	k.waitSettled(t, ns, "j2", 4)
	k.waitSettled(t, ns, "j3", 4)

	k.expectEvents(t, ns, "j1", map[string]int{"Submitted:": 1, "Started:": 1, "Completed:": 1})
	for _, name := range []string{"j2", "j3"} {
		k.expectEvents(t, ns, name, map[string]int{"Submitted:": 1, "Started:": 1, "Preempted:": 0})
		if tj := k.job(t, ns, name); countPrefix(k.events(t, ns, name), "Scaled:") != int(tj.Status.Rescales) {
			t.Errorf("%s: %d rescales but events %q", name, tj.Status.Rescales, k.events(t, ns, name))
		}
	}

	// Deleting a job deletes its MPIJob and pods and frees its GPUs; a new
	// job may reuse the name at once.
	old := k.job(t, ns, "j3")
	oldMPI := k.mpiJob(t, ns, "j3").GetUID()
	k.create(t, newJob(ns, "j4", gpu, 1, 1))
	if err := k.c.Delete(context.Background(), old); err != nil {
		t.Fatal(err)
	}
	k.create(t, newJob(ns, "j3", gpu, 1, 4))
	k.waitSettled(t, ns, "j4", 1)
	j3 := k.waitSettled(t, ns, "j3", 0)
	err = testenv.PollUntil(context.Background(), 60*time.Second, "the new j3 owns its MPIJob", func(ctx context.Context) (bool, error) {
		m := k.mpiJob(t, ns, "j3")
		ref := metav1.GetControllerOf(m)
		return m.GetUID() != oldMPI && ref != nil && ref.UID == j3.UID, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if j2, j4 := k.job(t, ns, "j2"), k.job(t, ns, "j4"); j2.Status.Workers+j3.Status.Workers+j4.Status.Workers != 8 {
		t.Errorf("j2, j3, j4 hold %d, %d, %d GPUs, want 8 together", j2.Status.Workers, j3.Status.Workers, j4.Status.Workers)
	}

	// A job whose launcher fails ends Failed, saying so, and its GPUs go
	// back (j3 grows again).
	k.create(t, newJob(ns, "bad", gpu, 1, 1, launcherFails()))
	bad := k.waitPhase(t, ns, "bad", "Failed")
	if !strings.Contains(bad.Status.Message, "failed") || bad.Status.Workers != 0 || bad.Status.FinishTime == nil {
		t.Errorf("failed job's status: %+v", bad.Status)
	}
	k.expectEvents(t, ns, "bad", map[string]int{"Started:": 1, "Failed:": 1})
	k.waitAllSettled(t, ns, []string{"j2", "j3", "j4"}, 8) // the failed job's GPU reused
}

// (c) a node that loses its label: with room elsewhere its workers migrate
// there (f); without room the job waits, suspended, and resumes when a node
// comes back.
func testNodeLoss(t *testing.T, k *cluster) {
	const ns, gpu = "nodeloss", "move-gpu"
	nodes := k.scenario(t, ns, gpu, 3, 2)
	k.startController(t, controllerOpts(t, gpu))
	k.create(t, newJob(ns, "j1", gpu, 2, 2))
	before := k.waitSettled(t, ns, "j1", 2)
	from := before.Status.Placement[0]
	oldPods := podUIDs(t, k, ns, "j1")

	k.setLabel(t, from, "")
	after := k.waitSettledOff(t, ns, "j1", 2, from)
	for _, uid := range podUIDs(t, k, ns, "j1") {
		if slices.Contains(oldPods, uid) {
			t.Errorf("worker pod %s survived the migration", uid)
		}
	}
	k.expectEvents(t, ns, "j1", map[string]int{"Migrated: Migrated worker-0 " + from + "→": 1})

	// Two nodes left: j2 takes the other one; losing it leaves j2 nowhere.
	k.create(t, newJob(ns, "j2", gpu, 2, 2))
	j2 := k.waitSettled(t, ns, "j2", 2)
	if j2.Status.Placement[0] == after.Status.Placement[0] {
		t.Fatalf("j2 shares %s with j1", j2.Status.Placement[0])
	}
	k.setLabel(t, j2.Status.Placement[0], "")
	j2 = k.waitPhase(t, ns, "j2", "Waiting")
	err := testenv.PollUntil(context.Background(), 60*time.Second, "j2 suspended without workers", func(ctx context.Context) (bool, error) {
		pods, err := k.workers(ctx, ns, "j2")
		if err != nil {
			return false, err
		}
		suspended, _, _ := unstructuredBool(k.mpiJob(t, ns, "j2"), "spec", "runPolicy", "suspend")
		return suspended && len(pods) == 0, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if j2.Status.Preemptions != 1 {
		t.Errorf("j2 preemptions %d, want 1", j2.Status.Preemptions)
	}
	k.setLabel(t, from, gpu)
	j2 = k.waitSettled(t, ns, "j2", 2)
	if j2.Status.Placement[0] != from {
		t.Errorf("j2 resumed on %v, want %s", j2.Status.Placement, from)
	}
	k.expectEvents(t, ns, "j2", map[string]int{"Started:": 1, "Preempted:": 1, "Resumed:": 1})
	_ = nodes
}

// tiresiasDemoted runs a Tiresias controller (one queue threshold, 30 s of
// GPU time) on one node of 2 GPUs of type gpu and a job j1 of 2 workers,
// and returns once j1 has used up its queue-0 service: a new job preempts it.
func (k *cluster) tiresiasDemoted(t *testing.T, ns, gpu string) {
	t.Helper()
	k.scenario(t, ns, gpu, 1, 2)
	o := controllerOpts(t, gpu)
	o.Policy = "Tiresias"
	o.Algorithm = algorithm.DefaultConfig()
	o.Algorithm.Tiresias.Thresholds = []float64{30}
	o.Algorithm.Tiresias.PromoteKnob = 0
	k.startController(t, o)
	k.create(t, newJob(ns, "j1", gpu, 2, 2))
	k.waitSettled(t, ns, "j1", 2)
	err := testenv.PollUntil(context.Background(), 60*time.Second, "j1 demoted", func(ctx context.Context) (bool, error) {
		return k.job(t, ns, "j1").Status.Queue == 1, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// (d) Tiresias: a job that used up its queue-0 service is preempted by a new
// job (MPIJob suspended) and resumed when that one completes.
func testTiresias(t *testing.T, k *cluster) {
	const ns, gpu = "tiresias", "tiresias-gpu"
	k.tiresiasDemoted(t, ns, gpu)
	k.create(t, newJob(ns, "j2", gpu, 2, 2, launcherCompletesAfter("3s")))
	k.waitSettled(t, ns, "j2", 2)
	j1 := k.job(t, ns, "j1")
	if j1.Status.Phase != "Waiting" || j1.Status.Preemptions != 1 {
		t.Errorf("j1 is %s after %d preemptions while j2 runs", j1.Status.Phase, j1.Status.Preemptions)
	}
	if s, _, _ := unstructuredBool(k.mpiJob(t, ns, "j1"), "spec", "runPolicy", "suspend"); !s {
		t.Error("j1's MPIJob is not suspended")
	}
	k.waitPhase(t, ns, "j2", "Completed")
	k.waitSettled(t, ns, "j1", 2)
	k.expectEvents(t, ns, "j1", map[string]int{"Started:": 1, "Preempted:": 1, "Resumed:": 1})
}

// Between events the status is live: a job that waits while nothing
// happens has its waiting time grow with every status write, in step with
// its accounting time, and a Tiresias demotion that falls due while
// nothing happens preempts the demoted job for the waiting one on time,
// with no other event to wake the scheduler.
func testLiveCounters(t *testing.T, k *cluster) {
	const ns, gpu = "live", "live-gpu"
	k.scenario(t, ns, gpu, 1, 2)
	o := controllerOpts(t, gpu)
	o.Policy = "Tiresias"
	o.Algorithm = algorithm.DefaultConfig()
	// 2 GPUs reach 40 GPU-seconds in 20 s.
	o.Algorithm.Tiresias.Thresholds = []float64{40}
	o.Algorithm.Tiresias.PromoteKnob = 0
	k.startController(t, o)
	k.create(t, newJob(ns, "first", gpu, 2, 2))
	running := k.waitSettled(t, ns, "first", 2)
	k.create(t, newJob(ns, "second", gpu, 2, 2))
	// While second waits, each status write says how long it has waited:
	// its waiting time is its accounting time less its submission (both
	// written to the second, as metav1.Time is).
	var seen []int64
	err := testenv.PollUntil(context.Background(), 60*time.Second, "second's waiting time seen growing three times", func(ctx context.Context) (bool, error) {
		tj := k.job(t, ns, "second")
		st := tj.Status
		if st.Phase != v1alpha1.PhaseWaiting || st.AccountedTime == nil || st.SubmitTime == nil {
			return false, nil
		}
		if d := st.AccountedTime.Sub(st.SubmitTime.Time).Milliseconds() - st.WaitingMillis; d < -1100 || d > 1100 {
			return false, fmt.Errorf("second waited %d ms by its status, but was submitted %s before its accounting time %s",
				st.WaitingMillis, st.AccountedTime.Sub(st.SubmitTime.Time), st.AccountedTime.Format(time.RFC3339Nano))
		}
		if len(seen) == 0 || st.WaitingMillis > seen[len(seen)-1] {
			seen = append(seen, st.WaitingMillis)
		}
		return len(seen) >= 3 && seen[len(seen)-1] >= 2000, nil
	})
	if err != nil {
		t.Fatalf("%v (waiting times seen: %v)", err, seen)
	}
	// Nothing else happens: the demotion alone hands the GPUs over.
	k.waitSettled(t, ns, "second", 2)
	first := k.job(t, ns, "first")
	if first.Status.Phase != v1alpha1.PhaseWaiting || first.Status.Queue != 1 || first.Status.Preemptions != 1 {
		t.Fatalf("first is %s in queue %d after %d preemptions, want Waiting in queue 1 after 1: %s",
			first.Status.Phase, first.Status.Queue, first.Status.Preemptions, first.Status.Message)
	}
	if ran := first.Status.GPUMillis; ran < 40_000 || ran > 40_000+2*15_000 {
		t.Errorf("first held %d GPU-ms when demoted, want its 40 000 threshold and at most the start of second beyond it", ran)
	}
	if running.Status.LastStartTime == nil {
		t.Fatal("first has no start time")
	}
	k.expectEvents(t, ns, "first", map[string]int{"Started:": 1, "Preempted:": 1})
}

// (e) a controller killed mid-run and started again rebuilds its state from
// the API server: running jobs untouched, counters continued, a completion
// and a submission that happened meanwhile both taken into account.
func testRestart(t *testing.T, k *cluster) {
	const ns, gpu = "restart", "restart-gpu"
	k.scenario(t, ns, gpu, 1, 4)
	_, stop := k.startController(t, controllerOpts(t, gpu))
	k.create(t, newJob(ns, "j1", gpu, 2, 2), newJob(ns, "j2", gpu, 2, 2))
	k.waitSettled(t, ns, "j1", 2)
	before := k.waitSettled(t, ns, "j2", 2)
	pods := podUIDs(t, k, ns, "j2")
	mpiUID := k.mpiJob(t, ns, "j2").GetUID()
	time.Sleep(3 * time.Second) // let the counters be written once more
	before = k.job(t, ns, "j2")
	stop()

	// While no controller runs: j1 finishes and j3 arrives.
	k.completeLauncher(t, ns, "j1")
	err := testenv.PollUntil(context.Background(), 60*time.Second, "j1's MPIJob succeeded", func(ctx context.Context) (bool, error) {
		conds, _, _ := unstructuredSlice(k.mpiJob(t, ns, "j1"), "status", "conditions")
		for _, c := range conds {
			if m, _ := c.(map[string]any); m["type"] == "Succeeded" && m["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	k.create(t, newJob(ns, "j3", gpu, 1, 2))
	time.Sleep(2 * time.Second)

	k.startController(t, controllerOpts(t, gpu))
	k.waitPhase(t, ns, "j1", "Completed")
	k.waitSettled(t, ns, "j3", 2)
	after := k.waitSettled(t, ns, "j2", 2)
	if !slices.Equal(after.Status.Placement, before.Status.Placement) {
		t.Errorf("j2 moved from %v to %v", before.Status.Placement, after.Status.Placement)
	}
	if got := podUIDs(t, k, ns, "j2"); !slices.Equal(got, pods) {
		t.Errorf("j2's workers were recreated: %v, then %v", pods, got)
	}
	if uid := k.mpiJob(t, ns, "j2").GetUID(); uid != mpiUID {
		t.Error("j2's MPIJob was recreated")
	}
	k.expectEvents(t, ns, "j2", map[string]int{"Submitted:": 1, "Started:": 1, "Scaled:": 0, "Preempted:": 0})
	// The counters carried on across the restart (5 s away at 2 GPUs).
	if after.Status.GPUMillis < before.Status.GPUMillis+2*5000 {
		t.Errorf("j2 GPU time %d ms after the restart, %d before", after.Status.GPUMillis, before.Status.GPUMillis)
	}
	if after.Status.SubmitTime == nil || !after.Status.SubmitTime.Equal(before.Status.SubmitTime) {
		t.Errorf("j2 submit time %v, was %v", after.Status.SubmitTime, before.Status.SubmitTime)
	}
}

// (h) two replicas with leader election: when the leader dies, the other
// takes over without repeating what was done.
func testLeaderElection(t *testing.T, k *cluster) {
	const ns, gpu = "ha", "ha-gpu"
	k.scenario(t, ns, gpu, 2, 2)
	ha := func() kube.ManagerOptions {
		o := controllerOpts(t, gpu)
		o.LeaderElect, o.LeaderElectionNamespace, o.LeaderElectionID = true, ns, "voda-ha"
		o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 4*time.Second, 3*time.Second, 500*time.Millisecond
		return o
	}
	_, stopA := k.startController(t, ha())
	k.create(t, newJob(ns, "j1", gpu, 2, 2))
	k.waitSettled(t, ns, "j1", 2)
	pods := podUIDs(t, k, ns, "j1")
	k.startController(t, ha())
	time.Sleep(time.Second)
	stopA()
	k.create(t, newJob(ns, "j2", gpu, 2, 2))
	k.waitSettled(t, ns, "j2", 2)
	k.waitSettled(t, ns, "j1", 2)
	if got := podUIDs(t, k, ns, "j1"); !slices.Equal(got, pods) {
		t.Errorf("j1's workers were recreated after the takeover")
	}
	for _, name := range []string{"j1", "j2"} {
		k.expectEvents(t, ns, name, map[string]int{"Submitted:": 1, "Started:": 1})
	}
}

// podUIDs returns the UIDs of a job's worker pods, by worker index.
func podUIDs(t *testing.T, k *cluster, ns, name string) []types.UID {
	t.Helper()
	pods, err := k.workers(context.Background(), ns, name)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]types.UID, len(pods))
	for i := range out {
		out[i] = pods[i].UID
	}
	return out
}

// setLabel sets a node's accelerator label, or removes it when gpu is "".
func (k *cluster) setLabel(t *testing.T, node, gpu string) {
	t.Helper()
	// kwok updates the node's status meanwhile: retry on conflict.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var n corev1.Node
		if err := k.c.Get(context.Background(), types.NamespacedName{Name: node}, &n); err != nil {
			return err
		}
		labels := maps.Clone(n.Labels)
		if gpu == "" {
			delete(labels, v1alpha1.AcceleratorLabel)
		} else {
			labels[v1alpha1.AcceleratorLabel] = gpu
		}
		n.Labels = labels
		return k.c.Update(context.Background(), &n)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The ConfigMap voda-schedulers changes a GPU type's policy, rate limit and
// policy parameters at runtime; a bad entry is reported on the ConfigMap
// and changes nothing.
func testRuntimeSettings(t *testing.T, k *cluster) {
	const ns, gpu = "settings", "set-gpu"
	k.scenario(t, ns, gpu, 1, 2)
	o := controllerOpts(t, gpu, "no-such-gpu")
	o.ConfigNamespace = ns
	ctl, _ := k.startController(t, o)
	k.create(t, newJob(ns, "j1", gpu, 1, 2), newJob(ns, "orphan", "no-such-gpu", 1, 1))
	k.waitSettled(t, ns, "j1", 2)
	// A job whose GPU type has no nodes waits, saying so.
	if msg := k.waitPhase(t, ns, "orphan", "Waiting").Status.Message; !strings.Contains(msg, "no schedulable nodes of GPU type no-such-gpu") {
		t.Errorf("orphan's message %q does not say why it waits", msg)
	}

	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: kube.ConfigMapName},
		Data:       map[string]string{gpu: "algorithm: tiresias\nrateLimit: 2s\npolicyParams: [tiresias.thresholds=600]\n"},
	}
	k.create(t, cm)
	want := func(policy string, rate time.Duration, params ...string) {
		t.Helper()
		err := testenv.PollUntil(context.Background(), 30*time.Second, gpu+" settings", func(ctx context.Context) (bool, error) {
			infos, err := ctl.Schedulers(ctx)
			if err != nil {
				return false, err
			}
			for _, s := range infos {
				if s.GPUType == gpu && s.Policy == policy && s.RateLimit == rate && slices.Equal(s.Params, params) {
					return true, nil
				}
			}
			return false, fmt.Errorf("schedulers %+v", infos)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	want("Tiresias", 2*time.Second, "tiresias.thresholds=600")

	for _, bad := range []struct{ entry, says string }{
		{"algorithm: Optimus\n", "Optimus"},
		{"algorithm: tiresias\npolicyParams: [hesrpt.exponent=-1]\n", "hesrpt.exponent=-1"},
	} {
		cm.Data[gpu] = bad.entry
		if err := k.c.Update(context.Background(), cm); err != nil {
			t.Fatal(err)
		}
		err := testenv.PollUntil(context.Background(), 30*time.Second, "InvalidSettings event", func(ctx context.Context) (bool, error) {
			var list corev1.EventList
			if err := k.c.List(ctx, &list, client.InNamespace(ns)); err != nil {
				return false, err
			}
			for _, e := range list.Items {
				if e.InvolvedObject.Kind == "ConfigMap" && e.Reason == "InvalidSettings" && strings.Contains(e.Message, bad.says) {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		want("Tiresias", 2*time.Second, "tiresias.thresholds=600")
	}

	if err := k.c.Delete(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	want(o.Policy, 500*time.Millisecond) // back to the flags
	k.waitSettled(t, ns, "j1", 2)
}

// (e) again, harder: controllers killed at arbitrary moments while jobs
// arrive and start. In the end every job runs exactly as its status says,
// the GPUs are all used and none twice, and no job was started twice.
func testKilledRepeatedly(t *testing.T, k *cluster) {
	const ns, gpu = "chaos", "chaos-gpu"
	k.scenario(t, ns, gpu, 2, 4)
	lifetimes := []time.Duration{300 * time.Millisecond, 1200 * time.Millisecond, 700 * time.Millisecond, 2 * time.Second, 450 * time.Millisecond}
	names := []string{"j1", "j2", "j3", "j4", "j5", "j6"}
	for i, life := range lifetimes {
		_, stop := k.startController(t, controllerOpts(t, gpu))
		if i < len(names) {
			k.create(t, newJob(ns, names[i], gpu, 1, 3))
		}
		time.Sleep(life)
		stop()
	}
	k.create(t, newJob(ns, "j6", gpu, 1, 3))
	k.startController(t, controllerOpts(t, gpu))

	k.waitAllSettled(t, ns, names, 8)
	for _, name := range names {
		if n := countPrefix(k.events(t, ns, name), "Started:"); n > 1 {
			t.Errorf("%s started %d times", name, n)
		}
	}
}
