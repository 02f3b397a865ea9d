package simulator

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/cluster/sim"
	"github.com/vodascheduler/voda/pkg/estimator"
	"github.com/vodascheduler/voda/pkg/quota"
	"github.com/vodascheduler/voda/pkg/scheduler"
)

// Config describes one simulated run.
type Config struct {
	Policy       string
	Nodes        int
	GPUsPerNode  int
	RestartDelay time.Duration
	// RateLimit applies in event-driven mode (Interval == 0).
	RateLimit time.Duration
	// Interval, when positive, reschedules on a fixed period instead of on
	// events (the Pollux artifact uses 60 s).
	Interval time.Duration
	Tiresias algorithm.TiresiasConfig
	// HeSRPT holds HeSRPT's parameters; the zero value means its defaults.
	HeSRPT algorithm.HeSRPTConfig
	// GPUsPerWorker is the GPUs each worker holds, for jobs whose workload
	// row does not say; 0 means 1. A job's rigid size is its GPUs rounded
	// up to whole workers.
	GPUsPerWorker int
	// Information is what policies know of jobs' speedup and remaining
	// time: InfoOracle (the true values; the default) or InfoEstimated
	// (pkg/estimator's, from the step times jobs report as they run).
	Information string
	// RecordEvents keeps every job's history in Result.Events (for
	// `voda simulate --html`). Off, it costs nothing.
	RecordEvents bool
	// Queues split the GPUs among teams (docs/queues.md); every job then
	// names one (Job.QueueName). Each queue's jobs are also run alone on
	// a static partition of its nominal quota, for its sharing incentive,
	// unless alone is set (as it is in those runs).
	Queues []quota.Queue
	alone  bool
	// AdaptiveBatch lets every job adapt its batch size, from the
	// workload's batch_size up to its max_batch_size (by default the
	// model's largest traced batch), scheduled by goodput (adaptive.go).
	// Its models need gradient statistics (measured profiles).
	AdaptiveBatch bool
	// Ablation, with estimated information and jobs that adapt their
	// batch, hands the estimate one part of what the profiles know, to
	// measure what that part costs (docs/evaluation.md, "Where the
	// estimate loses"): AblatePlacement, AblateBatch, AblateBatchTime,
	// AblatePolluxFit, AblateFixedShares or AblateCurve. Empty: none.
	Ablation string
	// Runtime is what runs the jobs: RuntimeHorovod (or empty), whose
	// restart time the policies assume (HeSRPT's restart cost), or
	// RuntimePyTorch, torchrun with Voda's rendezvous settings, whose
	// measured restart (api.PyTorchRestart, the CLI's default delay for
	// it) the policies are told of, as the controller tells them.
	Runtime string
}

// The runtimes a simulated job can have.
const (
	RuntimeHorovod = "horovod"
	RuntimePyTorch = "pytorch"
)

// checkRuntime reports a runtime the simulator does not know.
func checkRuntime(r string) error {
	if r != "" && r != RuntimeHorovod && r != RuntimePyTorch {
		return fmt.Errorf("runtime %q: want %s or %s", r, RuntimeHorovod, RuntimePyTorch)
	}
	return nil
}

// restartSeconds is what the policies are told a job's restart costs: the
// delay, for a runtime whose delay is measured; 0 (their own assumption)
// otherwise.
func restartSeconds(runtime string, delay time.Duration) float64 {
	if runtime == RuntimePyTorch {
		return delay.Seconds()
	}
	return 0
}

// The ablations of estimated information (Config.Ablation).
const (
	// AblatePlacement lets placement seek the layouts the profiles
	// measure faster, as with oracle information.
	AblatePlacement = "placement"
	// AblateBatch chooses each start's batch, and the retunes, by the
	// profiles (the true best batch on the placement, in the job's
	// epoch); the policies still see the estimate's goodput curves.
	AblateBatch = "batch"
	// AblateBatchTime replaces the estimator's batch model (Pollux's
	// model of a step's time, learned from the steps each category's
	// jobs measured, as the controller learns it) by the profiles' own
	// time per epoch at every batch, on packed placements: the exact
	// model.
	AblateBatchTime = "batch-time"
	// AblatePolluxFit replaces it by that model fitted to every profiled
	// point of the job's model (ablation.go): the best a model of that
	// form could learn.
	AblatePolluxFit = "pollux-fit"
	// AblateFixedShares replaces it by fixed shares of per-sample and
	// per-step work (estimator.BatchTime), the model before it.
	AblateFixedShares = "fixed-shares"
	// AblateCurve gives the policies, and the batch choice, each job's
	// true time per unit of work at its own batch at every worker count,
	// on packed placements, in place of the estimator's fit (its speedup
	// curve and its time at one worker); the batch model and the noise
	// scale are still learned.
	AblateCurve = "curve"
)

// The kinds of information policies get.
const (
	InfoOracle    = "oracle"
	InfoEstimated = "estimated"
)

// Validate reports configuration errors in user terms.
func (c Config) Validate() error {
	var errs []error
	if c.Nodes < 1 || c.Nodes > 100_000 {
		errs = append(errs, fmt.Errorf("nodes is %d, want 1 to 100000", c.Nodes))
	}
	if c.GPUsPerNode < 1 || c.GPUsPerNode > 64 {
		errs = append(errs, fmt.Errorf("gpus per node is %d, want 1 to 64", c.GPUsPerNode))
	}
	if c.GPUsPerWorker < 0 || c.GPUsPerWorker > max(c.GPUsPerNode, 1) {
		errs = append(errs, fmt.Errorf("gpus per worker is %d, want 1 to the GPUs per node (%d)", c.GPUsPerWorker, c.GPUsPerNode))
	}
	if c.RestartDelay < 0 || c.RestartDelay > 24*time.Hour {
		errs = append(errs, fmt.Errorf("restart delay %v is outside 0 to 24h", c.RestartDelay))
	}
	if c.RateLimit < 0 || c.RateLimit > 24*time.Hour {
		errs = append(errs, fmt.Errorf("rate limit %v is outside 0 to 24h", c.RateLimit))
	}
	if err := checkRuntime(c.Runtime); err != nil {
		errs = append(errs, err)
	}
	if c.Interval < 0 || c.Interval > 24*time.Hour {
		errs = append(errs, fmt.Errorf("interval %v is outside 0 to 24h", c.Interval))
	}
	if _, err := algorithm.Canonical(c.Policy); err != nil {
		errs = append(errs, err)
	}
	for _, q := range c.Queues {
		if err := q.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("queue %s: %w", q.Name, err))
		}
	}
	if err := c.Tiresias.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.Information != "" && c.Information != InfoOracle && c.Information != InfoEstimated {
		errs = append(errs, fmt.Errorf("information %q: want %s or %s", c.Information, InfoOracle, InfoEstimated))
	}
	switch c.Ablation {
	case "":
	case AblatePlacement, AblateBatch, AblateBatchTime, AblatePolluxFit, AblateFixedShares, AblateCurve:
		if c.Information != InfoEstimated {
			errs = append(errs, fmt.Errorf("ablation %q needs estimated information", c.Ablation))
		}
	default:
		errs = append(errs, fmt.Errorf("ablation %q: want %s, %s, %s, %s, %s or %s", c.Ablation, AblatePlacement, AblateBatch, AblateBatchTime, AblatePolluxFit, AblateFixedShares, AblateCurve))
	}
	return errors.Join(errs...)
}

// epoch anchors virtual time; any fixed instant would do.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type virtualClock struct{ t time.Time }

func (c *virtualClock) Now() time.Time { return c.t }

// jobInfo is the simulator's oracle knowledge of a job.
type jobInfo struct {
	Job
	model  Model
	steps  float64
	oneGPU float64 // seconds per step on one GPU
	// oneWorker is the seconds per step on one worker of spec.K() GPUs,
	// the unit of the remaining times and speedups policies see.
	oneWorker float64
	spec      api.JobSpec
	speedup   algorithm.Speedup
	// category is the estimator's category: jobs of one model at one
	// batch size take the same time per step, so they share history (as a
	// user would give one category to the runs of one training setup).
	category string
	// adapt is set for a job that adapts its batch size; its steps are
	// then statistical progress (adaptive.go).
	adapt *adaptation
}

// Run simulates one workload under cfg.
func Run(cfg Config, w Workload, cat Catalog) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	r, err := newRun(cfg, w, cat)
	if err != nil {
		return Result{}, err
	}
	if err := r.loop(); err != nil {
		return Result{}, fmt.Errorf("%s on %s: %w", cfg.Policy, w.Name, err)
	}
	res := r.result()
	if len(cfg.Queues) > 0 && !cfg.alone {
		if err := aloneJCTs(cfg, w, cat, res.Queues); err != nil {
			return Result{}, err
		}
	}
	return res, nil
}

type run struct {
	cfg      Config
	w        Workload
	clock    *virtualClock
	engine   *scheduler.Engine
	cluster  *sim.Cluster
	info     map[api.JobID]*jobInfo
	live     map[api.JobID]*jobInfo // arrived, not finished
	adaptive int                    // jobs that adapt their batch size
	curves   map[curveKey][]float64 // adaptive jobs' goodputs (adaptive.go)
	next     int                    // next arrival
	done     int
	finish   map[api.JobID]float64
	tl       []Point
	nextTick time.Time
	events   []Event // with cfg.RecordEvents

	// queues, with Config.Queues, measures time below nominal quota.
	queues *queueTracker

	// With estimated information: the estimator, each job's number of
	// reports, and the errors at the checkpoints.
	est     *estimator.Estimator
	reports map[api.JobID]int
	estErr  map[int][]float64
	// fits are AblatePolluxFit's models, by model, batch range and GPUs
	// per worker; steps the learned batch models.
	fits  map[curveKey]estimator.StepModel
	steps estimator.StepModels
	// exact are AblateCurve's fits, by model, batch range, GPUs per
	// worker and most workers.
	exact map[curveKey]estimator.Fit
}

// Check reports, without running it, what would stop a run of w under
// cfg from starting: bad settings, unknown models, jobs the cluster cannot
// hold.
func Check(cfg Config, w Workload, cat Catalog) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	_, err := newRun(cfg, w, cat)
	return err
}

func newRun(cfg Config, w Workload, cat Catalog) (*run, error) {
	r := &run{cfg: cfg, w: w, clock: &virtualClock{t: epoch}, cluster: sim.New(cfg.RestartDelay),
		fits: map[curveKey]estimator.StepModel{}, exact: map[curveKey]estimator.Fit{}, info: map[api.JobID]*jobInfo{}, live: map[api.JobID]*jobInfo{}, finish: map[api.JobID]float64{}, curves: map[curveKey][]float64{}}
	ecfg := scheduler.DefaultConfig("sim", r.clock)
	ecfg.Policy, ecfg.RateLimit = cfg.Policy, cfg.RateLimit
	ecfg.Algorithm.Tiresias = cfg.Tiresias
	ecfg.Algorithm.HeSRPT = cfg.HeSRPT
	if cfg.Interval > 0 {
		ecfg.RateLimit = 0
	}
	if cfg.Information != InfoEstimated || cfg.Ablation == AblatePlacement {
		// Oracle information includes the layouts: placement may seek
		// the ones the profiles measure faster.
		ecfg.Throughput = r.layoutRate
	}
	e, err := scheduler.New(ecfg)
	if err != nil {
		return nil, err
	}
	r.engine = e
	if err := checkQueues(cfg.Queues, w); err != nil {
		return nil, fmt.Errorf("workload %s: %w", w.Name, err)
	}
	if len(cfg.Queues) > 0 {
		if err := e.Step(scheduler.SetQueues{Queues: cfg.Queues}); err != nil {
			return nil, err
		}
		round := max(cfg.RateLimit, cfg.Interval)
		r.queues = newQueueTracker(cfg.Queues, (round + cfg.RestartDelay).Seconds())
	}
	if cfg.Information == InfoEstimated {
		r.est, r.reports, r.estErr = estimator.New(), map[api.JobID]int{}, map[int][]float64{}
	}
	for i := range cfg.Nodes {
		n := api.Node{Name: api.NodeName(fmt.Sprintf("node-%03d", i)), GPUs: cfg.GPUsPerNode}
		if err := e.Step(scheduler.NodeSet{Node: n}); err != nil {
			return nil, err
		}
	}
	total := cfg.Nodes * cfg.GPUsPerNode
	for _, j := range w.Jobs {
		ji, err := r.prepare(j, cat, total)
		if err != nil {
			return nil, fmt.Errorf("workload %s, job %s: %w", w.Name, j.Name, err)
		}
		r.info[api.JobID(j.Name)] = ji
		if ji.adapt != nil {
			r.adaptive++
		}
	}
	return r, nil
}

// layoutRate is a job's steps per second on a layout of GPUs per node, 0
// for a job it does not know.
func (r *run) layoutRate(id api.JobID, gpusPerNode []int) float64 {
	ji := r.info[id]
	if ji == nil {
		return 0
	}
	if a := ji.adapt; a != nil {
		_, g := a.model.BestBatch(gpusPerNode, a.epoch, a.lo, a.hi)
		return g
	}
	t := ji.model.StepSeconds(gpusPerNode, ji.Batch)
	if !(t > 0) || math.IsInf(t, 1) {
		return 0
	}
	return 1 / t
}

// prepare derives a job's worker range and oracle curves. A worker holds k
// GPUs (the job's own, else the configured default). Worker range: min 1,
// max the largest count whose GPUs keep the per-GPU batch at or above the
// model's minimum (capped at the cluster), requested the workload's GPUs
// in whole workers, rounded up.
func (r *run) prepare(j Job, cat Catalog, total int) (*jobInfo, error) {
	m, err := cat.Lookup(j.Model)
	if err != nil {
		return nil, err
	}
	k := max(r.cfg.GPUsPerWorker, 1)
	if j.GPUsPerWorker > 0 {
		k = j.GPUsPerWorker
	}
	if k > r.cfg.GPUsPerNode {
		return nil, fmt.Errorf("workers of %d GPUs do not fit nodes of %d", k, r.cfg.GPUsPerNode)
	}
	ji := &jobInfo{Job: j, model: m, steps: m.Steps(j.Batch), category: fmt.Sprintf("%s/%d", j.Model, j.Batch)}
	if ji.adapt, err = r.adaptiveOf(j, m); err != nil {
		return nil, err
	}
	if a := ji.adapt; a != nil && r.cfg.Information == InfoEstimated {
		a.rng, a.noise, a.gpusPW = estimatedRange(a), -1, k
		a.oracleBatch = r.cfg.Ablation == AblateBatch
		a.rng.Time, a.rng.Steps = r.batchModel(j.Model, a, k)
	}
	batchMax := j.Batch // the batch that bounds the workers
	if a := ji.adapt; a != nil {
		// Steps are statistical progress; the seconds per step on one
		// GPU and one worker are averages over the run, each epoch at
		// its best batch there.
		ji.steps, batchMax = a.model.Work(), a.hi
		ji.category = fmt.Sprintf("%s/%d-%d", j.Model, a.lo, a.hi)
		ji.oneGPU = adaptiveAlone(ji, []int{1}) / ji.steps
		ji.oneWorker = adaptiveAlone(ji, []int{k}) / ji.steps
	} else {
		ji.oneGPU = m.StepSeconds([]int{1}, j.Batch)
		ji.oneWorker = m.StepSeconds([]int{k}, j.Batch)
	}
	for _, v := range []float64{ji.steps, ji.oneGPU, ji.oneWorker} {
		if !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("model %s has no throughput or work at batch %d", j.Model, j.Batch)
		}
	}
	req := (j.GPUs + k - 1) / k
	// A worker sits whole on one node: the cluster holds this many.
	room := r.cfg.Nodes * (r.cfg.GPUsPerNode / k)
	switch {
	case req*k > total && k == 1:
		return nil, fmt.Errorf("requests %d GPUs, the cluster has %d", j.GPUs, total)
	case req > room && k*room == total:
		return nil, fmt.Errorf("requests %d GPUs (%d workers of %d), the cluster has %d", j.GPUs, req, k, total)
	case req > room:
		return nil, fmt.Errorf("requests %d GPUs (%d workers of %d), but %d-GPU nodes hold %d such workers, %d in all: choose GPUs per worker that divide the GPUs per node",
			j.GPUs, req, k, r.cfg.GPUsPerNode, r.cfg.GPUsPerNode/k, room)
	}
	hi := max(min(min(m.MaxWorkers(batchMax), total)/k, room), 1, req)
	ji.spec = api.JobSpec{MinWorkers: 1, MaxWorkers: hi, RequestedWorkers: req, ClusterQueue: j.QueueName,
		RestartSeconds: restartSeconds(r.cfg.Runtime, r.cfg.RestartDelay)}
	if j.Rigid {
		ji.spec.MinWorkers, ji.spec.MaxWorkers = req, req
	}
	if k > 1 {
		ji.spec.GPUsPerWorker = k
	}
	if m.MaxWorkers(batchMax) <= k && req == 1 && !j.Rigid {
		ji.spec.MaxWorkers = 1
	}
	if ji.adapt != nil {
		_, ji.speedup = r.adaptiveView(ji, 0, ji.steps)
		return ji, nil
	}
	curve := make([]float64, hi+1)
	for n := 1; n <= hi; n++ {
		curve[n] = ji.oneWorker / m.StepSeconds(sim.PackedShape(n*k, r.cfg.GPUsPerNode), j.Batch)
	}
	ji.speedup = func(n int) float64 {
		if n < 1 || n >= len(curve) {
			return 0
		}
		return curve[n]
	}
	return ji, nil
}

const maxIterations = 50_000_000

func (r *run) loop() error {
	if r.cfg.Interval > 0 {
		r.nextTick = epoch
	}
	for iter := 0; r.done < len(r.w.Jobs); iter++ {
		if iter > maxIterations {
			return errors.New("the simulation does not converge")
		}
		t, ok := r.nextEvent()
		if !ok {
			return r.stuck()
		}
		r.clock.t = t
		if err := r.finishJobs(t); err != nil {
			return err
		}
		if err := r.arrive(t); err != nil {
			return err
		}
		if err := r.maybeSchedule(t); err != nil {
			return err
		}
		if r.queues != nil {
			r.queues.observe(r, r.seconds(t))
		}
	}
	if r.queues != nil {
		r.queues.close(r.seconds(r.clock.t))
	}
	return nil
}

// nextEvent is the earliest of the next arrival, the next completion, and
// the next rescheduling.
func (r *run) nextEvent() (time.Time, bool) {
	var best time.Time
	ok := false
	consider := func(t time.Time) {
		if !ok || t.Before(best) {
			best, ok = t, true
		}
	}
	if r.next < len(r.w.Jobs) {
		consider(epoch.Add(r.w.Jobs[r.next].Submit))
	}
	if t, found := r.cluster.NextFinish(); found {
		consider(t)
	}
	if r.cfg.Interval > 0 {
		if ok || r.active() {
			consider(r.nextTick)
		}
	} else if t, found := r.engine.Due(); found {
		consider(later(t, r.clock.t))
	}
	return best, ok
}

func (r *run) active() bool { return r.next-r.done > 0 }

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func (r *run) seconds(t time.Time) float64 { return t.Sub(epoch).Seconds() }

func (r *run) finishJobs(t time.Time) error {
	ids := r.cluster.Finished(t)
	for _, id := range ids {
		if err := r.engine.Step(scheduler.JobCompleted{ID: id}); err != nil {
			return err
		}
		if r.est != nil {
			r.est.Finish(string(id))
		}
		r.finish[id] = r.seconds(t)
		r.event(t, id, EventFinish, 0, "")
		delete(r.live, id)
		r.done++
	}
	if len(ids) > 0 {
		r.record(t)
	}
	return nil
}

func (r *run) arrive(t time.Time) error {
	for r.next < len(r.w.Jobs) && !epoch.Add(r.w.Jobs[r.next].Submit).After(t) {
		j := r.w.Jobs[r.next]
		ji := r.info[api.JobID(j.Name)]
		r.next++
		r.live[api.JobID(j.Name)] = ji
		m, batch := ji.model, j.Batch
		sj := sim.Job{ID: api.JobID(j.Name), Steps: ji.steps, GPUsPerWorker: ji.spec.GPUsPerWorker,
			StepSeconds: func(shape []int) float64 { return m.StepSeconds(shape, batch) }}
		ev := scheduler.JobSubmitted{ID: api.JobID(j.Name), Spec: ji.spec,
			Remaining: ji.steps * ji.oneWorker, Speedup: ji.speedup}
		if ji.adapt != nil {
			sj.StepSeconds, sj.Plan = nil, ji.plan
			ev.Remaining, ev.Speedup = r.adaptiveView(ji, 0, ji.steps)
		}
		if err := r.cluster.Add(sj); err != nil {
			return err
		}
		if r.est != nil {
			fit := r.est.Estimate(j.Name, ji.category)
			ev.Remaining, ev.Speedup, ev.Measured = fit.Remaining(ji.steps), speedupOf(fit), fit.KnownAt
			if a := ji.adapt; a != nil {
				fit = r.curveFit(ji, fit)
				a.best = fit.Adapt(*a.rng, a.gpusPW, ji.spec.MaxWorkers, a.noise)
				ev.Remaining, ev.Speedup = a.best.Remaining(a.leftAtInitial(ji.steps, 0)), a.best.Speedup
			}
		}
		if err := r.engine.Step(ev); err != nil {
			return err
		}
		r.event(t, ev.ID, EventSubmit, 0, "")
	}
	return nil
}

func (r *run) maybeSchedule(t time.Time) error {
	if r.cfg.Interval > 0 {
		if t.Before(r.nextTick) {
			return nil
		}
		for !r.nextTick.After(t) {
			r.nextTick = r.nextTick.Add(r.cfg.Interval)
		}
	} else if due, ok := r.engine.Due(); !ok || due.After(t) {
		return nil
	}
	if r.est != nil {
		if err := r.estimate(t); err != nil {
			return err
		}
	} else if readsRemaining(r.engine.Policy()) {
		// Oracle information: the true remaining time at one worker. The
		// order of these updates does not matter.
		for id, ji := range r.live {
			if ji.adapt != nil {
				continue // below
			}
			rem := r.cluster.Remaining(id, t) * ji.oneWorker
			if err := r.engine.Step(scheduler.Progress{ID: id, Remaining: max(rem, 1e-9)}); err != nil {
				return err
			}
		}
	}
	if r.adaptive > 0 {
		if err := r.tellAdaptive(t); err != nil {
			return err
		}
	}
	plan, err := r.engine.Tick()
	if err != nil {
		return err
	}
	for _, a := range plan.Actions {
		if err := r.cluster.Apply(a, t); err != nil {
			return fmt.Errorf("apply %s: %w", a, err)
		}
		if r.cfg.RecordEvents {
			r.event(t, a.Job, EventKind(a.Kind), a.To*r.info[a.Job].spec.K(), a.Reason)
		}
	}
	if len(plan.Actions) > 0 {
		r.record(t)
	}
	if r.adaptive > 0 {
		return r.retune(t)
	}
	return nil
}

// estimate has every running job report its step time at its current
// size, and gives the policies the estimator's remaining time and speedup
// curve for every live job.
func (r *run) estimate(t time.Time) error {
	for _, id := range slices.Sorted(maps.Keys(r.live)) {
		ji := r.live[id]
		if ji.adapt != nil {
			if err := r.learnAdaptive(id, ji, t); err != nil {
				return err
			}
			continue
		}
		if r.cluster.Productive(id, t) {
			n, _ := r.cluster.Workers(id)
			r.est.Observe(ji.Name, ji.category, estimator.Observation{Workers: n, Seconds: r.cluster.StepSeconds(id)})
			r.reports[id]++
			fit := r.est.Estimate(ji.Name, ji.category)
			if slices.Contains(EstimateCheckpoints, r.reports[id]) && fit.Known() {
				r.estErr[r.reports[id]] = append(r.estErr[r.reports[id]], math.Abs(fit.OneWorker-ji.oneWorker)/ji.oneWorker)
			}
		}
		fit := r.est.Estimate(ji.Name, ji.category)
		rem := fit.Remaining(r.cluster.Remaining(id, t))
		if rem >= 0 {
			rem = max(rem, 1e-9)
		}
		if err := r.engine.Step(scheduler.Progress{ID: id, Remaining: rem, Speedup: speedupOf(fit), Measured: fit.KnownAt}); err != nil {
			return err
		}
	}
	return nil
}

// speedupOf is a fit's curve as policies take it.
func speedupOf(f estimator.Fit) algorithm.Speedup {
	return f.Speedup
}

// readsRemaining reports whether a policy looks at remaining time.
func readsRemaining(policy string) bool {
	switch policy {
	case algorithm.NameSRJF, algorithm.NameElasticSRJF, algorithm.NameAFSL, algorithm.NameHeSRPT:
		return true
	}
	return false
}

// event records one change in a job's life, if events are recorded.
func (r *run) event(t time.Time, id api.JobID, kind EventKind, gpus int, reason string) {
	if r.cfg.RecordEvents {
		r.events = append(r.events, Event{T: r.seconds(t), Job: string(id), Kind: kind, GPUs: gpus, Reason: reason})
	}
}

func (r *run) record(t time.Time) {
	p := Point{T: r.seconds(t), GPUs: r.cluster.Allocated()}
	if k := len(r.tl); k > 0 && r.tl[k-1].T == p.T {
		r.tl[k-1] = p
		return
	}
	r.tl = append(r.tl, p)
}

// errNeverFinish is a run some of whose jobs can never finish.
var errNeverFinish = errors.New("jobs never finish")

// stuck explains why jobs can never finish.
func (r *run) stuck() error {
	total := r.cfg.Nodes * r.cfg.GPUsPerNode
	for _, j := range r.engine.Jobs() {
		if j.Phase == api.PhaseWaiting {
			return fmt.Errorf("%w: %d jobs: %s waits on a cluster of %d GPUs (%s)",
				errNeverFinish, len(r.w.Jobs)-r.done, j.ID, total, j.Message)
		}
	}
	return fmt.Errorf("%w: %d jobs", errNeverFinish, len(r.w.Jobs)-r.done)
}
