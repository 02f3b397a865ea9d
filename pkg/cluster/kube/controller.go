package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vodascheduler/voda/internal/parallel"
	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/estimator"
	"github.com/vodascheduler/voda/pkg/metrics"
	"github.com/vodascheduler/voda/pkg/progress"
	"github.com/vodascheduler/voda/pkg/scheduler"
)

// Defaults of the controller. DefaultPolicy is Voda's own HeSRPT, the
// best of the nine on every workload docs/evaluation.md measures;
// OriginalPolicy is the original Voda's default, still a flag away
// (docs/policies.md says why the default changed).
const (
	DefaultPolicy     = "HeSRPT"
	OriginalPolicy    = "ElasticFIFO"
	DefaultSyncPeriod = 30 * time.Second
	// DefaultKubeAPIQPS and DefaultKubeAPIBurst are the controller's
	// client rate to the API server: a job costs about a dozen writes
	// while it starts (docs/scale.md), so 50 a second, client-go's usual,
	// started fewer than five jobs a second.
	DefaultKubeAPIQPS   = 200
	DefaultKubeAPIBurst = 400
	// DefaultSyncWrites is how many writes a second the refreshes of
	// time counters may take, across every GPU type: a twentieth of the
	// default client rate, so that decisions are written without waiting
	// behind them however many jobs there are.
	DefaultSyncWrites = 10.0
	// DefaultWriteConcurrency is how many writes a scheduling loop sends
	// at once (a round's actions of one kind, the statuses a round
	// changed), and how many TrainingJobs are reconciled at once.
	DefaultWriteConcurrency = 16
	// DefaultGangTimeout is how long a gang may take to start.
	DefaultGangTimeout = 5 * time.Minute
)

// Options configure the controller.
type Options struct {
	// GPUTypes restricts this controller to some GPU types; empty means all.
	GPUTypes []string
	// Accelerators names the node resource of GPU types that do not
	// schedule nvidia.com/gpu (amd.com/gpu, a MIG profile, cpu).
	Accelerators v1alpha1.Accelerators
	// Policy is the scheduling policy of every engine; empty means
	// DefaultPolicy.
	Policy string
	// Algorithm holds policy parameters (Tiresias thresholds and so on); a
	// section left at its zero value means that policy's defaults.
	Algorithm algorithm.Config
	// RateLimit is the minimum time between two reschedulings of one GPU
	// type.
	RateLimit time.Duration
	// SyncPeriod is how often the time counters of every job are written to
	// its status; decisions are written at once. Zero means 30 s.
	SyncPeriod time.Duration
	// SyncWrites bounds the writes a second spent refreshing time counters
	// (oldest first), across every GPU type: with more jobs than
	// SyncPeriod × SyncWrites, each job's counters are written less often
	// than SyncPeriod. Zero means DefaultSyncWrites.
	SyncWrites float64
	// WriteConcurrency is how many status writes a scheduling loop sends
	// at once (a round's actions of one kind, the statuses a round
	// changed), and how many TrainingJobs are reconciled at once (each
	// creating or patching its child and pods); the client's rate limit
	// still bounds them. Zero means DefaultWriteConcurrency; 1 writes one
	// at a time.
	WriteConcurrency int
	// ConfigNamespace is where the ConfigMap voda-schedulers with per-GPU-type
	// settings lives; empty means no runtime settings, only the options.
	ConfigNamespace string
	// Log receives what the controller does; the zero value discards.
	Log logr.Logger
	// Metrics, if set, receives what the schedulers do (Prometheus).
	Metrics *metrics.Metrics
	// ProgressURL, if set, is the REST API's base URL as the jobs' pods
	// reach it: every job's pods get VODA_PROGRESS_URL and a
	// VODA_PROGRESS_TOKEN to report their epochs with. It needs
	// ConfigNamespace, where the tokens' key is kept.
	ProgressURL string
	// MetricsDir, if set, is a directory of the original Voda's per-job
	// CSV files (<job>.csv), read every MetricsScan (zero: 30 s) into the
	// jobs' progress.
	MetricsDir  string
	MetricsScan time.Duration
	// GangTimeout is how long a job's workers may take to all run after a
	// start, resize or migration before the job gives its GPUs back and is
	// requeued; zero means 5 minutes.
	GangTimeout time.Duration
	// OperatorIdle is how long a runtime's operator may create no pod
	// before the gang clock of a job whose workers have no pod yet counts
	// again (operators.go); zero means DefaultOperatorIdle.
	OperatorIdle time.Duration
	// Gang names the gang scheduler that binds the jobs' pods, if any
	// (docs/gang-scheduling.md); the zero value is Voda's own gang.
	Gang Gang
	// TypeChoiceEvery is how often waiting jobs of several GPU types are
	// looked at again (zero: 30 s); TypeChoiceDwell the least time between
	// a job's first two moves (zero: 10 minutes), doubled for each further
	// one.
	TypeChoiceEvery, TypeChoiceDwell time.Duration
}

// Controller runs one engine per GPU type against the API server. Build it
// with New and register it with a manager (Setup).
type Controller struct {
	opts     Options
	client   client.Client
	cache    cache.Cache
	recorder record.EventRecorder
	log      logr.Logger

	// syncWrites is the budget of the time counters' refreshes.
	syncWrites *writeBudget

	// ready is closed once the engines were rebuilt from the API server;
	// reconcilers wait for it.
	ready  chan struct{}
	runCtx context.Context

	// reader reads around the cache (the progress key's Secret).
	reader client.Reader
	// namespace is the one namespace the manager's cache watches, if any.
	namespace string
	// foreign caches the pods that are not Voda's, to count the GPUs they
	// hold on Voda's nodes; nil counts none.
	foreign cache.Cache
	// progressKey signs the jobs' progress tokens; nil without ProgressURL.
	progressKey []byte
	// est learns speedup and remaining time from progress reports; guarded
	// by estMu, with the number of reports it has seen of each job.
	estMu   sync.Mutex
	est     *estimator.Estimator
	learned map[api.JobID]int32
	// disrupted holds jobs restarting after an action (for the metric of
	// GPU time lost to restarts); guarded by estMu too.
	disrupted map[api.JobID]disruption
	// ops is what the controller sees of the runtimes' operators.
	ops *operators
	// workersSeen is what each running job's reconciler last saw of its
	// workers, for the status; guarded by estMu too.
	workersSeen map[api.JobID]seen
	// hostsChecked holds the running MPIJobs whose discover_hosts.sh was
	// found current since their workers last changed (lag.go); guarded
	// by estMu too.
	hostsChecked map[api.JobID]bool
	// hostsBehind holds when a running MPIJob's discover_hosts.sh was
	// first found behind its workers (lag.go); guarded by estMu too.
	hostsBehind map[api.JobID]time.Time
	// surplusSince holds when workers beyond a running MPIJob's replicas
	// were first seen (lag.go); guarded by estMu too.
	surplusSince map[api.JobID]time.Time
	// leftSince holds when pods of a suspended MPIJob were first seen
	// left (lag.go); guarded by estMu too.
	leftSince map[api.JobID]time.Time
	// unrecordedSince holds when a suspended MPIJob ready to resume was
	// first found with its suspension not yet recorded by mpi-operator
	// (lag.go); guarded by estMu too.
	unrecordedSince map[api.JobID]time.Time
	// suspendedAt holds when the controller suspended a job's child to
	// restart it whole, until the cache shows it (rendezvous.go); guarded
	// by estMu too.
	suspendedAt map[api.JobID]time.Time
	// batches holds what the controller keeps of each job that lets it
	// choose its batch size; guarded by estMu too.
	batches map[api.JobID]*batchState
	// steps learns, per category and GPU type, how an epoch's time
	// changes with the batch, from the epochs of jobs that let Voda
	// choose their batch size; guarded by estMu too. Its fits (tens of
	// milliseconds, more as a category's points grow) run outside estMu,
	// one at a time under fitMu.
	steps estimator.StepModels
	fitMu sync.Mutex
	// installed holds the runtimes whose kind the API server serves, by
	// kind; filled by Setup.
	installed map[string]bool

	mu        sync.Mutex
	overrides map[api.GPUType]settings
	engines   map[api.GPUType]*engine
	nodes     map[string]nodeInfo
	jobTypes  map[api.JobID]api.GPUType
	// moving holds the jobs being moved to another GPU type, and where.
	moving map[api.JobID]api.GPUType
	// refused holds the UID of each job refused (InvalidSpec) until the
	// job is deleted; a job created again under the same name has another
	// UID and is checked anew.
	refused map[api.JobID]types.UID
	// held holds, for each job no node of its type can run, why (see
	// unschedulable.go), as last told to its engine; guarded by heldMu,
	// which is held while the engine is told, so that two reconcilers do
	// not both tell it.
	heldMu sync.Mutex
	held   map[api.JobID]string
	// queues is the queue objects as the engines were last given them;
	// jobQueues where each job's GPUs count, as its engine was last told;
	// both guarded by mu. queuesInstalled says the API server serves the
	// queue kinds (queues.go).
	queues          queueView
	jobQueues       map[api.JobID]queueOf
	queuesInstalled bool
}

// New returns a controller that reads and writes through c, waits for
// informers in ca and records Events with r.
func New(c client.Client, ca cache.Cache, r record.EventRecorder, opts Options) (*Controller, error) {
	if opts.Policy == "" {
		opts.Policy = DefaultPolicy
	}
	opts.Algorithm = opts.Algorithm.WithDefaults()
	if _, err := algorithm.New(opts.Policy, opts.Algorithm); err != nil {
		return nil, err
	}
	if opts.RateLimit < 0 {
		return nil, fmt.Errorf("rate limit %v is negative", opts.RateLimit)
	}
	if opts.SyncPeriod <= 0 {
		opts.SyncPeriod = DefaultSyncPeriod
	}
	if !(opts.SyncWrites > 0) {
		opts.SyncWrites = DefaultSyncWrites
	}
	if opts.WriteConcurrency <= 0 {
		opts.WriteConcurrency = DefaultWriteConcurrency
	}
	if opts.GangTimeout <= 0 {
		opts.GangTimeout = DefaultGangTimeout
	}
	if opts.MetricsScan <= 0 {
		opts.MetricsScan = DefaultMetricsScan
	}
	g, err := opts.Gang.Resolve()
	if err != nil {
		return nil, err
	}
	opts.Gang = g
	if opts.ProgressURL != "" && opts.ConfigNamespace == "" {
		return nil, errors.New("a progress URL needs a settings namespace for the tokens' key")
	}
	return &Controller{
		opts: opts, client: c, cache: ca, recorder: r, log: opts.Log,
		ready:       make(chan struct{}),
		engines:     map[api.GPUType]*engine{},
		nodes:       map[string]nodeInfo{},
		jobTypes:    map[api.JobID]api.GPUType{},
		moving:      map[api.JobID]api.GPUType{},
		refused:     map[api.JobID]types.UID{},
		syncWrites:  &writeBudget{rate: opts.SyncWrites},
		held:        map[api.JobID]string{},
		jobQueues:   map[api.JobID]queueOf{},
		reader:      c,
		est:         estimator.New(),
		learned:     map[api.JobID]int32{},
		disrupted:   map[api.JobID]disruption{},
		ops:         newOperators(opts.OperatorIdle),
		batches:     map[api.JobID]*batchState{},
		steps:       estimator.StepModels{Deferred: true},
		workersSeen: map[api.JobID]seen{},
		installed:   map[string]bool{},

		hostsChecked: map[api.JobID]bool{},
		hostsBehind:  map[api.JobID]time.Time{},
		surplusSince: map[api.JobID]time.Time{},
		leftSince:    map[api.JobID]time.Time{},

		unrecordedSince: map[api.JobID]time.Time{},
		suspendedAt:     map[api.JobID]time.Time{},
	}, nil
}

// NeedLeaderElection makes the manager start the controller only on the
// leader.
func (c *Controller) NeedLeaderElection() bool { return true }

// Start rebuilds every engine from the nodes and TrainingJobs in the API
// server, starts them, and lets the reconcilers go. It returns when ctx
// ends.
func (c *Controller) Start(ctx context.Context) error {
	if err := c.checkGangCRD(); err != nil {
		return err
	}
	if !c.cache.WaitForCacheSync(ctx) {
		return errors.New("caches did not sync")
	}
	if c.foreign != nil && !c.foreign.WaitForCacheSync(ctx) {
		return errors.New("the cache of other pods did not sync")
	}
	overrides, _, err := c.readConfig(ctx)
	if err != nil {
		return fmt.Errorf("read %s: %w", ConfigMapName, err)
	}
	c.mu.Lock()
	c.overrides = overrides
	c.mu.Unlock()
	if err := c.loadHistory(ctx); err != nil {
		return err
	}
	if c.opts.ProgressURL != "" {
		if c.progressKey, err = progress.Key(ctx, c.reader, c.client, c.opts.ConfigNamespace); err != nil {
			return err
		}
	}
	if err := c.restore(ctx); err != nil {
		return err
	}
	c.mu.Lock()
	c.runCtx = ctx
	for _, e := range c.engines {
		e.start(ctx)
	}
	types := c.gpuTypes()
	c.mu.Unlock()
	close(c.ready)
	go c.runTypeChoice(ctx)
	c.log.Info("scheduling", "gpuTypes", types)
	<-ctx.Done()
	return nil
}

// restore feeds the engines, before they run, with every usable node and
// every TrainingJob as their statuses recorded them.
func (c *Controller) restore(ctx context.Context) error {
	var nodes corev1.NodeList
	if err := c.client.List(ctx, &nodes); err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	for i := range nodes.Items {
		info, err := c.nodeInfo(ctx, &nodes.Items[i])
		if err != nil {
			return err
		}
		if !info.usable() || !c.handles(info.gpuType) {
			continue
		}
		c.nodes[nodes.Items[i].Name] = info
		if err := c.engineFor(info.gpuType).eng.Step(scheduler.NodeSet{Node: info.node(nodes.Items[i].Name)}); err != nil {
			return err
		}
	}
	queues, err := c.readQueues(ctx)
	if err != nil {
		return err
	}
	c.queues = queues
	for _, e := range c.engines {
		if err := e.eng.Step(scheduler.SetQueues{Queues: queues.quotasFor(e.gpuType)}); err != nil {
			return err
		}
	}
	var jobs v1alpha1.TrainingJobList
	if err := c.client.List(ctx, &jobs); err != nil {
		return fmt.Errorf("list training jobs: %w", err)
	}
	now := time.Now()
	restored := 0
	for i := range jobs.Items {
		tj := &jobs.Items[i]
		gt := api.GPUType(tj.CurrentGPUType())
		if !c.handles(gt) {
			continue
		}
		if tj.Status.Phase == "" || tj.Status.Phase == v1alpha1.PhaseSubmitted {
			// Created while no controller ran: checked as the reconciler
			// checks a new job.
			rt, err := runtimeOf(tj)
			if err == nil {
				err = c.admissible(tj, rt)
			}
			if err != nil {
				if err := c.refuse(ctx, tj, err); err != nil {
					return err
				}
				continue
			}
		}
		rec := recordOf(tj, now, c.opts.Accelerators)
		e := c.engineFor(gt)
		c.jobTypes[rec.ID] = gt
		if err := e.eng.Restore([]scheduler.Job{rec}); err != nil {
			// A status that does not hold together (say, running with
			// fewer nodes than workers) must not lose the job: it waits.
			c.log.Error(err, "restoring as waiting", "job", rec.ID)
			rec.Phase, rec.Workers, rec.Nodes = api.PhaseWaiting, 0, nil
			if err := e.eng.Restore([]scheduler.Job{rec}); err != nil {
				c.log.Error(err, "cannot restore", "job", rec.ID)
				continue
			}
		}
		if !rec.Phase.Final() {
			q, err := c.resolveQueue(ctx, tj, queues)
			if err != nil {
				return err
			}
			if err := e.eng.Step(scheduler.JobQueue{ID: rec.ID, ClusterQueue: q.clusterQueue, Problem: q.problem}); err != nil {
				return err
			}
			c.jobQueues[rec.ID] = q
			// Held before the first round, as the reconciler would hold it.
			why, err := c.unschedulableReason(ctx, tj)
			if err != nil {
				return err
			}
			// Its reconciler records it and says so in an Event.
			if why != "" {
				if err := e.eng.Step(scheduler.JobUnschedulable{ID: rec.ID, Reason: why}); err != nil {
					return err
				}
			}
		}
		e.setKnown(rec.ID, true)
		if tj.Status.Phase == "" || tj.Status.Phase == v1alpha1.PhaseSubmitted {
			e.submitted(tj) // created while no controller ran
		}
		restored++
	}
	c.log.Info("restored from the API server", "nodes", len(c.nodes), "jobs", restored)
	return nil
}

// handles reports whether this controller schedules a GPU type.
func (c *Controller) handles(t api.GPUType) bool {
	return t != "" && (len(c.opts.GPUTypes) == 0 || slices.Contains(c.opts.GPUTypes, string(t)))
}

// engineFor returns the engine of a GPU type, creating it (and starting it,
// once the controller runs) on first use.
func (c *Controller) engineFor(t api.GPUType) *engine {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.engines[t]; ok {
		return e
	}
	e := newEngine(c, t)
	c.engines[t] = e
	if c.runCtx != nil {
		e.start(c.runCtx)
	}
	s := c.settingsFor(t)
	c.log.Info("scheduler created", "gpuType", t, "policy", s.policy, "rateLimit", s.rateLimit,
		"policyParams", s.algo.Changed(s.policy))
	return e
}

// gpuTypes lists the types that have an engine, sorted; the caller holds
// c.mu.
func (c *Controller) gpuTypes() []api.GPUType {
	var out []api.GPUType
	for t := range c.engines {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// waitReady blocks a reconciler until the engines were restored.
func (c *Controller) waitReady(ctx context.Context) bool {
	select {
	case <-c.ready:
		return true
	case <-ctx.Done():
		return false
	}
}

// SchedulerInfo describes one engine, for tests and the API.
type SchedulerInfo struct {
	GPUType   api.GPUType
	Policy    string
	RateLimit time.Duration
	// Params are the policy parameters in force that Policy reads and
	// that differ from the defaults, as NAME=VALUE.
	Params []string
	GPUs   int
	Nodes  []api.Node
	Jobs   []scheduler.Job
}

// Schedulers describes every engine, sorted by GPU type.
func (c *Controller) Schedulers(ctx context.Context) ([]SchedulerInfo, error) {
	if !c.waitReady(ctx) {
		return nil, ctx.Err()
	}
	c.mu.Lock()
	types := c.gpuTypes()
	engines := make([]*engine, len(types))
	for i, t := range types {
		engines[i] = c.engines[t]
	}
	c.mu.Unlock()
	// Each engine answers between its rounds: asked all at once, a page
	// waits for the busiest, not for the sum.
	out := make([]SchedulerInfo, len(engines))
	errs := make([]error, len(engines))
	parallel.For(len(engines), len(engines), func(i int) {
		e := engines[i]
		errs[i] = e.loop.Do(ctx, func(en *scheduler.Engine) error {
			out[i] = SchedulerInfo{GPUType: e.gpuType, Policy: en.Policy(), RateLimit: en.RateLimit(),
				Params: en.Algorithm().Changed(en.Policy()), GPUs: en.GPUs(), Nodes: en.Nodes(), Jobs: en.Jobs()}
			return nil
		})
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}
