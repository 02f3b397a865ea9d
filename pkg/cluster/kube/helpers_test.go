package kube_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vodascheduler/voda/internal/testenv"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/cluster/kube"
)

// cluster is one control plane shared by the integration scenarios; each
// scenario uses its own namespace and GPU type, so their engines never meet.
//
// The tests act as cluster admins (c); the controllers they start act as
// the Helm chart's ServiceAccount (ctrlConfig), so every scenario also
// checks that the chart's RBAC rules are enough.
type cluster struct {
	env        *testenv.Env
	c          client.Client
	ctrlConfig *rest.Config
}

// releaseNS is where the chart's ServiceAccount lives in these tests.
const releaseNS = "voda-system"

func newCluster(t *testing.T) *cluster {
	env := testenv.New(t, testenv.Options{})
	c, err := client.New(env.Config, client.Options{Scheme: kube.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := env.CreateNamespace(ctx, releaseNS); err != nil {
		t.Fatal(err)
	}
	cfg, err := env.ChartIdentity(ctx, releaseNS)
	if err != nil {
		t.Fatal(err)
	}
	return &cluster{env: env, c: c, ctrlConfig: cfg}
}

// scenario prepares a namespace and GPU nodes of one type.
func (k *cluster) scenario(t *testing.T, ns, gpuType string, nodes, gpus int) []string {
	t.Helper()
	ctx := context.Background()
	if err := k.env.CreateNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	// Leases and the settings ConfigMap live in the scenario's namespace.
	if err := k.env.GrantChartNamespaced(ctx, releaseNS, ns); err != nil {
		t.Fatal(err)
	}
	names, err := k.env.CreateGPUNodes(ctx, testenv.NodeSpec{GPUType: gpuType, Count: nodes, GPUs: gpus})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// controllerOpts are the options of a test controller: quick to react.
func controllerOpts(t *testing.T, gpuTypes ...string) kube.ManagerOptions {
	return kube.ManagerOptions{
		Options: kube.Options{
			GPUTypes: gpuTypes,
			// The scenarios below expect ElasticFIFO's sizes; the chart's
			// test runs the default (deploy/helm).
			Policy:     kube.OriginalPolicy,
			RateLimit:  500 * time.Millisecond,
			SyncPeriod: 2 * time.Second,
			Log:        testLogger(t),
		},
		MetricsAddr: "0",
		HealthAddr:  "0",
	}
}

// startController runs a controller in the test's process; stop ends it
// like a killed process (without releasing its lease).
func (k *cluster) startController(t *testing.T, o kube.ManagerOptions) (c *kube.Controller, stop func()) {
	t.Helper()
	return k.startControllerAs(t, k.ctrlConfig, o)
}

// startControllerAs is startController with another identity.
func (k *cluster) startControllerAs(t *testing.T, cfg *rest.Config, o kube.ManagerOptions) (c *kube.Controller, stop func()) {
	t.Helper()
	mgr, c, err := kube.NewManager(cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("controller: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return c, stop
}

// testLogger writes the controller's log into the test's log while the test
// runs.
func testLogger(t *testing.T) logr.Logger {
	var mu sync.Mutex
	done := false
	t.Cleanup(func() { mu.Lock(); done = true; mu.Unlock() })
	return logr.New(&tlog{t: t, mu: &mu, done: &done})
}

type tlog struct {
	t      *testing.T
	mu     *sync.Mutex
	done   *bool
	name   string
	values []any
}

func (l *tlog) Init(logr.RuntimeInfo)  {}
func (l *tlog) Enabled(level int) bool { return level == 0 }
func (l *tlog) Info(_ int, msg string, kv ...any) {
	l.log("I", msg, kv)
}
func (l *tlog) Error(err error, msg string, kv ...any) {
	l.log("E", msg+": "+err.Error(), kv)
}
func (l *tlog) log(lvl, msg string, kv []any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !*l.done {
		l.t.Logf("%s %s %s %v", lvl, l.name, msg, append(slices.Clone(l.values), kv...))
	}
}
func (l *tlog) WithValues(kv ...any) logr.LogSink {
	c := *l
	c.values = append(slices.Clone(l.values), kv...)
	return &c
}
func (l *tlog) WithName(n string) logr.LogSink {
	c := *l
	c.name = strings.TrimPrefix(l.name+"/"+n, "/")
	return &c
}

// jobOpt changes a test TrainingJob.
type jobOpt func(*v1alpha1.TrainingJob)

// launcherCompletesAfter makes the launcher (and so the job) succeed after d
// of running.
func launcherCompletesAfter(d string) jobOpt {
	return func(tj *v1alpha1.TrainingJob) {
		tj.Spec.Template.MPIJob.Launcher.Annotations = map[string]string{testenv.CompleteAfterAnnotation: d}
	}
}

// launcherFails makes the launcher fail once it runs, with no retry.
func launcherFails() jobOpt {
	return func(tj *v1alpha1.TrainingJob) {
		zero := int32(0)
		tj.Spec.Template.MPIJob.BackoffLimit = &zero
		tj.Spec.Template.MPIJob.Launcher.Annotations = map[string]string{testenv.ExitAnnotation: "fail", testenv.CompleteAfterAnnotation: "1s"}
	}
}

// workerCPU makes every worker request CPUs.
func workerCPU(q string) jobOpt {
	return func(tj *v1alpha1.TrainingJob) {
		c := &tj.Spec.Template.MPIJob.Worker.Spec.Containers[0]
		c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resourceOf(q)}
	}
}

func requested(n int32) jobOpt {
	return func(tj *v1alpha1.TrainingJob) { tj.Spec.RequestedWorkers = n }
}

// newJob returns a TrainingJob running a Horovod-style image.
func newJob(ns, name, gpuType string, min, max int32, opts ...jobOpt) *v1alpha1.TrainingJob {
	container := func(name string) []corev1.Container {
		return []corev1.Container{{Name: name, Image: "horovod/horovod:0.28.1", Command: []string{"python", "train.py"}}}
	}
	tj := &v1alpha1.TrainingJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.TrainingJobSpec{
			GPUType: gpuType, MinWorkers: min, MaxWorkers: max,
			Template: v1alpha1.TrainingJobTemplate{MPIJob: &v1alpha1.MPIJobTemplate{
				Launcher: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: container("launcher")}},
				Worker: corev1.PodTemplateSpec{
					// The template's metadata must reach the pods (the CRD keeps it).
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "vision"}},
					Spec:       corev1.PodSpec{Containers: container("worker")},
				},
			}},
		},
	}
	for _, o := range opts {
		o(tj)
	}
	return tj
}

func (k *cluster) create(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := k.c.Create(context.Background(), o); err != nil {
			t.Fatalf("create %s: %v", o.GetName(), err)
		}
	}
}

func (k *cluster) job(t *testing.T, ns, name string) *v1alpha1.TrainingJob {
	t.Helper()
	tj := &v1alpha1.TrainingJob{}
	if err := k.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, tj); err != nil {
		t.Fatal(err)
	}
	return tj
}

// workers returns a job's live worker pods by index.
func (k *cluster) workers(ctx context.Context, ns, name string) (map[int]corev1.Pod, error) {
	var pods corev1.PodList
	if err := k.c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{v1alpha1.JobLabel: name}); err != nil {
		return nil, err
	}
	out := map[int]corev1.Pod{}
	for _, p := range pods.Items {
		var i int
		if _, err := fmt.Sscanf(strings.TrimPrefix(p.Name, name+"-worker-"), "%d", &i); err != nil || !strings.HasPrefix(p.Name, name+"-worker-") {
			continue
		}
		if p.DeletionTimestamp == nil {
			out[i] = p
		}
	}
	return out, nil
}

// settled checks that a job runs as its status says: Running with n workers
// (any n > 0 when n is 0), every worker pod running on the node its status
// places it on, no other worker left, and discover_hosts.sh listing exactly
// those workers.
func (k *cluster) settled(ctx context.Context, ns, name string, n int32) (bool, error) {
	tj := &v1alpha1.TrainingJob{}
	if err := k.c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, tj); err != nil {
		return false, err
	}
	s := tj.Status
	if s.Phase != v1alpha1.PhaseRunning || (n > 0 && s.Workers != n) || len(s.Placement) != int(s.Workers) {
		return false, fmt.Errorf("%s is %s with %d workers on %v, want Running with %d", name, s.Phase, s.Workers, s.Placement, n)
	}
	pods, err := k.workers(ctx, ns, name)
	if err != nil {
		return false, err
	}
	if len(pods) != int(s.Workers) {
		return false, fmt.Errorf("%s has %d worker pods, status says %d", name, len(pods), s.Workers)
	}
	var want []string
	for i, node := range s.Placement {
		p, ok := pods[i]
		if ok && p.Labels["team"] != "vision" {
			return false, fmt.Errorf("%s worker %d lost the template's labels: %v", name, i, p.Labels)
		}
		if !ok || p.Status.Phase != corev1.PodRunning || p.Spec.NodeName != node {
			return false, fmt.Errorf("%s worker %d: pod %v phase %s on %q, want Running on %s", name, i, ok, p.Status.Phase, p.Spec.NodeName, node)
		}
		want = append(want, fmt.Sprintf("echo %s-worker-%d.%s.%s.svc", name, i, name, ns))
	}
	slices.Sort(want)
	var cm corev1.ConfigMap
	if err := k.c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name + "-config"}, &cm); err != nil {
		return false, err
	}
	got := strings.Split(strings.TrimSpace(strings.TrimPrefix(cm.Data["discover_hosts.sh"], "#!/bin/sh\n")), "\n")
	if !slices.Equal(got, want) {
		return false, fmt.Errorf("%s discover_hosts.sh lists %q, want %q", name, got, want)
	}
	return true, nil
}

func (k *cluster) waitSettled(t *testing.T, ns, name string, n int32) *v1alpha1.TrainingJob {
	t.Helper()
	err := testenv.PollUntil(context.Background(), 90*time.Second, name+" settled", func(ctx context.Context) (bool, error) {
		return k.settled(ctx, ns, name, n)
	})
	if err != nil {
		t.Fatal(err)
	}
	return k.job(t, ns, name)
}

// waitAllSettled waits until every named job has settled at the same time,
// holding gpus GPUs together.
func (k *cluster) waitAllSettled(t *testing.T, ns string, names []string, gpus int32) {
	t.Helper()
	err := testenv.PollUntil(context.Background(), 120*time.Second, fmt.Sprintf("%v settled on %d GPUs", names, gpus), func(ctx context.Context) (bool, error) {
		var total int32
		for _, name := range names {
			if ok, err := k.settled(ctx, ns, name, 0); !ok {
				return false, err
			}
			total += k.job(t, ns, name).Status.Workers
		}
		if total != gpus {
			return false, fmt.Errorf("%v hold %d GPUs, want %d", names, total, gpus)
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// waitSettledOff waits until a job has settled on nodes other than off.
func (k *cluster) waitSettledOff(t *testing.T, ns, name string, n int32, off string) *v1alpha1.TrainingJob {
	t.Helper()
	return k.waitOff(t, ns, name, n, off, k.settled)
}

// waitOff waits until settled says a job has settled, on nodes other than
// off.
func (k *cluster) waitOff(t *testing.T, ns, name string, n int32, off string, settled func(ctx context.Context, ns, name string, n int32) (bool, error)) *v1alpha1.TrainingJob {
	t.Helper()
	err := testenv.PollUntil(context.Background(), 90*time.Second, name+" settled off "+off, func(ctx context.Context) (bool, error) {
		if ok, err := settled(ctx, ns, name, n); !ok {
			return false, err
		}
		if p := k.job(t, ns, name).Status.Placement; slices.Contains(p, off) {
			return false, fmt.Errorf("%s still placed on %s: %v", name, off, p)
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return k.job(t, ns, name)
}

func (k *cluster) waitPhase(t *testing.T, ns, name string, phase v1alpha1.Phase) *v1alpha1.TrainingJob {
	t.Helper()
	err := testenv.PollUntil(context.Background(), 90*time.Second, name+" "+string(phase), func(ctx context.Context) (bool, error) {
		tj := &v1alpha1.TrainingJob{}
		if err := k.c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, tj); err != nil {
			return false, err
		}
		if tj.Status.Phase != phase {
			return false, fmt.Errorf("%s is %s (%s)", name, tj.Status.Phase, tj.Status.Message)
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return k.job(t, ns, name)
}

// mpiJob returns a job's MPIJob.
func (k *cluster) mpiJob(t *testing.T, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kube.MPIJobGVK)
	if err := k.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, u); err != nil {
		t.Fatal(err)
	}
	return u
}

// events returns the reasons and messages of the Events on a job, oldest
// first.
func (k *cluster) events(t *testing.T, ns, name string) []string {
	t.Helper()
	var list corev1.EventList
	if err := k.c.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(list.Items, func(a, b corev1.Event) int { return a.FirstTimestamp.Compare(b.FirstTimestamp.Time) })
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == "TrainingJob" && e.InvolvedObject.Name == name {
			for range max(e.Count, 1) {
				out = append(out, e.Reason+": "+e.Message)
			}
		}
	}
	return out
}

// expectEvents waits until a job's Events count as want says, by prefix
// ("Started:" → 1): Events are sent asynchronously.
func (k *cluster) expectEvents(t *testing.T, ns, name string, want map[string]int) {
	t.Helper()
	var ev []string
	ok := func() bool {
		ev = k.events(t, ns, name)
		for prefix, n := range want {
			if countPrefix(ev, prefix) != n {
				return false
			}
		}
		return true
	}
	for deadline := time.Now().Add(15 * time.Second); !ok(); {
		if time.Now().After(deadline) {
			t.Errorf("%s events %q, want %v", name, ev, want)
			var all corev1.EventList
			_ = k.c.List(context.Background(), &all)
			for _, e := range all.Items {
				if e.Reason == "Submitted" {
					t.Logf("EV %s %+v %s %s", e.Namespace, e.InvolvedObject, e.Reason, e.Message)
				}
			}
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func countPrefix(list []string, prefix string) int {
	n := 0
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			n++
		}
	}
	return n
}

// completeLauncher makes a job's running launcher succeed now.
func (k *cluster) completeLauncher(t *testing.T, ns, name string) {
	t.Helper()
	err := testenv.PollUntil(context.Background(), 60*time.Second, name+" launcher", func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		if err := k.c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{v1alpha1.JobLabel: name}); err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if strings.HasPrefix(p.Name, name+"-launcher") && p.Status.Phase == corev1.PodRunning {
				patch := []byte(`{"metadata":{"annotations":{"` + testenv.CompleteAfterAnnotation + `":"1s"}}}`)
				return true, k.c.Patch(ctx, &p, client.RawPatch(types.MergePatchType, patch))
			}
		}
		return false, fmt.Errorf("no running launcher for %s", name)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func unstructuredBool(u *unstructured.Unstructured, path ...string) (bool, bool, error) {
	return unstructured.NestedBool(u.Object, path...)
}

func unstructuredSlice(u *unstructured.Unstructured, path ...string) ([]any, bool, error) {
	return unstructured.NestedSlice(u.Object, path...)
}

// explain describes what keeps a job's MPIJob from moving on, for a failed
// wait: its pods (owner, phase, node, deletion, gates), the suspension of
// the MPIJob and of its launcher Job, and what mpi-operator last logged
// about the job (its syncs and their errors).
func (k *cluster) explain(ns, name string) string {
	ctx := context.Background()
	var b strings.Builder
	var pods corev1.PodList
	if err := k.c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{v1alpha1.JobLabel: name}); err != nil {
		fmt.Fprintf(&b, "pods: %v\n", err)
	}
	for _, p := range pods.Items {
		owner := "-"
		if ref := metav1.GetControllerOf(&p); ref != nil {
			owner = ref.Kind + "/" + ref.Name
		}
		deleting := ""
		if p.DeletionTimestamp != nil {
			deleting = " deleting since " + p.DeletionTimestamp.Format(time.TimeOnly)
		}
		fmt.Fprintf(&b, "pod %s: owner %s, %s on %q, created %s%s, %d gates\n", p.Name, owner, p.Status.Phase,
			p.Spec.NodeName, p.CreationTimestamp.Format(time.TimeOnly), deleting, len(p.Spec.SchedulingGates))
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kube.MPIJobGVK)
	if err := k.c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, u); err != nil {
		fmt.Fprintf(&b, "MPIJob: %v\n", err)
	} else {
		suspend, _, _ := unstructuredBool(u, "spec", "runPolicy", "suspend")
		replicas, _, _ := unstructured.NestedInt64(u.Object, "spec", "mpiReplicaSpecs", "Worker", "replicas")
		fmt.Fprintf(&b, "MPIJob: suspend %t, %d workers, resourceVersion %s\n", suspend, replicas, u.GetResourceVersion())
	}
	var launcher batchv1.Job
	if err := k.c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name + "-launcher"}, &launcher); err != nil {
		fmt.Fprintf(&b, "launcher Job: %v\n", err)
	} else {
		fmt.Fprintf(&b, "launcher Job: suspend %t, %d active, %d failed\n",
			launcher.Spec.Suspend != nil && *launcher.Spec.Suspend, launcher.Status.Active, launcher.Status.Failed)
	}
	fmt.Fprintf(&b, "mpi-operator on %s/%s:\n%s", ns, name, k.env.LogLines("mpi-operator", "'"+ns+"/"+name+"'", 20))
	return b.String()
}
