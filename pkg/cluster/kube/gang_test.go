package kube_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vodascheduler/voda/internal/testenv"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
)

// testSeed003 reproduces the experiment of seeds/003 (the Kubeflow
// gang-scheduling guide): 4 nodes with 1 GPU each; job 1 needs 3 GPUs, job
// 2 needs 2. With the plain kube-scheduler and no gang, job 2 starts
// partially: one worker holds a GPU it cannot use. With Voda, job 2 waits
// with a message and has no MPIJob and no pod at all.
func testSeed003(t *testing.T, k *cluster) {
	const ns, gpu = "seed003", "seed003-gpu"
	k.scenario(t, ns, gpu, 4, 1)
	ctx := context.Background()

	t.Run("PlainScheduler", func(t *testing.T) {
		// MPIJobs created directly: mpi-operator creates every worker pod,
		// kube-scheduler binds whichever fits.
		for _, j := range []struct {
			name    string
			workers int64
		}{{"plain-1", 3}, {"plain-2", 2}} {
			if err := k.c.Create(ctx, plainMPIJob(ns, j.name, gpu, j.workers)); err != nil {
				t.Fatal(err)
			}
			time.Sleep(2 * time.Second) // job 1 first, as in the seed
		}
		var running, pending map[string]int
		err := testenv.PollUntil(ctx, 60*time.Second, "plain-2 partially started", func(ctx context.Context) (bool, error) {
			var err error
			running, pending, err = k.workerPhases(ctx, ns)
			return running["plain-1"] == 3 && running["plain-2"] == 1 && pending["plain-2"] == 1, err
		})
		if err != nil {
			t.Fatalf("%v: running %v, pending %v", err, running, pending)
		}
		t.Logf("plain kube-scheduler: plain-1 runs 3/3 workers; plain-2 runs 1/2, holding a GPU it cannot use, 1 pending")
		k.deleteMPIJobs(t, ns, "plain-1", "plain-2")
	})

	t.Run("Coscheduling", func(t *testing.T) {
		// The scheduler-plugins scheduler with coscheduling: each job's
		// workers form a PodGroup of all of them.
		if err := k.env.StartCoscheduling(ctx); err != nil {
			t.Fatal(err)
		}
		for _, j := range []struct {
			name    string
			workers int64
		}{{"cosched-1", 3}, {"cosched-2", 2}} {
			pg := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
				"metadata": map[string]any{"namespace": ns, "name": j.name},
				"spec":     map[string]any{"minMember": j.workers},
			}}
			if err := k.c.Create(ctx, pg); err != nil {
				t.Fatal(err)
			}
			u := plainMPIJob(ns, j.name, gpu, j.workers)
			tmpl := u.Object["spec"].(map[string]any)["mpiReplicaSpecs"].(map[string]any)["Worker"].(map[string]any)["template"].(map[string]any)
			tmpl["metadata"] = map[string]any{"labels": map[string]any{testenv.PodGroupLabel: j.name}}
			tmpl["spec"].(map[string]any)["schedulerName"] = testenv.CoschedulerName
			if err := k.c.Create(ctx, u); err != nil {
				t.Fatal(err)
			}
			time.Sleep(2 * time.Second)
		}
		var running, pending map[string]int
		err := testenv.PollUntil(ctx, 60*time.Second, "cosched-1 running, cosched-2 all pending", func(ctx context.Context) (bool, error) {
			var err error
			running, pending, err = k.workerPhases(ctx, ns)
			return running["cosched-1"] == 3 && running["cosched-2"] == 0 && pending["cosched-2"] == 2, err
		})
		if err != nil {
			t.Fatalf("%v: running %v, pending %v", err, running, pending)
		}
		// And it stays so: no worker of cosched-2 takes the free GPU.
		time.Sleep(5 * time.Second)
		if running, pending, err = k.workerPhases(ctx, ns); err != nil || running["cosched-2"] != 0 || pending["cosched-2"] != 2 {
			t.Errorf("later: running %v, pending %v (%v)", running, pending, err)
		}
		t.Logf("coscheduling: cosched-1 runs 3/3 workers; cosched-2's 2 workers all pending, no GPU held")
		k.deleteMPIJobs(t, ns, "cosched-1", "cosched-2")
	})

	t.Run("Voda", func(t *testing.T) {
		k.startController(t, controllerOpts(t, gpu))
		k.create(t, newJob(ns, "voda-1", gpu, 3, 3))
		k.waitSettled(t, ns, "voda-1", 3)
		k.create(t, newJob(ns, "voda-2", gpu, 2, 2))
		err := testenv.PollUntil(ctx, 30*time.Second, "voda-2 waiting", func(ctx context.Context) (bool, error) {
			j := k.job(t, ns, "voda-2")
			return j.Status.Phase == v1alpha1.PhaseWaiting && j.Status.Message != "", nil
		})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second) // a few more rounds: still nothing
		j := k.job(t, ns, "voda-2")
		if j.Status.Phase != v1alpha1.PhaseWaiting || !strings.Contains(j.Status.Message, "2") {
			t.Errorf("voda-2 is %s: %q", j.Status.Phase, j.Status.Message)
		}
		var pods corev1.PodList
		if err := k.c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{v1alpha1.JobLabel: "voda-2"}); err != nil || len(pods.Items) != 0 {
			t.Errorf("voda-2 has %d pods (%v)", len(pods.Items), err)
		}
		if u := k.mpiJobOrNil(t, ns, "voda-2"); u != nil {
			t.Error("voda-2 has an MPIJob")
		}
		t.Logf("Voda: voda-1 runs 3/3 workers; voda-2 waits with no pod: %q", j.Status.Message)
	})
}

// plainMPIJob is an MPIJob run without Voda: no gate, the plain scheduler.
func plainMPIJob(ns, name, gpuType string, workers int64) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("kubeflow.org/v2beta1")
	u.SetKind("MPIJob")
	u.SetNamespace(ns)
	u.SetName(name)
	container := func(n string, gpus bool) map[string]any {
		c := map[string]any{"name": n, "image": "horovod/horovod:0.28.1"}
		if gpus {
			c["resources"] = map[string]any{"limits": map[string]any{string(v1alpha1.GPUResource): "1"}}
		}
		return c
	}
	u.Object["spec"] = map[string]any{
		"slotsPerWorker": int64(1),
		"runPolicy":      map[string]any{"cleanPodPolicy": "Running"},
		"mpiReplicaSpecs": map[string]any{
			"Launcher": map[string]any{"replicas": int64(1), "template": map[string]any{
				"spec": map[string]any{"containers": []any{container("launcher", false)}}}},
			"Worker": map[string]any{"replicas": workers, "template": map[string]any{
				"spec": map[string]any{
					"nodeSelector": map[string]any{v1alpha1.AcceleratorLabel: gpuType},
					"containers":   []any{container("worker", true)},
				}}},
		},
	}
	return u
}

// deleteMPIJobs deletes MPIJobs made without Voda and waits until their
// workers are gone, GPUs free.
func (k *cluster) deleteMPIJobs(t *testing.T, ns string, names ...string) {
	t.Helper()
	ctx := context.Background()
	for _, n := range names {
		if err := k.c.Delete(ctx, plainMPIJob(ns, n, "", 0)); err != nil {
			t.Fatal(err)
		}
	}
	err := testenv.PollUntil(ctx, 60*time.Second, "the MPIJobs' workers gone", func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		err := k.c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"training.kubeflow.org/job-role": "worker"})
		return len(pods.Items) == 0, err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// workerPhases counts each MPIJob's worker pods by phase (Running, or
// Pending for pods not bound to a node).
func (k *cluster) workerPhases(ctx context.Context, ns string) (running, pending map[string]int, err error) {
	var pods corev1.PodList
	if err := k.c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"training.kubeflow.org/job-role": "worker"}); err != nil {
		return nil, nil, err
	}
	running, pending = map[string]int{}, map[string]int{}
	for _, p := range pods.Items {
		job := p.Labels["training.kubeflow.org/job-name"]
		switch {
		case p.Status.Phase == corev1.PodRunning:
			running[job]++
		case p.Spec.NodeName == "":
			pending[job]++
		}
	}
	return running, pending, nil
}

// mpiJobOrNil returns a job's MPIJob, or nil if there is none.
func (k *cluster) mpiJobOrNil(t *testing.T, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := k.env.Dynamic.Resource(testenv.MPIJobGVR).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		if strings.Contains(err.Error(), "not found") {
			return nil
		}
		t.Fatal(fmt.Errorf("MPIJob %s: %w", name, err))
	}
	return u
}

// testContention: pods that are not Voda's hold GPUs of Voda's nodes. Voda
// plans only around them — no gang of its own stays partly pending — and
// takes the GPUs back when they go.
func testContention(t *testing.T, k *cluster) {
	const ns, gpu = "contention", "contention-gpu"
	nodes := k.scenario(t, ns, gpu, 1, 4)
	ctx := context.Background()
	other := nodePod(ns, "notebook", nodes[0], corev1.ResourceRequirements{Limits: corev1.ResourceList{v1alpha1.GPUResource: resourceOf("3")}})
	k.create(t, other)
	err := testenv.PollUntil(ctx, 30*time.Second, "the notebook runs", func(ctx context.Context) (bool, error) {
		var p corev1.Pod
		err := k.c.Get(ctx, client.ObjectKeyFromObject(other), &p)
		return err == nil && p.Status.Phase == corev1.PodRunning, err
	})
	if err != nil {
		t.Fatal(err)
	}
	k.startController(t, controllerOpts(t, gpu))
	k.create(t, newJob(ns, "elastic", gpu, 1, 4), newJob(ns, "rigid", gpu, 2, 2))
	// One GPU is left: the elastic job gets it, the rigid one waits.
	k.waitSettled(t, ns, "elastic", 1)
	if j := k.job(t, ns, "rigid"); j.Status.Phase != v1alpha1.PhaseWaiting {
		t.Errorf("rigid is %s with %d workers", j.Status.Phase, j.Status.Workers)
	}
	// The notebook goes: both jobs get GPUs (4 = rigid 2 + elastic 2).
	if err := k.c.Delete(ctx, other); err != nil {
		t.Fatal(err)
	}
	k.waitAllSettled(t, ns, []string{"elastic", "rigid"}, 4)
}

func resourceOf(s string) resource.Quantity { return resource.MustParse(s) }

// nodePod is a pod that is not Voda's, pinned to a node, asking for res.
func nodePod(ns, name, node string, res corev1.ResourceRequirements) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{corev1.LabelHostname: node},
			Containers:   []corev1.Container{{Name: name, Image: "busybox", Resources: res}},
		},
	}
}

// testGangTimeout: a gang whose workers cannot all start (the node refuses
// them: a pod that is not Voda's holds its CPUs) gives its GPUs back after
// the gang timeout, with an Event, and runs once the node takes pods again. The
// gang is placed by one controller and timed out by the next: the clock
// does not die with the controller that started it.
func testGangTimeout(t *testing.T, k *cluster) {
	const ns, gpu = "gangtimeout", "gangtimeout-gpu"
	nodes := k.scenario(t, ns, gpu, 1, 2)
	ctx := context.Background()
	k.occupyCPU(t, ns, nodes[0], true)
	o := controllerOpts(t, gpu)
	o.GangTimeout = time.Hour
	_, stop := k.startController(t, o)
	k.create(t, newJob(ns, "stuck", gpu, 2, 2, workerCPU("1")))
	err := testenv.PollUntil(ctx, 60*time.Second, "stuck placed", func(ctx context.Context) (bool, error) {
		j := k.job(t, ns, "stuck")
		return j.Status.Phase == v1alpha1.PhaseStarting && len(j.Status.Placement) == 2, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Never Running while a planned worker is Pending: the status says how
	// many run and why the first of the others does not.
	err = testenv.PollUntil(ctx, 30*time.Second, "stuck says why", func(ctx context.Context) (bool, error) {
		j := k.job(t, ns, "stuck")
		if !strings.HasPrefix(j.Status.Message, "0 of 2 workers running; worker 0 is Pending: ") || j.Status.RunningWorkers != 0 {
			return false, fmt.Errorf("status %s, %d running: %q", j.Status.Phase, j.Status.RunningWorkers, j.Status.Message)
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	stop()
	o.GangTimeout = 3 * time.Second
	k.startController(t, o)
	err = testenv.PollUntil(ctx, 60*time.Second, "a GangTimeout event", func(ctx context.Context) (bool, error) {
		return k.hasEvent(ctx, ns, "stuck", "GangTimeout", "2 of 2 workers not running 3s after this controller took over"), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if j := k.job(t, ns, "stuck"); j.Status.Preemptions < 1 {
		t.Errorf("stuck was not counted as preempted: %+v", j.Status)
	}
	k.occupyCPU(t, ns, nodes[0], false)
	k.waitSettled(t, ns, "stuck", 2)
}

// testGangTimeoutNoPods: the gang timeout waits for workers that have no
// pod while their operator is busy, but not when the operator says it
// cannot create them. A quota of one pod lets mpi-operator create the
// first worker of a two-worker job and refuses the second; the operator
// counts as busy all along (OperatorIdle of an hour), so only its Warning
// Event lets the timeout give the GPUs back. Without the quota the job runs.
func testGangTimeoutNoPods(t *testing.T, k *cluster) {
	const ns, gpu = "gangnopods", "gangnopods-gpu"
	k.scenario(t, ns, gpu, 1, 2)
	ctx := context.Background()
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "one-pod"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}},
	}
	k.create(t, quota)
	// Admission enforces a quota once the quota controller has counted it.
	err := testenv.PollUntil(ctx, 60*time.Second, "the quota counted", func(ctx context.Context) (bool, error) {
		err := k.c.Get(ctx, client.ObjectKeyFromObject(quota), quota)
		return err == nil && quota.Status.Hard != nil, err
	})
	if err != nil {
		t.Fatal(err)
	}
	o := controllerOpts(t, gpu)
	o.GangTimeout = 3 * time.Second
	o.OperatorIdle = time.Hour
	k.startController(t, o)
	k.create(t, newJob(ns, "stuck", gpu, 2, 2))
	const want = "2 of 2 workers not running 3s after they were placed; 1 without a pod (MPIJob stuck: MPIJobFailed: worker pod created failed: "
	err = testenv.PollUntil(ctx, 90*time.Second, "a GangTimeout event naming the quota", func(ctx context.Context) (bool, error) {
		return k.hasEvent(ctx, ns, "stuck", "GangTimeout", want) && k.hasEvent(ctx, ns, "stuck", "GangTimeout", "exceeded quota"), nil
	})
	if err != nil {
		t.Fatalf("%v; events %q", err, k.events(t, ns, "stuck"))
	}
	if err := k.c.Delete(ctx, quota); err != nil {
		t.Fatal(err)
	}
	k.waitSettled(t, ns, "stuck", 2)
}
