package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	volcano "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/scheduler"
)

// Gang schedulers Voda can hand its jobs' pods to (--gang-scheduler).
const (
	// GangNone: Voda's own gated placement, pods bound by the cluster's
	// default scheduler.
	GangNone = "none"
	// GangSchedulerPlugins: the coscheduling plugin of
	// sigs.k8s.io/scheduler-plugins, run as a secondary scheduler; Voda
	// makes a scheduling.x-k8s.io/v1alpha1 PodGroup per job.
	GangSchedulerPlugins = "scheduler-plugins"
	// GangVolcano: the Volcano scheduler; Voda makes a
	// scheduling.volcano.sh/v1beta1 PodGroup per job.
	GangVolcano = "volcano"
)

// GangSchedulers lists the values of --gang-scheduler.
var GangSchedulers = []string{GangNone, GangSchedulerPlugins, GangVolcano}

// Defaults of the gang schedulers: the scheduler names their manifests
// install, and Volcano's default queue.
const (
	DefaultSchedulerPluginsName = "scheduler-plugins-scheduler"
	DefaultVolcanoName          = "volcano"
	DefaultVolcanoQueue         = "default"
)

// The PodGroup kinds and how a pod names its group.
var (
	SchedulerPluginsPodGroupGVK = schema.GroupVersionKind{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Kind: "PodGroup"}
	VolcanoPodGroupGVK          = volcano.SchemeGroupVersion.WithKind("PodGroup")
)

const (
	// SchedulerPluginsPodGroupLabel is the label that puts a pod in a
	// scheduler-plugins PodGroup.
	SchedulerPluginsPodGroupLabel = "scheduling.x-k8s.io/pod-group"
	// VolcanoPodGroupAnnotation is the annotation that puts a pod in a
	// Volcano PodGroup.
	VolcanoPodGroupAnnotation = volcano.KubeGroupNameAnnotationKey
)

// Gang says which gang scheduler binds the jobs' pods. The zero value is
// Voda's own gang (none).
type Gang struct {
	// Scheduler is one of GangSchedulers; empty means none.
	Scheduler string
	// SchedulerName is the pods' schedulerName; empty means the default
	// of the gang scheduler.
	SchedulerName string
	// Queue is the Volcano queue of the jobs' PodGroups; empty means
	// "default".
	Queue string
}

// Resolve checks the gang settings and fills in the defaults.
func (g Gang) Resolve() (Gang, error) {
	switch g.Scheduler {
	case "", GangNone:
		if g.SchedulerName != "" || g.Queue != "" {
			return Gang{}, errors.New("a gang scheduler name or queue needs --gang-scheduler=scheduler-plugins or volcano")
		}
		return Gang{Scheduler: GangNone}, nil
	case GangSchedulerPlugins:
		if g.Queue != "" {
			return Gang{}, errors.New("a gang queue is only for --gang-scheduler=volcano")
		}
		if g.SchedulerName == "" {
			g.SchedulerName = DefaultSchedulerPluginsName
		}
	case GangVolcano:
		if g.SchedulerName == "" {
			g.SchedulerName = DefaultVolcanoName
		}
		if g.Queue == "" {
			g.Queue = DefaultVolcanoQueue
		}
	default:
		return Gang{}, fmt.Errorf("unknown gang scheduler %q; want one of %s", g.Scheduler, strings.Join(GangSchedulers, ", "))
	}
	return g, nil
}

// enabled reports whether a gang scheduler binds the pods.
func (g Gang) enabled() bool { return g.Scheduler != "" && g.Scheduler != GangNone }

// gvk is the kind of the PodGroups.
func (g Gang) gvk() schema.GroupVersionKind {
	if g.Scheduler == GangVolcano {
		return VolcanoPodGroupGVK
	}
	return SchedulerPluginsPodGroupGVK
}

// join puts a pod template in the job's PodGroup (named as the job) and
// hands it to the gang scheduler.
func (g Gang) join(t *corev1.PodTemplateSpec, job string) {
	if !g.enabled() {
		return
	}
	t.Spec.SchedulerName = g.SchedulerName
	if g.Scheduler == GangVolcano {
		if t.Annotations == nil {
			t.Annotations = map[string]string{}
		}
		t.Annotations[VolcanoPodGroupAnnotation] = job
		return
	}
	addLabel(&t.ObjectMeta, SchedulerPluginsPodGroupLabel, job)
}

// podGroup returns the PodGroup of tj running the given workers, owned by
// the TrainingJob.
func (g Gang) podGroup(tj *v1alpha1.TrainingJob, members int64) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	if g.Scheduler == GangVolcano {
		pg := &volcano.PodGroup{Spec: volcano.PodGroupSpec{MinMember: int32(members), Queue: g.Queue}}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pg)
		if err != nil {
			return nil, err
		}
		delete(m, "status") // the scheduler's to write
		u.Object = m
	} else {
		u.Object = map[string]any{"spec": map[string]any{"minMember": members}}
	}
	u.SetGroupVersionKind(g.gvk())
	u.SetNamespace(tj.Namespace)
	u.SetName(tj.Name)
	u.SetLabels(map[string]string{v1alpha1.JobLabel: tj.Name})
	u.SetOwnerReferences([]metav1.OwnerReference{*metav1.NewControllerRef(tj, v1alpha1.GroupVersion.WithKind("TrainingJob"))})
	return u, nil
}

// ensurePodGroup makes the job's PodGroup ask for the given members: the
// workers and the pods that start with them (an MPIJob's launcher; see
// workload.minMember). Called before the child is created or resized, so the gang
// scheduler never sees more or fewer pods than the group expects for
// longer than the operator takes to follow. It returns the PodGroup (nil
// without a gang scheduler).
func (c *Controller) ensurePodGroup(ctx context.Context, tj *v1alpha1.TrainingJob, members int64) (*unstructured.Unstructured, error) {
	g := c.opts.Gang
	if !g.enabled() {
		return nil, nil
	}
	want, err := g.podGroup(tj, members)
	if err != nil {
		return nil, err
	}
	have := &unstructured.Unstructured{}
	have.SetGroupVersionKind(g.gvk())
	err = c.reader.Get(ctx, client.ObjectKeyFromObject(want), have)
	if apierrors.IsNotFound(err) {
		if err := c.client.Create(ctx, want); err != nil {
			return nil, fmt.Errorf("create PodGroup: %w", err)
		}
		return want, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read PodGroup: %w", err)
	}
	if ref := metav1.GetControllerOf(have); ref == nil || ref.UID != tj.UID {
		return nil, fmt.Errorf("PodGroup %s/%s exists and does not belong to this TrainingJob; delete it or rename the job", have.GetNamespace(), have.GetName())
	}
	if m, _, _ := unstructured.NestedInt64(have.Object, "spec", "minMember"); m == members {
		return have, nil
	}
	patch := fmt.Appendf(nil, `{"spec":{"minMember":%d}}`, members)
	if err := c.client.Patch(ctx, have, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return nil, fmt.Errorf("set minMember of PodGroup %s: %w", have.GetName(), err)
	}
	return have, nil
}

// ReleasedAnnotation is set on a scheduler-plugins PodGroup, to the time,
// whenever Voda tells the gang scheduler its workers are ungated.
const ReleasedAnnotation = "vodascheduler.io/released"

// releaseEvery is how often Voda tells it again while the workers, all
// ungated, do not all run.
const releaseEvery = 5 * time.Second

// released tells the gang scheduler that a job's workers are ungated, by
// touching the PodGroup: now if force, else if it did not in the last
// releaseEvery. It returns when to tell it again (0: never).
//
// Coscheduling looks again at a pod it turned away only when a pod is
// created or a PodGroup changes; lifting a gate is neither. Its PreFilter
// turns away a worker whose siblings are still gated, and the gates go one
// pod at a time, so without this the first workers could wait for the
// scheduler's periodic retry (5 minutes) with the whole gang ready. The
// repeats cover its informers seeing the PodGroup change before the last
// gate's.
func (c *Controller) released(ctx context.Context, pg *unstructured.Unstructured, force bool) (time.Duration, error) {
	if c.opts.Gang.Scheduler != GangSchedulerPlugins || pg == nil {
		return 0, nil // Volcano looks at every pending pod in each session
	}
	if t, err := time.Parse(time.RFC3339Nano, pg.GetAnnotations()[ReleasedAnnotation]); err == nil && !force {
		if left := releaseEvery - time.Since(t); left > 0 {
			return left, nil
		}
	}
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, ReleasedAnnotation, time.Now().UTC().Format(time.RFC3339Nano))
	if err := c.client.Patch(ctx, pg, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return 0, fmt.Errorf("mark PodGroup %s released: %w", pg.GetName(), err)
	}
	return releaseEvery, nil
}

// checkGangCRD fails unless the API server serves the gang scheduler's
// PodGroups.
func (c *Controller) checkGangCRD() error {
	g := c.opts.Gang
	if !g.enabled() {
		return nil
	}
	gvk := g.gvk()
	if _, err := c.client.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
		if meta.IsNoMatchError(err) {
			return fmt.Errorf("--gang-scheduler=%s needs the %s PodGroup CRD (podgroups.%s), which the API server does not serve: install %s first (docs/gang-scheduling.md)",
				g.Scheduler, gvk.GroupVersion(), gvk.Group, g.Scheduler)
		}
		return fmt.Errorf("look up PodGroups: %w", err)
	}
	return nil
}

// checkGang requeues a job whose gang has not all run for GangTimeout since
// its last start, resize or migration (say, GPUs taken by something else in
// the meantime, a node that refuses the pods): its GPUs go back and it
// waits for the next rescheduling, with a Warning Event saying why. The
// clock counts from the last time Voda let gated workers go to their
// nodes, if later: until every worker has a pod and is let go, the job
// waits for its operator and for Voda's own writes, which at thousands of
// jobs placed at once take minutes. While noPod of its workers have no
// pod and the runtime's operator is busy creating other pods, the timeout
// waits for it (operators.go); while gated of them are still gated with
// every pod there, they are let go in this pass. It returns 0 once it
// requeued the job, else when to look again.
func (c *Controller) checkGang(ctx context.Context, tj *v1alpha1.TrainingJob, rt *workload, id api.JobID, notRunning, noPod, gated int) (time.Duration, error) {
	c.estMu.Lock()
	d, ok := c.disrupted[id]
	c.estMu.Unlock()
	if !ok {
		// Placed before this controller took over (a restart, a new
		// leader): the clock starts now, so the gang gets at most one more
		// GangTimeout instead of holding its GPUs for ever.
		c.takingOver(id, int(tj.Status.Workers))
		return c.opts.GangTimeout, nil
	}
	since, from := d.clock()
	if left := c.opts.GangTimeout - time.Since(since); left > 0 {
		return left, nil
	}
	if gated > 0 && noPod == 0 {
		return c.opts.GangTimeout, nil
	}
	reason := fmt.Sprintf("%d of %d workers not running %s %s", notRunning, tj.Status.Workers, c.opts.GangTimeout, from)
	if noPod > 0 {
		wait, said := c.ops.waiting(childKey{rt.kind, tj.Namespace, tj.Name}, d.since, time.Now())
		if wait {
			return c.ops.idle, nil
		}
		reason += fmt.Sprintf("; %d without a pod", noPod)
		if said != "" {
			reason += fmt.Sprintf(" (%s %s: %s)", rt.kind, tj.Name, said)
		}
	}
	gt := api.GPUType(tj.CurrentGPUType())
	e := c.engineFor(gt)
	err := e.loop.Do(ctx, func(en *scheduler.Engine) error {
		if err := en.Step(scheduler.JobStalled{ID: id, Reason: reason}); err != nil {
			return err
		}
		j, _ := en.Job(id)
		return e.persist(ctx, j, true)
	})
	if err != nil {
		return 0, err
	}
	c.runningAgain(id, gt, true)
	c.event(id, corev1.EventTypeWarning, "GangTimeout", "Requeued: "+reason)
	return 0, nil
}
