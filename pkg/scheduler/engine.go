package scheduler

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/placement"
	"github.com/vodascheduler/voda/pkg/quota"
)

// Clock tells the time. The engine reads it at every Step and Tick.
type Clock interface {
	Now() time.Time
}

// DefaultRateLimit is the minimum time between two reschedulings unless
// configured otherwise (the original Voda's value).
const DefaultRateLimit = 30 * time.Second

// Config configures an engine.
type Config struct {
	// GPUType is the GPU type the engine schedules. Jobs of another type
	// are rejected.
	GPUType api.GPUType
	// Policy is the policy name; empty means ElasticFIFO.
	Policy string
	// Algorithm holds policy parameters (Tiresias thresholds and so on).
	Algorithm algorithm.Config
	// RateLimit is the minimum time between two reschedulings; events in
	// between are coalesced into the next one. Zero reschedules at once.
	RateLimit time.Duration
	// Clock is required.
	Clock Clock
	// Stopwatch measures how long the policy and the placement compute, for
	// metrics; it never affects a decision. Nil means the wall clock.
	Stopwatch func() time.Time
	// Throughput, when set, rates a job's layouts for the placement (see
	// placement.Input.Throughput): jobs placed anew go on the fastest
	// layout the free GPUs allow. Nil keeps every job compact.
	Throughput func(job api.JobID, gpusPerNode []int) float64
}

// IdleReplan is how long after the policy last ran a new speedup curve
// asks for a rescheduling while GPUs sit idle and some job could take
// more (see Progress).
const IdleReplan = 10 * time.Minute

// DefaultConfig returns a configuration with the defaults of the original
// Voda scheduler.
func DefaultConfig(gpuType api.GPUType, clock Clock) Config {
	return Config{
		GPUType:   gpuType,
		Policy:    algorithm.NameElasticFIFO,
		Algorithm: algorithm.DefaultConfig(),
		RateLimit: DefaultRateLimit,
		Clock:     clock,
	}
}

// Engine schedules the jobs of one GPU type. It is not safe for concurrent
// use: one goroutine owns it (see Loop), or a simulator drives it directly.
type Engine struct {
	gpuType   api.GPUType
	algo      algorithm.Config
	policy    algorithm.Policy
	rateLimit time.Duration
	clock     Clock
	rate      func(api.JobID, []int) float64

	jobs   map[api.JobID]*job
	active []*job // waiting or running jobs, sorted by ID
	// arrival holds the active jobs in submission order (then ID): the
	// policies' orders put few jobs elsewhere, so they sort little.
	arrival []*job
	// queueAt caches nextQueueChange (valid while queueAtKnown): the time
	// is absolute, and the counters it is computed from grow at constant
	// rates between events, so only events, plans and queue changes move it.
	queueAt                 time.Time
	queueAtOK, queueAtKnown bool
	// snap is the policy input's buffer, reused from round to round, and
	// snapJobs the records of its jobs, in the same order.
	snap     []algorithm.Job
	snapJobs []*job
	// decision is the policy's output, a buffer reused from round to
	// round; moved the jobs the round's placement moves.
	decision algorithm.Decision
	moved    []placement.Moved
	// placeWS is placement's working storage, kept from round to round.
	placeWS placement.Workspace
	nodes   map[api.NodeName]int
	// placeNodes caches the nodes made ready for placement; nil when the
	// nodes changed.
	placeNodes *placement.Nodes
	// nodeGPUs is the buffer of the policy's Snapshot.NodeGPUs.
	nodeGPUs []int
	// needPlacement forces placement at the next round even if no
	// allocation changes: after node changes, failed actions and restores,
	// current placements may name lost nodes or overlap.
	needPlacement bool

	now          time.Time // time of the last accounting
	dirty        bool      // something changed since the last rescheduling
	planned      time.Time // when the policy last ran
	scheduled    bool      // a rescheduling has happened
	lastSchedule time.Time

	// undos holds what the last plan changed of each job's record, so a
	// failed action can be undone (see Job.undoAt).
	undos []undo

	stopwatch func() time.Time
	lastRound RoundTimes

	// queues are the queues the GPUs are split among, sorted by name;
	// queueIdx finds them by name; shares are their parts at the last
	// rescheduling (see quotas.go).
	queues     []quota.Queue
	queueIdx   map[string]int
	shares     []quota.Share
	quotaStats QuotaStats
	// protects says some queue has a minimum run time.
	protects bool
	// replan asks for another rescheduling after this one (a queue gave
	// GPUs back and its policy did not run).
	replan bool
}

// RoundTimes are how long the parts of the last rescheduling computed.
type RoundTimes struct {
	// Algorithm is the policy's allocation; Placement the worker placement
	// (zero when the allocation left every job as it was).
	Algorithm, Placement time.Duration
}

// LastRound returns how long the last rescheduling's parts computed.
func (e *Engine) LastRound() RoundTimes { return e.lastRound }

// New returns an engine with no jobs and no nodes.
func New(cfg Config) (*Engine, error) {
	if cfg.Clock == nil {
		return nil, errors.New("scheduler: a clock is required")
	}
	if cfg.RateLimit < 0 {
		return nil, fmt.Errorf("scheduler: rate limit %v is negative", cfg.RateLimit)
	}
	if cfg.Policy == "" {
		cfg.Policy = algorithm.NameElasticFIFO
	}
	cfg.Algorithm = cfg.Algorithm.WithDefaults()
	if err := cfg.Algorithm.Tiresias.Validate(); err != nil {
		return nil, fmt.Errorf("scheduler: %w", err)
	}
	p, err := algorithm.New(cfg.Policy, cfg.Algorithm)
	if err != nil {
		return nil, fmt.Errorf("scheduler: %w", err)
	}
	if cfg.Stopwatch == nil {
		cfg.Stopwatch = time.Now
	}
	return &Engine{
		gpuType:   cfg.GPUType,
		algo:      cfg.Algorithm,
		policy:    p,
		rateLimit: cfg.RateLimit,
		clock:     cfg.Clock,
		stopwatch: cfg.Stopwatch,
		rate:      cfg.Throughput,
		jobs:      map[api.JobID]*job{},
		nodes:     map[api.NodeName]int{},
		now:       cfg.Clock.Now(),
	}, nil
}

// Policy returns the current policy's name.
func (e *Engine) Policy() string { return e.policy.Name() }

// Algorithm returns the policy parameters in force.
func (e *Engine) Algorithm() algorithm.Config { return e.algo.WithDefaults() }

// setPolicy switches the policy or its parameters; the queues and the
// allocation are reconsidered when either changes.
func (e *Engine) setPolicy(ev SetPolicy) error {
	algo := e.algo
	if ev.Algorithm != nil {
		algo = ev.Algorithm.WithDefaults()
		if err := algo.Tiresias.Validate(); err != nil {
			return err
		}
	}
	p, err := algorithm.New(ev.Name, algo)
	if err != nil {
		return err
	}
	if p.Name() == e.policy.Name() && reflect.DeepEqual(algo, e.algo) {
		return nil
	}
	e.policy, e.algo = p, algo
	e.dirty, e.queueAtKnown = true, false
	return nil
}

// RateLimit returns the current rate limit.
func (e *Engine) RateLimit() time.Duration { return e.rateLimit }

// GPUs returns the schedulable GPUs.
func (e *Engine) GPUs() int {
	n := 0
	for _, g := range e.nodes {
		n += g
	}
	return n
}

// Nodes returns the nodes, sorted by name.
func (e *Engine) Nodes() []api.Node {
	out := make([]api.Node, 0, len(e.nodes))
	for n, g := range e.nodes {
		out = append(out, api.Node{Name: n, GPUs: g})
	}
	slices.SortFunc(out, func(a, b api.Node) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// Job returns a copy of one job's record, its counters accounted up to the
// clock (see Jobs).
func (e *Engine) Job(id api.JobID) (Job, bool) {
	j, ok := e.jobs[id]
	if !ok {
		return Job{}, false
	}
	return e.record(j, e.clock.Now()), true
}

// Jobs returns copies of every job's record, sorted by ID, their counters
// accounted up to the clock. The engine itself accounts time only when an
// event or a round arrives; a reader between two of them (a status write,
// a page, a metric) gets each copy brought forward to now at the rates the
// counters grow, so what it shows is live, and the engine's own state, and
// so its decisions, do not depend on when it was read.
func (e *Engine) Jobs() []Job {
	now := e.clock.Now()
	out := make([]Job, 0, len(e.jobs))
	for _, j := range e.jobs {
		out = append(out, e.record(j, now))
	}
	slices.SortFunc(out, func(a, b Job) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// record is a copy of j with its counters brought from the last
// accounting up to now.
func (e *Engine) record(j *job, now time.Time) Job {
	c, at := *j, e.now
	if now.After(e.now) {
		c.advance(now.Sub(e.now).Seconds())
		at = now
	}
	out := c.export(e.now.Location(), e.gpuType)
	out.Accounted = at
	return out
}

// Step applies one event. An invalid event (unknown job, duplicate
// submission, bad spec, unknown policy…) is an error and changes nothing.
func (e *Engine) Step(ev Event) error {
	e.advance()
	e.queueAtKnown = false
	switch ev := ev.(type) {
	case JobSubmitted:
		return e.submit(ev)
	case JobDeleted:
		return e.remove(ev.ID)
	case JobCompleted:
		return e.finish(ev.ID, api.PhaseCompleted, "completed")
	case JobFailed:
		msg := "failed"
		if ev.Reason != "" {
			msg = "failed: " + ev.Reason
		}
		return e.finish(ev.ID, api.PhaseFailed, msg)
	case NodeSet:
		return e.setNode(ev.Node)
	case NodeRemoved:
		if _, ok := e.nodes[ev.Name]; !ok {
			return fmt.Errorf("node %s is not known", ev.Name)
		}
		delete(e.nodes, ev.Name)
		e.placeNodes, e.needPlacement, e.dirty = nil, true, true
	case Progress:
		return e.progress(ev)
	case SetPolicy:
		return e.setPolicy(ev)
	case SetRateLimit:
		if ev.Every < 0 {
			return fmt.Errorf("rate limit %v is negative", ev.Every)
		}
		e.rateLimit = ev.Every
	case ActionFailed:
		e.forget(ev)
	case JobStalled:
		return e.stall(ev)
	case JobUnschedulable:
		return e.hold(ev)
	case SetQueues:
		return e.setQueues(ev)
	case JobQueue:
		return e.setJobQueue(ev)
	case Tick:
	default:
		return fmt.Errorf("unknown event %T", ev)
	}
	return nil
}

func (e *Engine) submit(ev JobSubmitted) error {
	if ev.ID == "" {
		return errors.New("job has no ID")
	}
	if _, dup := e.jobs[ev.ID]; dup {
		return fmt.Errorf("job %s already exists", ev.ID)
	}
	if ev.Spec.GPUType != "" && ev.Spec.GPUType != e.gpuType {
		return fmt.Errorf("job %s wants GPU type %q, this scheduler runs %q", ev.ID, ev.Spec.GPUType, e.gpuType)
	}
	if err := ev.Spec.Validate(); err != nil {
		return fmt.Errorf("job %s: %w", ev.ID, err)
	}
	rem := ev.Remaining
	if rem <= 0 {
		rem = -1
	}
	j := &job{
		ID: ev.ID, Spec: specOf(ev.Spec), Phase: api.PhaseWaiting,
		Queue:     min(ev.Spec.Priority, e.algo.Tiresias.Queues()-1),
		Submitted: stampOf(e.now), Remaining: rem, Speedup: ev.Speedup, Measured: ev.Measured,
		message: &notScheduledYet,
	}
	e.jobs[ev.ID] = j
	e.activate(ev.ID)
	e.dirty = true
	return nil
}

func (e *Engine) remove(id api.JobID) error {
	j, ok := e.jobs[id]
	if !ok {
		return fmt.Errorf("job %s is not known", id)
	}
	if j.active() {
		e.deactivate(id)
		e.dirty = true
	}
	delete(e.jobs, id)
	j.undoAt = 0
	return nil
}

func (e *Engine) finish(id api.JobID, phase api.Phase, msg string) error {
	j, ok := e.jobs[id]
	if !ok {
		return fmt.Errorf("job %s is not known", id)
	}
	if !j.active() {
		return fmt.Errorf("job %s is already %s", id, j.Phase)
	}
	j.Phase, j.Finished = phase, stampOf(e.now)
	j.setMessage(msg)
	j.Workers, j.Nodes = 0, nil
	e.deactivate(id)
	j.undoAt = 0
	e.dirty = true
	return nil
}

// stall requeues a running job whose workers did not start.
func (e *Engine) stall(ev JobStalled) error {
	j, ok := e.jobs[ev.ID]
	if !ok {
		return fmt.Errorf("job %s is not known", ev.ID)
	}
	if j.Phase != api.PhaseRunning {
		return nil // already waiting or ended: nothing to take back
	}
	j.LastRunSeconds = e.now.Sub(j.LastStarted.time()).Seconds()
	j.WaitingSinceRunSeconds = 0
	j.Phase, j.Workers, j.Nodes = api.PhaseWaiting, 0, nil
	j.Preemptions++
	j.setMessage("requeued: " + ev.Reason)
	j.undoAt = 0
	e.dirty, e.needPlacement = true, true
	return nil
}

// hold takes a job out of the policy's sight while no node can run it, or
// lets it back in. A running job keeps its GPUs until the next
// rescheduling halts it.
func (e *Engine) hold(ev JobUnschedulable) error {
	j, ok := e.jobs[ev.ID]
	if !ok {
		return fmt.Errorf("job %s is not known", ev.ID)
	}
	if !j.active() || j.unschedulable() == ev.Reason {
		return nil
	}
	j.setProblems(ev.Reason, j.queueProblem())
	if ev.Reason != "" {
		j.setMessage("unschedulable: " + ev.Reason)
	} else if j.Phase == api.PhaseWaiting {
		j.setMessage("waiting: schedulable again, not scheduled yet")
	}
	e.dirty = true
	return nil
}

func (e *Engine) setNode(n api.Node) error {
	if n.Name == "" {
		return errors.New("node has no name")
	}
	if n.GPUs < 0 {
		return fmt.Errorf("node %s has %d GPUs, must not be negative", n.Name, n.GPUs)
	}
	if old, ok := e.nodes[n.Name]; !ok || old != n.GPUs {
		e.nodes[n.Name] = n.GPUs
		e.placeNodes, e.needPlacement, e.dirty = nil, true, true
	}
	return nil
}

func (e *Engine) progress(ev Progress) error {
	j, ok := e.jobs[ev.ID]
	if !ok {
		return fmt.Errorf("job %s is not known", ev.ID)
	}
	j.Remaining = ev.Remaining
	if j.Remaining < 0 {
		j.Remaining = -1
	}
	if ev.Speedup != nil {
		j.Speedup, j.Measured = ev.Speedup, ev.Measured
	}
	// Estimates matter only to policies that read them; they take effect
	// at the next rescheduling rather than forcing one, except that a new
	// curve asks for one when the policy has not run for IdleReplan while
	// GPUs sit idle and some job could take more: the curve can make a job
	// worth growing into GPUs no other event might hand out for hours (the
	// last jobs of a busy period, their curves learnt only up to the sizes
	// they ran at).
	if ev.Speedup != nil && !e.now.Before(e.planned.Add(IdleReplan)) && e.idleWithRoom() {
		e.dirty = true
	}
	return nil
}

// idleWithRoom reports whether some GPUs are unallocated while an active
// job runs below its maximum or waits.
func (e *Engine) idleWithRoom() bool {
	used := 0
	room := false
	for _, j := range e.active {
		used += j.Workers * j.Spec.K()
		room = room || j.Workers < j.Spec.MaxWorkers && j.unschedulable() == ""
	}
	return room && used < e.GPUs()
}

func byID(j *job, id api.JobID) int { return cmp.Compare(j.ID, id) }

func (e *Engine) activate(id api.JobID) {
	i, found := slices.BinarySearchFunc(e.active, id, byID)
	if !found {
		j := e.jobs[id]
		e.active = slices.Insert(e.active, i, j)
		k, _ := slices.BinarySearchFunc(e.arrival, j, byArrival)
		e.arrival = slices.Insert(e.arrival, k, j)
	}
}

func (e *Engine) deactivate(id api.JobID) {
	if i, found := slices.BinarySearchFunc(e.active, id, byID); found {
		j := e.active[i]
		e.active = slices.Delete(e.active, i, i+1)
		if k, found := slices.BinarySearchFunc(e.arrival, j, byArrival); found {
			e.arrival = slices.Delete(e.arrival, k, k+1)
		}
	}
}

// byArrival orders jobs by submission time, then ID.
func byArrival(a, b *job) int {
	if c := cmp.Compare(a.Submitted, b.Submitted); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

// advance brings every active job's accounting up to the clock and applies
// Tiresias demotions and promotions.
func (e *Engine) advance() {
	now := e.clock.Now()
	if !now.After(e.now) {
		// Queues only move as service and waiting time accrue, so a step
		// at the same instant has nothing to update.
		return
	}
	dt := now.Sub(e.now).Seconds()
	for _, j := range e.active {
		j.advance(dt)
	}
	e.now = now
	if e.updateQueues() {
		e.queueAtKnown = false
		if e.usesQueues() {
			e.dirty = true
		}
	}
}

func (e *Engine) usesQueues() bool {
	n := e.policy.Name()
	return n == algorithm.NameTiresias || n == algorithm.NameElasticTiresias
}

// Restore rebuilds the engine's jobs from records saved before a restart:
// running jobs keep their allocation, placement and counters; waiting jobs
// are started by the next rescheduling. Add nodes first. Invalid records are
// skipped and reported together.
func (e *Engine) Restore(jobs []Job) error {
	e.advance()
	var errs []error
	for _, r := range jobs {
		if _, dup := e.jobs[r.ID]; dup || r.ID == "" {
			errs = append(errs, fmt.Errorf("job %q is a duplicate or has no ID", r.ID))
			continue
		}
		if err := r.Spec.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("job %s: %w", r.ID, err))
			continue
		}
		if t, ok := outOfStampRange(r); !ok {
			errs = append(errs, fmt.Errorf("job %s: time %s is outside the years 1678 to 2262", r.ID, t.Format(time.RFC3339)))
			continue
		}
		j := recordOf(r)
		if j.Phase == api.PhaseSubmitted || j.Phase == "" {
			j.Phase = api.PhaseWaiting
		}
		if j.Phase == api.PhaseRunning && (j.Workers < j.Spec.MinWorkers || j.Workers > j.Spec.MaxWorkers || len(j.Nodes) != j.Workers) {
			errs = append(errs, fmt.Errorf("job %s: running with %d workers on %d nodes, outside [%d, %d]",
				r.ID, j.Workers, len(j.Nodes), j.Spec.MinWorkers, j.Spec.MaxWorkers))
			continue
		}
		if j.Phase != api.PhaseRunning {
			j.Workers, j.Nodes = 0, nil
		}
		if j.Remaining == 0 {
			j.Remaining = -1
		}
		e.jobs[r.ID] = &j
		if j.active() {
			e.activate(r.ID)
		}
	}
	e.dirty, e.needPlacement, e.queueAtKnown = true, true, false
	return errors.Join(errs...)
}

// Due returns when the caller should call Tick next: when a rescheduling
// is wanted and the rate limit allows it, or when a Tiresias demotion or
// promotion falls due. ok is false when nothing is pending.
func (e *Engine) Due() (at time.Time, ok bool) {
	if e.dirty {
		at, ok = e.now, true
		if e.scheduled {
			at = later(e.now, e.lastSchedule.Add(e.rateLimit))
		}
	}
	if e.usesQueues() {
		if !e.queueAtKnown {
			e.queueAt, e.queueAtOK = e.nextQueueChange()
			e.queueAtKnown = true
		}
		if t, found := e.queueAt, e.queueAtOK; found && (!ok || t.Before(at)) {
			at, ok = t, true
		}
	}
	if t, found := e.agingAt(); found && (!ok || t.Before(at)) {
		at, ok = t, true
	}
	if t, found := e.protectionEndsAt(); found && (!ok || t.Before(at)) {
		at, ok = t, true
	}
	return at, ok
}

// agingAt returns when a policy whose ranking ages with waiting time alone
// (HeSRPT with Aging) should look again although nothing else happened:
// while a job waits, a tenth of Aging after the policy last ran, by when a
// waiting job's weight has grown by a tenth. Without it a waiting job
// gained from its aging only at the next arrival or completion, which a
// long job's run can put off indefinitely.
func (e *Engine) agingAt() (time.Time, bool) {
	if e.policy.Name() != algorithm.NameHeSRPT || !e.scheduled && e.planned.IsZero() {
		return time.Time{}, false
	}
	aging := e.algo.HeSRPT.Aging
	if !(aging > 0) || math.IsInf(aging, 0) {
		return time.Time{}, false
	}
	waits := false
	for _, j := range e.arrival {
		if j.Phase == api.PhaseWaiting && j.unschedulable() == "" {
			waits = true
			break
		}
	}
	if !waits {
		return time.Time{}, false
	}
	return e.planned.Add(time.Duration(aging / 10 * float64(time.Second))), true
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// Tick advances time and, when a rescheduling is wanted and the rate limit
// allows it, reschedules and returns the plan. A plan with no actions means
// nothing had to change; such a round does not count against the rate
// limit. On a policy or placement error the engine keeps its
// current plan, returns the error, and tries again after the rate limit.
func (e *Engine) Tick() (api.Plan, error) {
	e.advance()
	if at, ok := e.agingAt(); ok && !e.now.Before(at) {
		e.dirty = true
	}
	if at, ok := e.protectionEndsAt(); ok && !e.now.Before(at) {
		e.dirty = true
	}
	if !e.dirty || (e.scheduled && e.now.Before(e.lastSchedule.Add(e.rateLimit))) {
		return api.Plan{}, nil
	}
	plan, err := e.plan()
	if err != nil {
		// Try again after the rate limit rather than at once.
		e.scheduled, e.lastSchedule = true, e.now
		return api.Plan{}, fmt.Errorf("reschedule %s: %w", e.gpuType, err)
	}
	e.dirty, e.needPlacement, e.planned = e.replan, false, e.now
	e.replan = false
	if len(plan.Actions) > 0 {
		// The rate limit bounds churn: only rounds that change something
		// open a new window.
		e.scheduled, e.lastSchedule = true, e.now
	}
	e.assume(plan)
	e.queueAtKnown = false
	return plan, nil
}

// nodeList returns the nodes made ready for placement, in name order.
func (e *Engine) nodeList() (*placement.Nodes, error) {
	if e.placeNodes == nil {
		ns, err := placement.NewNodes(e.Nodes())
		if err != nil {
			return nil, err
		}
		e.placeNodes = ns
	}
	return e.placeNodes, nil
}

// forget undoes the assumption behind a failed action and asks for another
// rescheduling.
func (e *Engine) forget(ev ActionFailed) {
	id := ev.Action.Job
	j, ok := e.jobs[id]
	if !ok || j.undoAt == 0 || !j.active() {
		return
	}
	e.undos[j.undoAt-1].restore(j)
	msg := fmt.Sprintf("%s failed", strings.ToLower(string(ev.Action.Kind)))
	if ev.Err != nil {
		msg += ": " + ev.Err.Error()
	}
	j.setMessage(msg + "; retrying at the next rescheduling")
	j.undoAt = 0
	e.dirty, e.needPlacement = true, true
}
