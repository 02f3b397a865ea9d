package kube

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
)

// ManagerOptions configure the process around the controller.
type ManagerOptions struct {
	Options
	// Namespace restricts the TrainingJobs watched; empty means all.
	Namespace string
	// MetricsAddr and HealthAddr are where metrics and the health probes
	// are served; "0" disables them.
	MetricsAddr, HealthAddr string
	// PprofAddr serves Go's profiles (/debug/pprof/) for diagnosing the
	// controller's CPU and memory; empty or "0" disables it.
	PprofAddr string
	// LeaderElect turns on leader election, in LeaderElectionNamespace
	// (empty: the namespace the pod runs in, which must then be known).
	LeaderElect             bool
	LeaderElectionNamespace string
	// LeaderElectionID names the Lease; empty means "voda-controller".
	LeaderElectionID string
	// LeaseDuration, RenewDeadline and RetryPeriod tune leader election;
	// zero means 15 s, 10 s and 2 s.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// Scheme returns a scheme with the built-in kinds and TrainingJobs.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// slimCached is the cache's transform: children keep only what the
// controller reads of them (workload.slim), every other object all but its
// managedFields.
func slimCached(o any) (any, error) {
	if u, ok := o.(*unstructured.Unstructured); ok {
		if r := runtimeFor(u.GroupVersionKind()); r != nil {
			return r.slim(u), nil
		}
	}
	return stripManagedFields(o)
}

var stripManagedFields = cache.TransformStripManagedFields()

// NewManager builds a controller-runtime manager running the controller.
func NewManager(cfg *rest.Config, opts ManagerOptions) (ctrl.Manager, *Controller, error) {
	hasJob, err := labels.NewRequirement(v1alpha1.JobLabel, selection.Exists, nil)
	if err != nil {
		return nil, nil, err
	}
	co := cache.Options{
		// Nothing here reads managedFields, a good part of every object:
		// the cache holds thousands of jobs, pods and children at scale.
		// Of the children (MPIJobs, PyTorchJobs), only what it reads.
		DefaultTransform: slimCached,
		// Only pods of TrainingJobs are cached, not every pod of the cluster,
		// and of each only what the controller reads.
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}: {Label: labels.NewSelector().Add(*hasJob), Transform: slimWorker},
			// The Events of TrainingJobs, for the REST API and the
			// dashboard, if they ask (IndexJobEvents): listing them from
			// the API server filters every Event of the namespace.
			&corev1.Event{}: {Field: fields.OneTermEqualSelector("involvedObject.kind", "TrainingJob")},
		},
	}
	if opts.Namespace != "" {
		co.DefaultNamespaces = map[string]cache.Config{opts.Namespace: {}}
	}
	if opts.ConfigNamespace != "" {
		// Only the settings ConfigMap, not every ConfigMap of the cluster.
		co.ByObject[&corev1.ConfigMap{}] = cache.ByObject{
			Namespaces: map[string]cache.Config{opts.ConfigNamespace: {}},
			Field:      fields.OneTermEqualSelector("metadata.name", ConfigMapName),
		}
	}
	id := opts.LeaderElectionID
	if id == "" {
		id = "voda-controller"
	}
	mo := ctrl.Options{
		Scheme: Scheme(),
		Logger: opts.Log,
		Cache:  co,
		Client: client.Options{Cache: &client.CacheOptions{Unstructured: true}},
		// Tests run several managers in one process.
		Controller:              config.Controller{SkipNameValidation: &skipNameValidation},
		Metrics:                 metricsserver.Options{BindAddress: opts.MetricsAddr},
		HealthProbeBindAddress:  opts.HealthAddr,
		PprofBindAddress:        opts.PprofAddr,
		LeaderElection:          opts.LeaderElect,
		LeaderElectionID:        id,
		LeaderElectionNamespace: opts.LeaderElectionNamespace,
		LeaseDuration:           orDefault(opts.LeaseDuration, 15*time.Second),
		RenewDeadline:           orDefault(opts.RenewDeadline, 10*time.Second),
		RetryPeriod:             orDefault(opts.RetryPeriod, 2*time.Second),
	}
	if opts.Log.GetSink() != nil {
		ctrl.SetLogger(opts.Log)
	}
	mgr, err := ctrl.NewManager(cfg, mo)
	if err != nil {
		return nil, nil, fmt.Errorf("manager: %w", err)
	}
	c, err := New(mgr.GetClient(), mgr.GetCache(), mgr.GetEventRecorderFor("voda-scheduler"), opts.Options)
	if err != nil {
		return nil, nil, err
	}
	c.reader = mgr.GetAPIReader()
	c.namespace = opts.Namespace
	foreign, err := newForeignCache(context.Background(), cfg, cache.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()}, opts.Accelerators.Resources())
	if err != nil {
		return nil, nil, err
	}
	if err := mgr.Add(foreign); err != nil {
		return nil, nil, err
	}
	c.foreign = foreign
	if err := c.Setup(mgr); err != nil {
		return nil, nil, err
	}
	if opts.HealthAddr != "0" && opts.HealthAddr != "" {
		if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
			return nil, nil, err
		}
		if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
			return nil, nil, err
		}
	}
	return mgr, c, nil
}

var skipNameValidation = true

func orDefault(d, def time.Duration) *time.Duration {
	if d == 0 {
		d = def
	}
	return &d
}

// Run runs the controller until ctx ends.
func Run(ctx context.Context, cfg *rest.Config, opts ManagerOptions) error {
	mgr, _, err := NewManager(cfg, opts)
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// JobEventsField indexes the Events of TrainingJobs in the manager's cache
// by the job's name (IndexJobEvents).
const JobEventsField = "involvedObject.name"

// IndexJobEvents lets the manager's cache serve the Events of a
// TrainingJob by its name (client.MatchingFields{JobEventsField: name}),
// the reads of the REST API and the dashboard; the cache then watches the
// Events of TrainingJobs. Call it before the manager starts.
func IndexJobEvents(ctx context.Context, mgr ctrl.Manager) error {
	return mgr.GetFieldIndexer().IndexField(ctx, &corev1.Event{}, JobEventsField, func(o client.Object) []string {
		return []string{o.(*corev1.Event).InvolvedObject.Name}
	})
}
