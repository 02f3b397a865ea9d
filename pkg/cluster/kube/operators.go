package kube

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A job's worker pods are created by its runtime's operator, which works
// through a queue of its own: mpi-operator creates about ten pods a second.
// With thousands of jobs placed at once, a worker may have no pod minutes
// after its placement through no fault of the job, and a gang timeout that
// counted that time would requeue the job and ask the operator for new pods,
// feeding its backlog.
//
// So the gang clock does not run out while some of a job's workers have no
// pod, the operator is busy (it created a pod in the last OperatorIdle) and
// it has not said it failed to create this job's pods (a Warning Event on
// the child since the placement whose reason is a failure: the training
// operator's FailedCreatePod, mpi-operator's MPIJobFailed ("worker pod
// created failed") or ErrResourceExists; the training operator also
// repeats its pods' conditions as Warnings, such as SchedulingGated, which
// are no complaint). An operator that stops, or that cannot create the pods
// (a quota, a webhook that refuses them), lets the clock run, so a job
// whose pods never come still gives its GPUs back.

// DefaultOperatorIdle is how long an operator may create no pod before it
// counts as idle.
const DefaultOperatorIdle = time.Minute

// operators is what the controller sees of the runtimes' operators: when
// each last created a pod, and the last Warning Event each child got.
type operators struct {
	idle time.Duration

	mu      sync.Mutex
	created map[string]time.Time // by the kind of the pods' owner
	warned  map[childKey]warning
}

type childKey struct{ kind, namespace, name string }

type warning struct {
	at      time.Time
	message string
}

func newOperators(idle time.Duration) *operators {
	if idle <= 0 {
		idle = DefaultOperatorIdle
	}
	return &operators{idle: idle, created: map[string]time.Time{}, warned: map[childKey]warning{}}
}

// podCreated notes that the operator of kind created a pod at t.
func (o *operators) podCreated(kind string, t time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if t.After(o.created[kind]) {
		o.created[kind] = t
	}
}

// warn notes a Warning Event on a child; the oldest notes go once they
// are older than an hour (the API server's own time to live for Events).
func (o *operators) warn(k childKey, w warning) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if w.at.Before(o.warned[k].at) {
		return
	}
	o.warned[k] = w
	if len(o.warned) > 1000 {
		for k, w := range o.warned {
			if time.Since(w.at) > time.Hour {
				delete(o.warned, k)
			}
		}
	}
}

// waiting says whether the gang clock of a child whose workers do not all
// have a pod waits for its operator at now (the clock started at since),
// and otherwise the operator's last complaint about the child, if any.
func (o *operators) waiting(k childKey, since, now time.Time) (bool, string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	// Event times are in whole seconds.
	if w, ok := o.warned[k]; ok && !w.at.Before(since.Truncate(time.Second)) {
		return false, w.message
	}
	return now.Sub(o.created[k.kind]) < o.idle, ""
}

// watchOperators feeds c.ops: the creations of the jobs' pods from the
// manager's cache, and the Warning Events of each installed runtime's
// children from a cache of their own (field-selected, so it holds only
// those).
func (c *Controller) watchOperators(mgr ctrl.Manager) error {
	ctx := context.Background()
	pods, err := mgr.GetCache().GetInformer(ctx, &corev1.Pod{}, cache.BlockUntilSynced(false))
	if err != nil {
		return err
	}
	_, err = pods.AddEventHandler(toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			p, ok := obj.(*corev1.Pod)
			if !ok || initial {
				return
			}
			if ref := metav1.GetControllerOf(p); ref != nil {
				c.ops.podCreated(ref.Kind, time.Now())
			}
		},
	})
	if err != nil {
		return err
	}
	for kind := range c.installed {
		sel := fields.AndSelectors(
			fields.OneTermEqualSelector("type", corev1.EventTypeWarning),
			fields.OneTermEqualSelector("involvedObject.kind", kind))
		opts := cache.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
			ByObject: map[client.Object]cache.ByObject{&corev1.Event{}: {Field: sel, Transform: slimEvent}}}
		if c.namespace != "" {
			opts.DefaultNamespaces = map[string]cache.Config{c.namespace: {}}
		}
		events, err := cache.New(mgr.GetConfig(), opts)
		if err != nil {
			return fmt.Errorf("cache of %s events: %w", kind, err)
		}
		inf, err := events.GetInformer(ctx, &corev1.Event{}, cache.BlockUntilSynced(false))
		if err != nil {
			return err
		}
		note := func(obj any) {
			if e, ok := obj.(*corev1.Event); ok && complaint(e.Reason) {
				r := e.InvolvedObject
				c.ops.warn(childKey{r.Kind, r.Namespace, r.Name}, warning{at: eventTime(e), message: e.Reason + ": " + e.Message})
			}
		}
		_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: note, UpdateFunc: func(_, obj any) { note(obj) },
		})
		if err != nil {
			return err
		}
		if err := mgr.Add(events); err != nil {
			return err
		}
	}
	return nil
}

// complaint says whether a Warning Event's reason on a child says its
// operator failed to create what the job needs.
func complaint(reason string) bool {
	return strings.HasPrefix(reason, "Failed") || reason == "MPIJobFailed" || reason == "ErrResourceExists"
}

// slimEvent keeps of an Event what the gang clock reads.
func slimEvent(obj any) (any, error) {
	e, ok := obj.(*corev1.Event)
	if !ok {
		return obj, nil
	}
	msg := e.Message
	if len(msg) > 300 {
		msg = strings.ToValidUTF8(msg[:300], "") + "…"
	}
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: e.Name, Namespace: e.Namespace, ResourceVersion: e.ResourceVersion},
		InvolvedObject: corev1.ObjectReference{Kind: e.InvolvedObject.Kind, Namespace: e.InvolvedObject.Namespace, Name: e.InvolvedObject.Name},
		Reason:         e.Reason, Message: msg, Type: e.Type,
		FirstTimestamp: e.FirstTimestamp, LastTimestamp: e.LastTimestamp, EventTime: e.EventTime,
		Series: e.Series,
	}, nil
}

// eventTime is when an Event last happened, whichever API wrote it.
func eventTime(e *corev1.Event) time.Time {
	t := e.LastTimestamp.Time
	if e.Series != nil && e.Series.LastObservedTime.After(t) {
		t = e.Series.LastObservedTime.Time
	}
	if e.EventTime.After(t) {
		t = e.EventTime.Time
	}
	if e.FirstTimestamp.After(t) {
		t = e.FirstTimestamp.Time
	}
	return t
}
