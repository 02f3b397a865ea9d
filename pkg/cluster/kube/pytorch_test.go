package kube_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vodascheduler/voda/internal/testenv"
	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/cluster/kube"
)

// newPyTorchJob returns a TrainingJob of the PyTorch runtime whose workers
// hold k GPUs each.
func newPyTorchJob(ns, name, gpuType string, min, max, k int32, opts ...jobOpt) *v1alpha1.TrainingJob {
	tj := &v1alpha1.TrainingJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.TrainingJobSpec{
			GPUType: gpuType, MinWorkers: min, MaxWorkers: max, GPUsPerWorker: k,
			Template: v1alpha1.TrainingJobTemplate{PyTorchJob: &v1alpha1.PyTorchJobTemplate{
				Worker: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "vision"}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: v1alpha1.PyTorchContainer,
						Image: "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime", Command: []string{"torchrun"}, Args: []string{"train.py"}}}},
				},
			}},
		},
	}
	for _, o := range opts {
		o(tj)
	}
	return tj
}

// workersComplete makes the job's workers succeed after d of running.
func workersComplete(d string) jobOpt {
	return func(tj *v1alpha1.TrainingJob) {
		tj.Spec.Template.PyTorchJob.Worker.Annotations = map[string]string{testenv.CompleteAfterAnnotation: d}
	}
}

// workersFail makes the job's workers exit with code 1 once they run.
func workersFail() jobOpt {
	return func(tj *v1alpha1.TrainingJob) {
		tj.Spec.Template.PyTorchJob.Worker.Annotations = map[string]string{testenv.ExitAnnotation: "fail", testenv.CompleteAfterAnnotation: "1s"}
	}
}

// pytorchJob returns a job's PyTorchJob.
func (k *cluster) pytorchJob(t *testing.T, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kube.PyTorchJobGVK)
	if err := k.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, u); err != nil {
		t.Fatal(err)
	}
	return u
}

// ptSettled checks that a PyTorch job runs as its status says: Running with
// n workers (any when n is 0), every worker pod running on its node with k
// GPUs, the PyTorchJob asking for n replicas, and the rendezvous the
// operator renders into every pod elastic over the job's worker range with
// k processes per node.
func (k *cluster) ptSettled(ctx context.Context, ns, name string, n int32) (bool, error) {
	tj := &v1alpha1.TrainingJob{}
	if err := k.c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, tj); err != nil {
		return false, err
	}
	s := tj.Status
	if s.Phase != v1alpha1.PhaseRunning || (n > 0 && s.Workers != n) || len(s.Placement) != int(s.Workers) || s.RunningWorkers != s.Workers {
		return false, fmt.Errorf("%s is %s with %d workers (%d running) on %v, want Running with %d: %s", name, s.Phase, s.Workers, s.RunningWorkers, s.Placement, n, s.Message)
	}
	kk := tj.Spec.GPUsPerWorker
	if s.GPUsPerWorker != kk || s.GPUs != s.Workers*kk {
		return false, fmt.Errorf("%s status counts %d GPUs, %d per worker; want %d×%d", name, s.GPUs, s.GPUsPerWorker, s.Workers, kk)
	}
	pj := &unstructured.Unstructured{}
	pj.SetGroupVersionKind(kube.PyTorchJobGVK)
	if err := k.c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, pj); err != nil {
		return false, err
	}
	if r, _, _ := unstructured.NestedInt64(pj.Object, "spec", "pytorchReplicaSpecs", "Worker", "replicas"); r != int64(s.Workers) {
		return false, fmt.Errorf("%s's PyTorchJob asks for %d workers, status says %d", name, r, s.Workers)
	}
	pods, err := k.workers(ctx, ns, name)
	if err != nil {
		return false, err
	}
	if len(pods) != int(s.Workers) {
		return false, fmt.Errorf("%s has %d worker pods, status says %d", name, len(pods), s.Workers)
	}
	nnodes := fmt.Sprintf("%d:%d", tj.Spec.MinWorkers, tj.Spec.MaxWorkers)
	// Voda's rendezvous settings, unless the template gives its own.
	lastCall, monitor := "3", "1"
	if v, ok := tj.Spec.Template.PyTorchJob.RendezvousConf["last_call_timeout"]; ok {
		lastCall = v
	}
	for _, e := range tj.Spec.Template.PyTorchJob.Worker.Spec.Containers[0].Env {
		if e.Name == "PET_MONITOR_INTERVAL" {
			monitor = e.Value
		}
	}
	for i, node := range s.Placement {
		p, ok := pods[i]
		if !ok || p.Status.Phase != corev1.PodRunning || p.Spec.NodeName != node {
			return false, fmt.Errorf("%s worker %d: pod %v phase %s on %q, want Running on %s", name, i, ok, p.Status.Phase, p.Spec.NodeName, node)
		}
		if p.Labels["team"] != "vision" {
			return false, fmt.Errorf("%s worker %d lost the template's labels: %v", name, i, p.Labels)
		}
		c := p.Spec.Containers[0]
		if q := c.Resources.Limits[v1alpha1.GPUResource]; q.Value() != int64(kk) {
			return false, fmt.Errorf("%s worker %d asks for %v GPUs, want %d", name, i, q.Value(), kk)
		}
		env := map[string]string{}
		for _, e := range c.Env {
			env[e.Name] = e.Value
		}
		if env["PET_NNODES"] != nnodes || env["PET_NPROC_PER_NODE"] != strconv.Itoa(int(kk)) ||
			env["PET_RDZV_BACKEND"] != "c10d" || env["VODA_GPUS_PER_WORKER"] != strconv.Itoa(int(kk)) ||
			env["PET_RDZV_CONF"] != "last_call_timeout="+lastCall || env["PET_MONITOR_INTERVAL"] != monitor {
			return false, fmt.Errorf("%s worker %d: torchrun's environment %v, want PET_NNODES=%s, PET_NPROC_PER_NODE=%d, c10d, last_call_timeout=%s, monitor interval %s",
				name, i, env, nnodes, kk, lastCall, monitor)
		}
	}
	return true, nil
}

func (k *cluster) waitPTSettled(t *testing.T, ns, name string, n int32) *v1alpha1.TrainingJob {
	t.Helper()
	err := testenv.PollUntil(context.Background(), 90*time.Second, name+" settled", func(ctx context.Context) (bool, error) {
		return k.ptSettled(ctx, ns, name, n)
	})
	if err != nil {
		t.Fatal(err)
	}
	return k.job(t, ns, name)
}

// overcommitted names a node whose pods (Voda's and others', not ended)
// ask for more GPUs than it has.
func (k *cluster) overcommitted(ctx context.Context, nodes []string) error {
	var pods corev1.PodList
	if err := k.c.List(ctx, &pods); err != nil {
		return err
	}
	used := map[string]int64{}
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, c := range p.Spec.Containers {
			q := c.Resources.Limits[v1alpha1.GPUResource]
			used[p.Spec.NodeName] += q.Value()
		}
	}
	for _, name := range nodes {
		var n corev1.Node
		if err := k.c.Get(ctx, types.NamespacedName{Name: name}, &n); err != nil {
			return err
		}
		q := n.Status.Allocatable[v1alpha1.GPUResource]
		if used[name] > q.Value() {
			return fmt.Errorf("node %s runs pods asking for %d GPUs, it has %d", name, used[name], q.Value())
		}
	}
	return nil
}

// watchOvercommit checks every 200 ms, until the test ends, that no node
// runs pods asking for more GPUs than it has.
func (k *cluster) watchOvercommit(t *testing.T, nodes []string) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if err := k.overcommitted(ctx, nodes); err != nil && ctx.Err() == nil {
				t.Errorf("over-committed: %v", err)
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// testPyTorch: PyTorch jobs of 2- and 4-GPU workers and 1-GPU MPIJobs share
// 4-GPU nodes under one policy: they start, grow and shrink (the PyTorchJob
// follows, torchrun's rendezvous stays elastic over the job's range), no
// node is ever over-committed, and jobs complete and fail.
func testPyTorch(t *testing.T, k *cluster) {
	const ns, gpu = "pytorch", "pytorch-gpu"
	nodes := k.scenario(t, ns, gpu, 4, 4)
	k.watchOvercommit(t, nodes)
	k.startController(t, controllerOpts(t, gpu)) // ElasticFIFO

	k.create(t, newPyTorchJob(ns, "a", gpu, 1, 4, 2))
	a := k.waitPTSettled(t, ns, "a", 4)
	if a.Status.GPUs != 8 {
		t.Errorf("a holds %d GPUs, want 8", a.Status.GPUs)
	}
	k.create(t, newPyTorchJob(ns, "quad", gpu, 2, 2, 4))
	k.waitPTSettled(t, ns, "quad", 2)
	// A 1-GPU MPIJob: minimums first (a 1×2, quad 2×4, mpi 1), then the
	// rest round-robin: a shrinks to 3 workers, mpi grows to 2.
	time.Sleep(time.Second) // after quad, in submission order
	k.create(t, newJob(ns, "mpi", gpu, 1, 4))
	err := testenv.PollUntil(context.Background(), 120*time.Second, "a at 3, quad at 2, mpi at 2", func(ctx context.Context) (bool, error) {
		for name, n := range map[string]int32{"a": 3, "quad": 2} {
			if ok, err := k.ptSettled(ctx, ns, name, n); !ok {
				return false, err
			}
		}
		return k.settled(ctx, ns, "mpi", 2)
	})
	if err != nil {
		t.Fatal(err)
	}
	k.expectEvents(t, ns, "a", map[string]int{"Started:": 1, "Scaled: Scaled 4→3 workers": 1})

	// quad leaves: a grows back to its maximum, the PyTorchJob with it.
	if err := k.c.Delete(context.Background(), k.job(t, ns, "quad")); err != nil {
		t.Fatal(err)
	}
	k.waitPTSettled(t, ns, "a", 4)
	k.expectEvents(t, ns, "a", map[string]int{"Scaled: Scaled 3→4 workers": 1})

	// Completion and failure come from the PyTorchJob's conditions.
	k.create(t, newPyTorchJob(ns, "done", gpu, 1, 1, 1, workersComplete("3s")),
		newPyTorchJob(ns, "broken", gpu, 1, 1, 1, workersFail()))
	k.waitPhase(t, ns, "done", v1alpha1.PhaseCompleted)
	k.waitPhase(t, ns, "broken", v1alpha1.PhaseFailed)
}

// testPyTorchLifecycle: a PyTorch job of 4-GPU workers migrates off a lost
// node, is preempted (PyTorchJob suspended, no pods) and resumed by
// Tiresias, and survives a controller restart untouched.
func testPyTorchLifecycle(t *testing.T, k *cluster) {
	const ns, gpu = "pytorch-life", "pytorch-life-gpu"
	nodes := k.scenario(t, ns, gpu, 3, 4)
	k.watchOvercommit(t, nodes)
	o := controllerOpts(t, gpu)
	o.Policy = "Tiresias"
	o.Algorithm = algorithm.DefaultConfig()
	o.Algorithm.Tiresias.Thresholds = []float64{60}
	o.Algorithm.Tiresias.PromoteKnob = 0
	_, stop := k.startController(t, o)

	k.create(t, newPyTorchJob(ns, "j1", gpu, 2, 2, 4))
	before := k.waitPTSettled(t, ns, "j1", 2)
	from := before.Status.Placement[0]
	old := podUIDs(t, k, ns, "j1")
	k.setLabel(t, from, "")
	after := k.waitSettledOffPT(t, ns, "j1", 2, from)
	// Worker 0 holds torchrun's rendezvous: moving it alone would make
	// worker 1's torchrun exit 1 and fail the job, so both are new pods.
	err := testenv.PollUntil(context.Background(), 60*time.Second, "j1 restarted as a whole", func(ctx context.Context) (bool, error) {
		if ok, err := k.ptSettled(ctx, ns, "j1", 2); !ok {
			return false, err
		}
		if now := podUIDs(t, k, ns, "j1"); len(now) != 2 || slices.Contains(now, old[0]) || slices.Contains(now, old[1]) {
			return false, fmt.Errorf("workers %v, were %v", now, old)
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	k.expectEvents(t, ns, "j1", map[string]int{"Migrated: Migrated worker-0 " + from + "→": 1,
		"Restarted: Restarting all 2 workers: worker 0 moves to ": 1})
	k.setLabel(t, from, gpu)

	// Demoted after 60 GPU-s (8 s at 8 GPUs), j1 gives way to j2, which needs
	// two of the three nodes.
	err = testenv.PollUntil(context.Background(), 60*time.Second, "j1 demoted", func(ctx context.Context) (bool, error) {
		return k.job(t, ns, "j1").Status.Queue == 1, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	k.create(t, newPyTorchJob(ns, "j2", gpu, 2, 2, 4, workersComplete("5s")))
	k.waitPTSettled(t, ns, "j2", 2)
	err = testenv.PollUntil(context.Background(), 60*time.Second, "j1 suspended without workers", func(ctx context.Context) (bool, error) {
		pods, err := k.workers(ctx, ns, "j1")
		if err != nil {
			return false, err
		}
		suspended, _, _ := unstructuredBool(k.pytorchJob(t, ns, "j1"), "spec", "runPolicy", "suspend")
		j1 := k.job(t, ns, "j1")
		return suspended && len(pods) == 0 && j1.Status.Phase == v1alpha1.PhaseWaiting, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	k.waitPhase(t, ns, "j2", v1alpha1.PhaseCompleted)
	resumed := k.waitPTSettled(t, ns, "j1", 2)
	k.expectEvents(t, ns, "j1", map[string]int{"Started:": 1, "Preempted:": 1, "Resumed:": 1})
	_ = after

	// A controller restart leaves the running job alone.
	pods := podUIDs(t, k, ns, "j1")
	uid := k.pytorchJob(t, ns, "j1").GetUID()
	stop()
	time.Sleep(2 * time.Second)
	k.startController(t, o)
	again := k.waitPTSettled(t, ns, "j1", 2)
	if !slices.Equal(again.Status.Placement, resumed.Status.Placement) || !slices.Equal(podUIDs(t, k, ns, "j1"), pods) ||
		k.pytorchJob(t, ns, "j1").GetUID() != uid {
		t.Errorf("the restart moved or recreated j1: %v → %v", resumed.Status.Placement, again.Status.Placement)
	}
}

// waitSettledOffPT waits until a PyTorch job has settled on nodes other
// than off.
func (k *cluster) waitSettledOffPT(t *testing.T, ns, name string, n int32, off string) *v1alpha1.TrainingJob {
	t.Helper()
	return k.waitOff(t, ns, name, n, off, k.ptSettled)
}

// testPyTorchGangTimeout: a PyTorch job whose workers a node refuses (its
// CPUs are all held by a pod that is not Voda's) gives
// its GPUs back after the gang timeout, with an Event, its status Starting
// (never Running) meanwhile, and runs once the node takes pods again.
func testPyTorchGangTimeout(t *testing.T, k *cluster) {
	const ns, gpu = "pytorch-gang", "pytorch-gang-gpu"
	nodes := k.scenario(t, ns, gpu, 1, 4)
	ctx := context.Background()
	k.occupyCPU(t, ns, nodes[0], true)
	o := controllerOpts(t, gpu)
	o.GangTimeout = 4 * time.Second
	k.startController(t, o)
	stuck := newPyTorchJob(ns, "stuck", gpu, 2, 2, 2)
	stuck.Spec.Template.PyTorchJob.Worker.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resourceOf("1")}
	k.create(t, stuck)
	err := testenv.PollUntil(ctx, 60*time.Second, "stuck Starting", func(ctx context.Context) (bool, error) {
		j := k.job(t, ns, "stuck")
		return j.Status.Phase == v1alpha1.PhaseStarting && j.Status.RunningWorkers == 0 && len(j.Status.Placement) == 2, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = testenv.PollUntil(ctx, 60*time.Second, "a GangTimeout event", func(ctx context.Context) (bool, error) {
		return k.hasEvent(ctx, ns, "stuck", "GangTimeout", "2 of 2 workers not running 4s after they were let go to their nodes"), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	k.occupyCPU(t, ns, nodes[0], false)
	k.waitPTSettled(t, ns, "stuck", 2)
}

var schemaCRD = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// testPyTorchWithoutOperator: a controller on a cluster where the
// PyTorchJob kind is not served refuses PyTorch jobs by name and runs the
// others. Run last: it removes the CRD.
func testPyTorchWithoutOperator(t *testing.T, k *cluster) {
	const ns, gpu = "no-pytorch", "no-pytorch-gpu"
	k.scenario(t, ns, gpu, 1, 4)
	ctx := context.Background()
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(schemaCRD)
	crd.SetName("pytorchjobs.kubeflow.org")
	if err := k.c.Delete(ctx, crd); err != nil {
		t.Fatal(err)
	}
	// Gone from the API and from discovery, which the controller's REST
	// mapper reads and which the API server updates a moment after the
	// CRD object goes.
	dc, err := discovery.NewDiscoveryClientForConfig(k.env.Config)
	if err != nil {
		t.Fatal(err)
	}
	err = testenv.PollUntil(ctx, 60*time.Second, "the PyTorchJob kind gone", func(ctx context.Context) (bool, error) {
		if err := k.c.Get(ctx, client.ObjectKeyFromObject(crd), crd); err == nil {
			return false, nil
		}
		rs, err := dc.ServerResourcesForGroupVersion("kubeflow.org/v1")
		if err != nil {
			return apierrors.IsNotFound(err), nil
		}
		for _, r := range rs.APIResources {
			if r.Name == "pytorchjobs" {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	k.startController(t, controllerOpts(t, gpu))
	k.create(t, newPyTorchJob(ns, "pt", gpu, 1, 1, 1), newJob(ns, "mpi", gpu, 1, 1))
	j := k.waitPhase(t, ns, "pt", v1alpha1.PhaseFailed)
	if want := "refused: the PyTorchJob kind (kubeflow.org/v1) is not installed in this cluster"; len(j.Status.Message) < len(want) || j.Status.Message[:len(want)] != want {
		t.Errorf("message %q, want it to start with %q", j.Status.Message, want)
	}
	k.waitSettled(t, ns, "mpi", 1)
}

// testWorkerGPUsMismatch: a job created with kubectl whose template asks for
// other GPUs than spec.gpusPerWorker is refused by name, nothing created.
func testWorkerGPUsMismatch(t *testing.T, k *cluster) {
	const ns, gpu = "mismatch", "mismatch-gpu"
	k.scenario(t, ns, gpu, 1, 4)
	c, _ := k.startController(t, controllerOpts(t, gpu))
	tj := newPyTorchJob(ns, "bad", gpu, 1, 1, 2)
	tj.Spec.Template.PyTorchJob.Worker.Spec.Containers[0].Resources.Limits = corev1.ResourceList{v1alpha1.GPUResource: resource.MustParse("4")}
	derived := newJob(ns, "two", gpu, 1, 1)
	derived.Spec.Template.MPIJob.Worker.Spec.Containers[0].Resources.Limits = corev1.ResourceList{v1alpha1.GPUResource: resource.MustParse("2")}
	// A worker template that picks its own node would fight placement.
	pinned := newJob(ns, "pinned", gpu, 1, 1)
	pinned.Spec.Template.MPIJob.Worker.Spec.NodeName = "mismatch-gpu-0"
	// A copy-paste slip: another vendor's GPUs, which no node of the type
	// offers; its workers would stay Pending on the GPUs Voda gave them.
	amd := newPyTorchJob(ns, "amd", gpu, 1, 1, 2)
	amd.Spec.Template.PyTorchJob.Worker.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"amd.com/gpu": resource.MustParse("2")}
	k.create(t, tj, derived, pinned, amd)
	for name, want := range map[string]string{
		"bad":    "refused: spec.gpusPerWorker is 2 but spec.template.pytorchJob.worker.spec asks for 4 nvidia.com/gpu per worker",
		"pinned": "refused: spec.template.mpiJob.worker.spec.nodeName: Voda chooses each worker's node",
		"amd":    "refused: spec.template.pytorchJob.worker.spec.containers[0].resources.limits[amd.com/gpu]: amd.com/gpu is another GPU type's or vendor's accelerator",
	} {
		j := k.waitPhase(t, ns, name, v1alpha1.PhaseFailed)
		if len(j.Status.Message) < len(want) || j.Status.Message[:len(want)] != want {
			t.Errorf("%s: message %q, want it to start with %q", name, j.Status.Message, want)
		}
		k.expectEvents(t, ns, name, map[string]int{"InvalidSpec:": 1})
	}
	// The MPIJob's worker asks for 2 GPUs: Voda counts 2, not 1.
	two := k.waitSettled(t, ns, "two", 1)
	if two.Status.GPUs != 2 || two.Status.GPUsPerWorker != 2 {
		t.Errorf("two holds %d GPUs, %d per worker; want 2 and 2", two.Status.GPUs, two.Status.GPUsPerWorker)
	}
	// Deleted, the refused jobs are forgotten; "pinned" created again
	// under its name is a new job and is refused again, once.
	ctx := context.Background()
	for _, name := range []string{"bad", "pinned", "amd"} {
		if err := k.c.Delete(ctx, &v1alpha1.TrainingJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	err := testenv.PollUntil(ctx, 30*time.Second, "refused jobs forgotten", func(context.Context) (bool, error) {
		if n := c.Refused(); n != 0 {
			return false, fmt.Errorf("the controller remembers %d refused jobs", n)
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	again := newJob(ns, "pinned", gpu, 1, 1)
	again.Spec.Template.MPIJob.Worker.Spec.NodeName = "mismatch-gpu-0"
	k.create(t, again)
	if j := k.waitPhase(t, ns, "pinned", v1alpha1.PhaseFailed); j.UID == pinned.UID {
		t.Error("pinned was not created again")
	}
	// The controller remembers a refusal once its status is written: the
	// test may see Failed a moment before.
	err = testenv.PollUntil(ctx, 10*time.Second, "pinned remembered as refused", func(context.Context) (bool, error) {
		if n := c.Refused(); n != 1 {
			return false, fmt.Errorf("the controller remembers %d refused jobs, want 1", n)
		}
		return true, nil
	})
	if err != nil {
		t.Error(err)
	}
}

// testAccelerators: GPU types that schedule other resources — AMD GPUs, MIG
// slices, CPU cores — each counted from its nodes' allocatable, each job's
// workers asking for that resource; a pod that is not Voda's taking cores
// of the CPU node is planned around.
func testAccelerators(t *testing.T, k *cluster) {
	const ns = "accelerators"
	ctx := context.Background()
	k.scenario(t, ns, "acc-nvidia", 1, 4)
	nodes, err := k.env.CreateGPUNodes(ctx,
		testenv.NodeSpec{GPUType: "acc-amd", Count: 1, GPUs: 4, Resource: "amd.com/gpu"},
		testenv.NodeSpec{GPUType: "acc-mig", Count: 1, GPUs: 7, Resource: "nvidia.com/mig-1g.10gb"},
		testenv.NodeSpec{GPUType: "acc-cpu", Count: 1, GPUs: 8, Resource: corev1.ResourceCPU})
	if err != nil {
		t.Fatal(err)
	}
	// A pod that is not Voda's holds 2 of the CPU node's 8 cores.
	k.create(t, nodePod(ns, "notebook", nodes[2], corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")}}))
	o := controllerOpts(t, "acc-nvidia", "acc-amd", "acc-mig", "acc-cpu")
	o.Accelerators = v1alpha1.Accelerators{"acc-amd": "amd.com/gpu", "acc-mig": "nvidia.com/mig-1g.10gb", "acc-cpu": corev1.ResourceCPU}
	k.startController(t, o)
	k.create(t,
		newPyTorchJob(ns, "nv", "acc-nvidia", 1, 4, 2),
		newPyTorchJob(ns, "amd", "acc-amd", 1, 4, 2),
		newJob(ns, "mig", "acc-mig", 1, 8),
		newPyTorchJob(ns, "cpu", "acc-cpu", 1, 4, 2))
	want := map[string]struct {
		workers int32
		res     corev1.ResourceName
		per     int64
	}{
		"nv": {2, v1alpha1.GPUResource, 2}, "amd": {2, "amd.com/gpu", 2}, "mig": {7, "nvidia.com/mig-1g.10gb", 1},
		// 8 cores less the notebook's 2 (1.5, rounded up): 3 workers of 2.
		"cpu": {3, corev1.ResourceCPU, 2},
	}
	err = testenv.PollUntil(ctx, 120*time.Second, "every job settled on its resource", func(ctx context.Context) (bool, error) {
		for name, w := range want {
			tj := &v1alpha1.TrainingJob{}
			if err := k.c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, tj); err != nil {
				return false, err
			}
			if tj.Status.Phase != v1alpha1.PhaseRunning || tj.Status.Workers != w.workers || tj.Status.GPUs != w.workers*int32(w.per) {
				return false, fmt.Errorf("%s is %s with %d workers (%d units): %s", name, tj.Status.Phase, tj.Status.Workers, tj.Status.GPUs, tj.Status.Message)
			}
			pods, err := k.workers(ctx, ns, name)
			if err != nil {
				return false, err
			}
			for i, p := range pods {
				c := p.Spec.Containers[0]
				q := c.Resources.Limits[w.res]
				if v1alpha1.Units(q, w.res) != w.per || p.Status.Phase != corev1.PodRunning {
					return false, fmt.Errorf("%s worker %d: %s, limits %v, want %d %s", name, i, p.Status.Phase, c.Resources.Limits, w.per, w.res)
				}
				if _, ok := c.Resources.Limits[v1alpha1.GPUResource]; ok && w.res != v1alpha1.GPUResource {
					return false, fmt.Errorf("%s worker %d asks for NVIDIA GPUs: %v", name, i, c.Resources.Limits)
				}
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
