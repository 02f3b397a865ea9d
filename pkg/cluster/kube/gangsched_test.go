package kube_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	volcano "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/vodascheduler/voda/internal/testenv"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/cluster/kube"
)

var (
	spPodGroups = schema.GroupVersionResource{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Resource: "podgroups"}
	vcPodGroups = schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "podgroups"}
	vcQueues    = schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "queues"}
)

// gangScenario prepares a namespace and nodes for a controller that hands
// its gangs to a gang scheduler, and returns the identity of a chart
// release installed with that gang scheduler (its RBAC has the PodGroup
// rules the default release lacks).
func (k *cluster) gangScenario(t *testing.T, ns, gpu, gang string, nodes, gpus int) (*rest.Config, []string) {
	t.Helper()
	names := k.scenario(t, ns, gpu, nodes, gpus)
	ctx := context.Background()
	release := "voda-" + gang
	cfg, err := k.env.ReleaseIdentity(ctx, releaseNS, release, "scheduler.gangScheduler="+gang)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.env.GrantReleaseNamespaced(ctx, releaseNS, release, ns); err != nil {
		t.Fatal(err)
	}
	return cfg, names
}

// scaleRecord collects, from watches on the real API server, every value
// of a job's PodGroup minMember and MPIJob worker replicas with the
// resourceVersion that wrote it. Both kinds are stored in the same etcd,
// whose revisions the resourceVersions are, so sorting by them gives the
// order in which the writes happened.
type scaleRecord struct {
	mu     sync.Mutex
	writes []scaleWrite
}

type scaleWrite struct {
	rv    int64
	kind  string // "PodGroup" or "MPIJob"
	value int64  // minMember or worker replicas
}

func (k *cluster) recordScaling(t *testing.T, ns, job string, podGroups schema.GroupVersionResource) *scaleRecord {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	r := &scaleRecord{}
	for kind, res := range map[string]schema.GroupVersionResource{"PodGroup": podGroups, "MPIJob": testenv.MPIJobGVR} {
		w, err := k.env.Dynamic.Resource(res).Namespace(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + job})
		if err != nil {
			t.Fatal(err)
		}
		path := []string{"spec", "minMember"}
		if kind == "MPIJob" {
			path = []string{"spec", "mpiReplicaSpecs", "Worker", "replicas"}
		}
		go func() {
			defer w.Stop()
			for ev := range w.ResultChan() {
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok {
					continue
				}
				rv, _ := strconv.ParseInt(u.GetResourceVersion(), 10, 64)
				v, _, _ := unstructured.NestedInt64(u.Object, path...)
				r.mu.Lock()
				r.writes = append(r.writes, scaleWrite{rv: rv, kind: kind, value: v})
				r.mu.Unlock()
			}
		}()
	}
	return r
}

// check fails unless every worker count the MPIJob ever had was preceded
// by the PodGroup's minMember for it (workers + launcher), and returns the
// worker counts in order.
func (r *scaleRecord) check(t *testing.T) []int64 {
	t.Helper()
	r.mu.Lock()
	writes := slices.Clone(r.writes)
	r.mu.Unlock()
	slices.SortStableFunc(writes, func(a, b scaleWrite) int { return int(a.rv - b.rv) })
	var minMember int64 = -1
	var counts []int64
	for _, w := range writes {
		if w.kind == "PodGroup" {
			minMember = w.value
			continue
		}
		if len(counts) > 0 && counts[len(counts)-1] == w.value {
			continue // a write of something else (status, suspension)
		}
		counts = append(counts, w.value)
		if minMember != w.value+1 {
			t.Errorf("the MPIJob went to %d workers while the PodGroup's minMember was %d (writes %v)", w.value, minMember, writes)
		}
	}
	return counts
}

// testGangSchedulerPlugins: with --gang-scheduler=scheduler-plugins and
// the coscheduling scheduler running, a job's launcher and workers form a
// PodGroup of workers+1, are bound by the secondary scheduler, and
// minMember follows scale-in and scale-out, always before the replicas.
func testGangSchedulerPlugins(t *testing.T, k *cluster) {
	const ns, gpu = "gang-sp", "gang-sp-gpu"
	ctx := context.Background()
	if err := k.env.StartCoscheduling(ctx); err != nil {
		t.Fatal(err)
	}
	cfg, _ := k.gangScenario(t, ns, gpu, kube.GangSchedulerPlugins, 4, 1)
	rec := k.recordScaling(t, ns, "elastic", spPodGroups)
	o := controllerOpts(t, gpu)
	o.Gang = kube.Gang{Scheduler: kube.GangSchedulerPlugins}
	k.startControllerAs(t, cfg, o)

	k.create(t, newJob(ns, "elastic", gpu, 1, 4))
	k.waitSettled(t, ns, "elastic", 4)
	k.expectGang(t, ns, "elastic", 5)

	// Scale in: a rigid job takes 2 of the 4 GPUs.
	k.create(t, newJob(ns, "rigid", gpu, 2, 2))
	k.waitAllSettled(t, ns, []string{"elastic", "rigid"}, 4)
	k.expectGang(t, ns, "elastic", 3)
	k.expectGang(t, ns, "rigid", 3)

	// Scale out: the rigid job goes, the elastic one takes its GPUs back.
	if err := k.c.Delete(ctx, newJob(ns, "rigid", gpu, 2, 2)); err != nil {
		t.Fatal(err)
	}
	k.waitSettled(t, ns, "elastic", 4)
	k.expectGang(t, ns, "elastic", 5)

	time.Sleep(time.Second) // the last watch events
	if counts := rec.check(t); !slices.Equal(counts, []int64{4, 2, 4}) {
		t.Errorf("the MPIJob ran %v workers, want 4, 2, 4", counts)
	}
}

// expectGang checks a running job's gang under scheduler-plugins: its
// PodGroup asks for minMember pods, and the launcher and every worker are
// in it, scheduled by the secondary scheduler and bound.
func (k *cluster) expectGang(t *testing.T, ns, job string, minMember int64) {
	t.Helper()
	ctx := context.Background()
	err := testenv.PollUntil(ctx, 30*time.Second, job+"'s gang", func(ctx context.Context) (bool, error) {
		pg, err := k.env.Dynamic.Resource(spPodGroups).Namespace(ns).Get(ctx, job, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if m, _, _ := unstructured.NestedInt64(pg.Object, "spec", "minMember"); m != minMember {
			return false, fmt.Errorf("minMember %d, want %d", m, minMember)
		}
		if ref := metav1.GetControllerOf(pg); ref == nil || ref.Kind != "TrainingJob" || ref.Name != job {
			return false, fmt.Errorf("PodGroup owned by %+v", ref)
		}
		var pods corev1.PodList
		if err := k.c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{v1alpha1.JobLabel: job}); err != nil {
			return false, err
		}
		live := 0
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				continue
			}
			live++
			if p.Labels[testenv.PodGroupLabel] != job || p.Spec.SchedulerName != testenv.CoschedulerName || p.Spec.NodeName == "" {
				return false, fmt.Errorf("pod %s: group %q, scheduler %q, node %q", p.Name, p.Labels[testenv.PodGroupLabel], p.Spec.SchedulerName, p.Spec.NodeName)
			}
		}
		if int64(live) != minMember {
			return false, fmt.Errorf("%d pods, want %d", live, minMember)
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// testGangTimeoutUnderGangScheduler: Voda jobs and pods that are not
// Voda's compete for nodes. A batch pod holds all the CPUs of one of two
// 1-GPU nodes, and none of its GPUs: Voda, which counts GPUs, places a
// 2-worker job there, and that worker cannot be bound. With Voda's own
// gang, the other worker is bound and holds its GPU until the gang timeout
// requeues the job; under coscheduling no pod of the job is ever bound — no
// GPU is held at all — and the timeout still requeues it. Both run once the
// batch pod is gone.
func testGangTimeoutUnderGangScheduler(t *testing.T, k *cluster) {
	ctx := context.Background()
	if err := k.env.StartCoscheduling(ctx); err != nil {
		t.Fatal(err)
	}
	for _, gang := range []string{kube.GangNone, kube.GangSchedulerPlugins} {
		t.Run(gang, func(t *testing.T) {
			ns, gpu := "stuck-"+gang, "stuck-"+gang+"-gpu"
			cfg, nodes := k.gangScenario(t, ns, gpu, gang, 2, 1)
			hog := nodePod(ns, "preprocess", nodes[0], corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resourceOf("64")}})
			k.create(t, hog)
			o := controllerOpts(t, gpu)
			o.GangTimeout = 3 * time.Second
			o.Gang = kube.Gang{Scheduler: gang}
			k.startControllerAs(t, cfg, o)
			k.create(t, newJob(ns, "stuck", gpu, 2, 2, workerCPU("8")))
			bound := 0 // most pods of the job bound at once, sampled
			err := testenv.PollUntil(ctx, 60*time.Second, "a GangTimeout event", func(ctx context.Context) (bool, error) {
				var pods corev1.PodList
				if err := k.c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{v1alpha1.JobLabel: "stuck"}); err != nil {
					return false, err
				}
				n := 0
				for _, p := range pods.Items {
					if p.Spec.NodeName != "" && strings.Contains(p.Name, "-worker-") {
						n++
					}
				}
				bound = max(bound, n)
				return k.hasEvent(ctx, ns, "stuck", "GangTimeout", "not running 3s after they were let go to their nodes"), nil
			})
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case gang == kube.GangNone && bound != 1:
				t.Errorf("Voda's own gang: %d workers were bound while stuck, want the 1 on the free node", bound)
			case gang != kube.GangNone && bound != 0:
				t.Errorf("coscheduling: %d workers were bound while the gang could not start", bound)
			}
			if j := k.job(t, ns, "stuck"); j.Status.Preemptions < 1 {
				t.Errorf("stuck was not counted as preempted: %+v", j.Status)
			}
			if err := k.c.Delete(ctx, hog); err != nil {
				t.Fatal(err)
			}
			k.waitSettled(t, ns, "stuck", 2)
			t.Logf("%s: at most %d worker(s) bound while stuck; requeued by the gang timeout; runs once the batch pod is gone", gang, bound)
		})
	}
}

// occupyCPU has a pod that is not Voda's take every CPU of a node, or
// deletes it: Voda counts only the GPUs of such pods, so workers that ask
// for CPU are placed there and stay Pending ("Insufficient cpu") until it
// goes. What keeps them Pending can go away, so it is for the gang timeout,
// not for holding the job (unschedulable.go).
func (k *cluster) occupyCPU(t *testing.T, ns, node string, on bool) {
	t.Helper()
	ctx := context.Background()
	name := "cpu-hog-" + node
	if !on {
		if err := k.c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
		return
	}
	cpu := corev1.ResourceList{corev1.ResourceCPU: resourceOf("64")}
	k.create(t, nodePod(ns, name, node, corev1.ResourceRequirements{Requests: cpu, Limits: cpu}))
	err := testenv.PollUntil(ctx, 60*time.Second, name+" running", func(ctx context.Context) (bool, error) {
		var p corev1.Pod
		if err := k.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &p); err != nil {
			return false, err
		}
		return p.Status.Phase == corev1.PodRunning, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// hasEvent reports whether a job has a Warning Event of the reason whose
// message contains text.
func (k *cluster) hasEvent(ctx context.Context, ns, job, reason, text string) bool {
	var events corev1.EventList
	if err := k.c.List(ctx, &events, client.InNamespace(ns)); err != nil {
		return false
	}
	for _, e := range events.Items {
		if e.Reason == reason && e.InvolvedObject.Name == job && e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, text) {
			return true
		}
	}
	return false
}

// testGangVolcano: no Volcano scheduler runs here (its module is not on
// the proxy). Without Volcano's CRDs the controller refuses to start,
// saying what to install; with them (generated from volcano.sh/apis), the
// API server accepts Voda's Volcano PodGroup and the pods name it and the
// volcano scheduler — and, with no Volcano to bind them, stay pending.
func testGangVolcano(t *testing.T, k *cluster) {
	const ns, gpu = "gang-volcano", "gang-volcano-gpu"
	ctx := context.Background()
	cfg, _ := k.gangScenario(t, ns, gpu, kube.GangVolcano, 2, 2)
	o := controllerOpts(t, gpu)
	o.Gang = kube.Gang{Scheduler: kube.GangVolcano, Queue: "research"}

	mgr, _, err := kube.NewManager(cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	startCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	err = mgr.Start(startCtx)
	cancel()
	if err == nil || !strings.Contains(err.Error(), "needs the scheduling.volcano.sh/v1beta1 PodGroup CRD (podgroups.scheduling.volcano.sh)") {
		t.Fatalf("controller without Volcano's CRDs: %v", err)
	}

	if err := k.env.ApplyVolcanoCRDs(ctx); err != nil {
		t.Fatal(err)
	}
	queue := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
		"metadata": map[string]any{"name": "research"},
		"spec":     map[string]any{"weight": int64(1)},
	}}
	if _, err := k.env.Dynamic.Resource(vcQueues).Create(ctx, queue, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the Queue CRD: %v", err)
	}
	k.startControllerAs(t, cfg, o)
	k.create(t, newJob(ns, "bert", gpu, 3, 3))

	err = testenv.PollUntil(ctx, 60*time.Second, "bert's Volcano gang", func(ctx context.Context) (bool, error) {
		u, err := k.env.Dynamic.Resource(vcPodGroups).Namespace(ns).Get(ctx, "bert", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		var pg volcano.PodGroup
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &pg); err != nil {
			return false, err
		}
		if pg.Spec.MinMember != 4 || pg.Spec.Queue != "research" {
			return false, fmt.Errorf("PodGroup spec %+v", pg.Spec)
		}
		if ref := metav1.GetControllerOf(&pg); ref == nil || ref.Kind != "TrainingJob" || ref.Name != "bert" {
			return false, fmt.Errorf("PodGroup owned by %+v", ref)
		}
		var pods corev1.PodList
		if err := k.c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{v1alpha1.JobLabel: "bert"}); err != nil {
			return false, err
		}
		if len(pods.Items) != 4 {
			return false, fmt.Errorf("%d pods, want the launcher and 3 workers", len(pods.Items))
		}
		for _, p := range pods.Items {
			switch {
			case p.Annotations["scheduling.k8s.io/group-name"] != "bert" || p.Spec.SchedulerName != "volcano":
				return false, fmt.Errorf("pod %s: group %q, scheduler %q", p.Name, p.Annotations["scheduling.k8s.io/group-name"], p.Spec.SchedulerName)
			case len(p.Spec.SchedulingGates) > 0:
				return false, fmt.Errorf("pod %s still gated", p.Name)
			case p.Spec.NodeName != "":
				return false, fmt.Errorf("pod %s bound to %s with no Volcano scheduler running", p.Name, p.Spec.NodeName)
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
