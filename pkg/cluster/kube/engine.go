package kube

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vodascheduler/voda/internal/parallel"
	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/scheduler"
)

// engine is the scheduler of one GPU type and the backend that carries out
// its plans. It runs on the loop's goroutine, but for start, the status
// writes (see written) and Apply, which the loop calls for several actions
// at once (Loop.Parallel) while it waits.
type engine struct {
	c       *Controller
	gpuType api.GPUType
	eng     *scheduler.Engine
	loop    *scheduler.Loop
	// written is the status last written for each job, and when; wmu
	// guards it and tickets. Statuses are computed on the loop's goroutine
	// (or by actions it waits for) but may be written from others: each
	// takes a ticket when computed, and a job's writes go out one at a
	// time (its stripe of writing held), never one computed earlier after
	// one computed later.
	wmu     sync.Mutex
	written map[api.JobID]written
	tickets uint64
	writing [64]sync.Mutex
	// held is, per job, the latest progress of its starting workers not
	// written yet (see sendProgress); guarded by wmu.
	held map[api.JobID]pending

	// known holds the jobs the engine has, so that reconcilers need not
	// queue behind a scheduling round to learn it.
	mu    sync.Mutex
	known map[api.JobID]bool
}

func (e *engine) knows(id api.JobID) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.known[id]
}

func (e *engine) setKnown(id api.JobID, known bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if known {
		e.known[id] = true
	} else {
		delete(e.known, id)
	}
}

type written struct {
	status v1alpha1.TrainingJobStatus
	at     time.Time
	ticket uint64
}

// pending is a status computed for a job and not yet written.
type pending struct {
	id     api.JobID
	status v1alpha1.TrainingJobStatus
	at     time.Time
	ticket uint64
}

// lastWritten returns the status last written for a job.
func (e *engine) lastWritten(id api.JobID) (written, bool) {
	e.wmu.Lock()
	defer e.wmu.Unlock()
	w, ok := e.written[id]
	return w, ok
}

// forgetWritten drops what was written for a job that left the engine.
func (e *engine) forgetWritten(id api.JobID) {
	e.wmu.Lock()
	defer e.wmu.Unlock()
	delete(e.written, id)
	delete(e.held, id)
}

// pend takes a ticket for a status just computed.
func (e *engine) pend(id api.JobID, s v1alpha1.TrainingJobStatus, now time.Time) pending {
	e.wmu.Lock()
	defer e.wmu.Unlock()
	e.tickets++
	return pending{id: id, status: s, at: now, ticket: e.tickets}
}

// newEngine builds the engine of a GPU type; the caller holds c.mu.
func newEngine(c *Controller, t api.GPUType) *engine {
	s := c.settingsFor(t)
	eng, err := scheduler.New(scheduler.Config{
		GPUType: t, Policy: s.policy, Algorithm: s.algo,
		RateLimit: s.rateLimit, Clock: scheduler.SystemClock{},
	})
	if err != nil {
		// New and parseSettings validated the policy and rate limit.
		panic(fmt.Sprintf("scheduler for %s: %v", t, err))
	}
	if err := eng.Step(scheduler.SetQueues{Queues: c.queues.quotasFor(t)}); err != nil {
		c.log.Error(err, "queues", "gpuType", t)
	}
	e := &engine{c: c, gpuType: t, eng: eng, written: map[api.JobID]written{}, held: map[api.JobID]pending{}, known: map[api.JobID]bool{}}
	e.loop = scheduler.NewLoop(eng, e, scheduler.SystemClock{})
	e.loop.Parallel = c.opts.WriteConcurrency
	e.loop.OnError = func(err error) { c.log.Error(err, "scheduler", "gpuType", t) }
	e.loop.AfterRound = func(en *scheduler.Engine, _ api.Plan) { e.persistAll(c.runCtx, en, false) }
	if m := c.opts.Metrics; m != nil {
		// On the loop's goroutine, like every use of the engine.
		e.loop.Observe = func(r scheduler.Round) {
			m.Round(t, r, eng.Jobs(), eng.GPUs())
			m.Queues(t, eng.Queues(), eng.QuotaStats())
		}
	}
	return e
}

// start runs the loop, and the refresh of the jobs' counters: every
// second, the jobs whose counters are older than the sync period, oldest
// first, as many as the controller's budget allows.
func (e *engine) start(ctx context.Context) {
	go func() { _ = e.loop.Run(ctx) }()
	go func() {
		t := time.NewTicker(min(time.Second, e.c.opts.SyncPeriod))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				_ = e.loop.Do(ctx, func(en *scheduler.Engine) error {
					e.persistAll(ctx, en, true)
					return nil
				})
			}
		}
	}()
}

// writeBudget is a token bucket of writes a second, shared by the engines:
// it holds at most one second's worth.
type writeBudget struct {
	mu     sync.Mutex
	rate   float64
	tokens float64
	at     time.Time
}

// take returns how many of want writes may go now, and spends them.
func (b *writeBudget) take(now time.Time, want int) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.at.IsZero() {
		b.tokens = b.rate
	} else if now.After(b.at) {
		b.tokens = min(b.rate, b.tokens+now.Sub(b.at).Seconds()*b.rate)
	}
	b.at = now
	n := min(want, int(b.tokens))
	b.tokens -= float64(n)
	return n
}

// Apply carries out an action by writing the job's new state into its
// TrainingJob status; the job's reconciler then converges the MPIJob and
// the pods. It implements scheduler.Backend.
func (e *engine) Apply(ctx context.Context, a api.Action) error {
	j, ok := e.eng.Job(a.Job)
	if !ok {
		return fmt.Errorf("job %s is not known", a.Job)
	}
	e.c.forgetWorkers(a.Job)
	if err := e.persist(ctx, j, true); err != nil {
		return err
	}
	reason, msg := describe(a, j)
	e.c.event(a.Job, corev1.EventTypeNormal, reason, msg)
	if a.Kind != api.ActionHalt {
		e.c.restarting(a.Job, a.To)
	}
	return nil
}

// describe phrases an action as an Event.
func describe(a api.Action, j scheduler.Job) (reason, msg string) {
	why := ""
	if a.Reason != "" {
		why = " (" + a.Reason + ")"
	}
	switch a.Kind {
	case api.ActionStart:
		verb := "Started"
		if j.Preemptions > 0 {
			verb = "Resumed"
		}
		return verb, fmt.Sprintf("%s with %d workers on %s%s", verb, a.To, nodeList(a.Nodes), why)
	case api.ActionScaleIn, api.ActionScaleOut:
		return "Scaled", fmt.Sprintf("Scaled %d→%d workers, on %s%s", a.From, a.To, nodeList(a.Nodes), why)
	case api.ActionHalt:
		return "Preempted", fmt.Sprintf("Preempted: %d workers released%s", a.From, why)
	case api.ActionMigrate:
		moves := make([]string, len(a.Moves))
		for i, m := range a.Moves {
			moves[i] = fmt.Sprintf("worker-%d %s→%s", m.Index, m.From, m.To)
		}
		return "Migrated", "Migrated " + strings.Join(moves, ", ") + why
	}
	return string(a.Kind), a.String()
}

// nodeList names the distinct nodes of a placement in worker order.
func nodeList(nodes []api.NodeName) string {
	var names []string
	for _, s := range api.Slots(nodes) {
		names = append(names, string(s.Node))
	}
	return strings.Join(names, ", ")
}

// persistAll writes every job whose decision changed and, with refresh,
// the counters of the jobs last written more than a sync period ago,
// oldest first, as many as the controller's budget allows now: with
// thousands of jobs, refreshing them all every period would take the
// whole client rate and hold the loop (and every decision) behind it.
// Up to the controller's WriteConcurrency writes go at once.
func (e *engine) persistAll(ctx context.Context, en *scheduler.Engine, refresh bool) {
	type stale struct {
		j  scheduler.Job
		s  v1alpha1.TrainingJobStatus
		at time.Time
	}
	var due []stale
	var out []pending
	now := time.Now()
	for _, j := range en.Jobs() {
		w, ok := e.lastWritten(j.ID)
		if ok && w.status.Phase.Final() {
			continue // ended and written: nothing about it changes again
		}
		s := e.statusFor(j)
		switch {
		case !ok || !sameDecision(w.status, s):
			out = append(out, e.pend(j.ID, s, now))
		case refresh && now.Sub(w.at) >= e.c.opts.SyncPeriod:
			due = append(due, stale{j, s, w.at})
		}
	}
	slices.SortFunc(due, func(a, b stale) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return strings.Compare(string(a.j.ID), string(b.j.ID))
	})
	if len(due) > 0 {
		for _, d := range due[:e.c.syncWrites.take(now, len(due))] {
			out = append(out, e.pend(d.j.ID, d.s, now))
		}
	}
	errs := make([]error, len(out))
	parallel.For(len(out), e.c.opts.WriteConcurrency, func(i int) { errs[i] = e.send(ctx, out[i]) })
	for i, err := range errs {
		if err != nil {
			e.c.log.Error(err, "write status", "job", out[i].id)
		}
	}
}

// statusFor is the status a job's record gives, as written.
func (e *engine) statusFor(j scheduler.Job) v1alpha1.TrainingJobStatus {
	s := statusOf(j)
	e.c.showWorkers(j.ID, j.Spec.K(), &s)
	e.c.showBatch(j.ID, j.Workers, &s)
	if m := e.c.opts.Metrics; m != nil && s.Batch != nil && s.Batch.Global > 0 && !s.Phase.Final() {
		key := jobKey(j.ID)
		m.Batch(e.gpuType, key.Namespace, key.Name, int(s.Batch.Global), float64(s.Batch.EfficiencyPercent)/100)
	}
	if s.Phase == v1alpha1.PhaseWaiting && e.eng.GPUs() == 0 {
		s.Message = fmt.Sprintf("no schedulable nodes of GPU type %s: label GPU nodes with %s=%s",
			e.gpuType, v1alpha1.AcceleratorLabel, e.gpuType)
	}
	return s
}

// persist writes a job's record into its TrainingJob status. Unless force
// is set it skips a write that would change only the counters within the
// sync period, or nothing at all.
func (e *engine) persist(ctx context.Context, j scheduler.Job, force bool) error {
	p, ok := e.prepare(j, force)
	if !ok {
		return nil
	}
	return e.send(ctx, p)
}

// prepare computes the status persist writes, and reports whether it is
// to be written.
func (e *engine) prepare(j scheduler.Job, force bool) (pending, bool) {
	now := time.Now()
	s := e.statusFor(j)
	if w, ok := e.lastWritten(j.ID); ok && !force && sameDecision(w.status, s) &&
		(s.Phase.Final() || now.Sub(w.at) < e.c.opts.SyncPeriod) {
		return pending{}, false
	}
	return e.pend(j.ID, s, now), true
}

// pendingFor is prepare's status, nil when there is nothing to write.
func (e *engine) pendingFor(j scheduler.Job, force bool) *pending {
	if p, ok := e.prepare(j, force); ok {
		return &p
	}
	return nil
}

// update runs fn on the loop and writes the status it computed, if any,
// off the loop with write (send, or sendProgress): the loop goes on
// scheduling meanwhile, and a status of the job computed later is never
// overwritten by this one (see send).
func (e *engine) update(ctx context.Context, write func(context.Context, pending) error, fn func(en *scheduler.Engine) (*pending, error)) error {
	var p *pending
	err := e.loop.Do(ctx, func(en *scheduler.Engine) error {
		var err error
		p, err = fn(en)
		return err
	})
	if err != nil || p == nil {
		return err
	}
	return write(ctx, *p)
}

// send patches a job's status and remembers it, unless a status computed
// after it was written already.
func (e *engine) send(ctx context.Context, p pending) error {
	data, err := statusPatch(p.status)
	if err != nil {
		return err
	}
	mu := &e.writing[stripe(p.id)]
	mu.Lock()
	defer mu.Unlock()
	if w, ok := e.lastWritten(p.id); ok && w.ticket > p.ticket {
		return nil
	}
	tj := &v1alpha1.TrainingJob{}
	key := jobKey(p.id)
	tj.Namespace, tj.Name = key.Namespace, key.Name
	if err := e.c.client.Status().Patch(ctx, tj, client.RawPatch("application/merge-patch+json", data)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil // deleted; the reconciler tells the engine
		}
		return fmt.Errorf("write status of %s: %w", p.id, err)
	}
	e.wmu.Lock()
	e.written[p.id] = written{status: p.status, at: p.at, ticket: p.ticket}
	e.wmu.Unlock()
	return nil
}

// progressEvery is how often, at most, a starting job's status is
// rewritten only to say how far its workers got: each worker's step
// (created, placed, bound, running) would otherwise cost a write.
const progressEvery = 2 * time.Second

// sendProgress writes a status a reconciler computed from the job's
// workers: at once if it says more than how far the starting workers got
// (a new phase, size or placement, or every worker running) or if the
// job's last write is progressEvery old; else it is held, and the latest
// held is written when progressEvery has passed since that write.
func (e *engine) sendProgress(ctx context.Context, p pending) error {
	e.wmu.Lock()
	w, ok := e.written[p.id]
	wait := progressEvery - p.at.Sub(w.at)
	if !ok || wait <= 0 || !progressOnly(w.status, p.status) {
		e.wmu.Unlock()
		return e.send(ctx, p)
	}
	_, timer := e.held[p.id]
	e.held[p.id] = p
	e.wmu.Unlock()
	if !timer {
		time.AfterFunc(wait, func() {
			e.wmu.Lock()
			h, ok := e.held[p.id]
			delete(e.held, p.id)
			e.wmu.Unlock()
			if !ok {
				return
			}
			if err := e.send(ctx, h); err != nil {
				e.c.log.Error(err, "write status", "job", h.id)
			}
		})
	}
	return nil
}

// progressOnly reports whether two statuses of a starting job differ only
// in how far its workers got.
func progressOnly(a, b v1alpha1.TrainingJobStatus) bool {
	if a.Phase != v1alpha1.PhaseStarting || b.Phase != v1alpha1.PhaseStarting {
		return false
	}
	a.RunningWorkers, a.Message = 0, ""
	b.RunningWorkers, b.Message = 0, ""
	return sameDecision(a, b)
}

// stripe picks the lock of writing that orders a job's writes.
func stripe(id api.JobID) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return int(h.Sum32() % uint32(len(engine{}.writing)))
}

// admit makes sure the engine knows a TrainingJob: a new one is submitted;
// one that has a status but is unknown here (its GPU type's engine was
// just created) is restored from it. A job no node can run (unschedulable,
// its reason) is held in the same step, before any round could start it.
func (e *engine) admit(ctx context.Context, tj *v1alpha1.TrainingJob, unschedulable string, q queueOf) error {
	id := jobID(client.ObjectKeyFromObject(tj))
	if e.knows(id) {
		return e.c.setJobQueue(ctx, e, id, q)
	}
	return e.update(ctx, e.send, func(en *scheduler.Engine) (*pending, error) {
		if _, ok := en.Job(id); ok {
			e.setKnown(id, true)
			return nil, nil
		}
		switch {
		case tj.Status.Phase == "" || tj.Status.Phase == v1alpha1.PhaseSubmitted:
			rem, fit := e.c.prior(tj)
			if err := en.Step(scheduler.JobSubmitted{ID: id, Spec: specOf(tj, e.c.opts.Accelerators), Remaining: rem, Speedup: fit.Speedup, Measured: fit.KnownAt}); err != nil {
				return nil, err
			}
			e.submitted(tj)
			if m := e.c.opts.Metrics; m != nil {
				m.Submitted(e.gpuType)
			}
		default:
			rec := recordOf(tj, time.Now(), e.c.opts.Accelerators)
			if err := en.Restore([]scheduler.Job{rec}); err != nil {
				rec.Phase, rec.Workers, rec.Nodes = api.PhaseWaiting, 0, nil
				if err := en.Restore([]scheduler.Job{rec}); err != nil {
					return nil, err
				}
			}
		}
		if unschedulable != "" {
			if err := en.Step(scheduler.JobUnschedulable{ID: id, Reason: unschedulable}); err != nil {
				return nil, err
			}
		}
		if err := en.Step(scheduler.JobQueue{ID: id, ClusterQueue: q.clusterQueue, Problem: q.problem}); err != nil {
			return nil, err
		}
		e.c.mu.Lock()
		e.c.jobQueues[id] = q
		e.c.mu.Unlock()
		e.setKnown(id, true)
		j, _ := en.Job(id)
		return e.pendingFor(j, true), nil
	})
}

// submitted records the Event of a job's first admission.
func (e *engine) submitted(tj *v1alpha1.TrainingJob) {
	e.c.event(jobID(client.ObjectKeyFromObject(tj)), corev1.EventTypeNormal, "Submitted",
		fmt.Sprintf("Queued for GPU type %s with %d–%d workers", e.gpuType, tj.Spec.MinWorkers, tj.Spec.MaxWorkers))
}

// finish tells the engine a job ended, and writes it down.
func (e *engine) finish(ctx context.Context, id api.JobID, failed bool, msg string) error {
	return e.update(ctx, e.send, func(en *scheduler.Engine) (*pending, error) {
		if j, ok := en.Job(id); ok && j.Phase.Final() {
			// Ended already: this reconcile read the TrainingJob before
			// its final status reached the cache. Write that status only
			// if it was not written.
			return e.pendingFor(j, false), nil
		}
		var ev scheduler.Event = scheduler.JobCompleted{ID: id}
		reason, words := "Completed", "Training completed"
		if failed {
			ev, reason, words = scheduler.JobFailed{ID: id, Reason: msg}, "Failed", "Training failed"
		}
		if msg != "" {
			words += ": " + msg
		}
		if err := en.Step(ev); err != nil {
			return nil, err
		}
		e.c.event(id, eventType(failed), reason, words)
		learned := e.c.finished(ctx, id, !failed)
		e.jobGone(id)
		j, _ := en.Job(id)
		if learned {
			if err := e.relearn(en, j); err != nil {
				return nil, err
			}
		}
		if m := e.c.opts.Metrics; m != nil {
			m.Finished(e.gpuType, j, j.Phase, time.Now())
		}
		return e.pendingFor(j, true), nil
	})
}

// forget drops a deleted job.
func (e *engine) forget(ctx context.Context, id api.JobID) error {
	e.setKnown(id, false)
	return e.loop.Do(ctx, func(en *scheduler.Engine) error {
		e.forgetWritten(id)
		e.c.finished(ctx, id, false)
		e.jobGone(id)
		j, ok := en.Job(id)
		if !ok {
			return nil
		}
		if m := e.c.opts.Metrics; m != nil && !j.Phase.Final() {
			m.Deleted(e.gpuType)
		}
		return en.Step(scheduler.JobDeleted{ID: id})
	})
}

func eventType(warning bool) string {
	if warning {
		return corev1.EventTypeWarning
	}
	return corev1.EventTypeNormal
}

// event records a Kubernetes Event on a TrainingJob.
func (c *Controller) event(id api.JobID, typ, reason, msg string) {
	key := jobKey(id)
	tj := &v1alpha1.TrainingJob{}
	if err := c.client.Get(context.Background(), key, tj); err != nil {
		tj.Namespace, tj.Name = key.Namespace, key.Name
	}
	c.recorder.Event(tj, typ, reason, msg)
	c.log.Info(msg, "job", id)
}

// jobGone drops an ended or deleted job's per-job metrics.
func (e *engine) jobGone(id api.JobID) {
	if m := e.c.opts.Metrics; m != nil {
		k := jobKey(id)
		m.JobGone(e.gpuType, k.Namespace, k.Name)
	}
	e.c.runningAgain(id, e.gpuType, false)
}

// EventWorkers reads back, from an Event describe wrote, the workers the
// job has after it: the dashboard draws a job's timeline from its Events.
// ok is false for Events that do not change the job's size.
func EventWorkers(reason, msg string) (workers int, ok bool) {
	switch reason {
	case "Started", "Resumed":
		_, after, found := strings.Cut(msg, " with ")
		if !found {
			return 0, false
		}
		var n int
		if _, err := fmt.Sscanf(after, "%d workers", &n); err != nil {
			return 0, false
		}
		return n, true
	case "Scaled":
		var from, to int
		if _, err := fmt.Sscanf(msg, "Scaled %d→%d workers", &from, &to); err != nil {
			return 0, false
		}
		return to, true
	case "Preempted", "Completed", "Failed", "GangTimeout":
		return 0, true
	}
	return 0, false
}
