package scheduler

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/vodascheduler/voda/internal/parallel"
	"github.com/vodascheduler/voda/pkg/api"
)

// Backend carries out an action on a cluster (Kubernetes, or the simulator).
// An error means the action did not happen; the engine then forgets it.
type Backend interface {
	Apply(ctx context.Context, a api.Action) error
}

// LoopClock is a Clock that can also wait.
type LoopClock interface {
	Clock
	After(d time.Duration) <-chan time.Time
}

// SystemClock is the real clock, for the controller.
type SystemClock struct{}

// Now implements Clock.
func (SystemClock) Now() time.Time { return time.Now() }

// After implements LoopClock.
func (SystemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Loop owns an engine on one goroutine (Run) and serialises everything else
// onto it through Do. It sleeps until the engine is due, so it never busy
// waits, and because every event is applied on the same goroutine that
// reschedules, an event arriving during or right after a rescheduling is
// seen by the next Due and always leads to another one: no wake-up is lost.
type Loop struct {
	engine  *Engine
	backend Backend
	clock   LoopClock
	reqs    chan request
	// OnError, if set, receives errors from rescheduling and from actions.
	OnError func(error)
	// AfterRound, if set, runs on the loop's goroutine after every
	// rescheduling that produced a plan, once its actions were applied; a
	// backend uses it to persist the engine's records.
	AfterRound func(*Engine, api.Plan)
	// Observe, if set, receives every rescheduling that computed a plan or
	// failed, for metrics.
	Observe func(Round)
	// Parallel is how many actions of one kind (the plan's halts, then its
	// scale-ins, starts, scale-outs and migrations) are applied at once;
	// 0 or 1 applies them one by one. Above 1 the backend's Apply must be
	// safe for concurrent use, and must not use the engine but to read it.
	Parallel int
}

// Round is one rescheduling, as Loop.Observe sees it.
type Round struct {
	Policy string
	// Took is the whole round, actions included, by the engine's stopwatch.
	Took time.Duration
	RoundTimes
	Plan api.Plan
	// Err is set when the policy or the placement failed.
	Err error
}

type request struct {
	fn   func(*Engine) error
	done chan error
}

// NewLoop wraps an engine. The engine must not be used directly afterwards.
func NewLoop(e *Engine, b Backend, c LoopClock) *Loop {
	return &Loop{engine: e, backend: b, clock: c, reqs: make(chan request)}
}

// Do runs fn on the loop's goroutine and returns its error. It fails if ctx
// ends first.
func (l *Loop) Do(ctx context.Context, fn func(*Engine) error) error {
	r := request{fn: fn, done: make(chan error, 1)}
	select {
	case l.reqs <- r:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Send applies an event on the loop's goroutine.
func (l *Loop) Send(ctx context.Context, ev Event) error {
	return l.Do(ctx, func(e *Engine) error { return e.Step(ev) })
}

// Run serves requests and reschedules when due until ctx ends.
func (l *Loop) Run(ctx context.Context) error {
	for {
		var wake <-chan time.Time
		if at, ok := l.engine.Due(); ok {
			wake = l.clock.After(max(at.Sub(l.clock.Now()), 0))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case r := <-l.reqs:
			r.done <- l.safely(func() error { return r.fn(l.engine) })
		case <-wake:
			if err := l.safely(func() error { return l.round(ctx) }); err != nil {
				l.report(err)
			}
		}
	}
}

// round reschedules and carries out the plan in order.
func (l *Loop) round(ctx context.Context) error {
	start := l.engine.stopwatch()
	plan, err := l.engine.Tick()
	if err != nil {
		l.observe(start, plan, err)
		return err
	}
	l.apply(ctx, plan.Actions)
	if len(plan.Actions) > 0 || plan.Rescheduled {
		if l.AfterRound != nil {
			l.AfterRound(l.engine, plan)
		}
		l.observe(start, plan, nil)
	}
	return nil
}

// apply carries out the actions in the plan's order, those of one kind
// at once when Parallel allows it: a group starts once the one before it
// is done, so capacity is freed before it is used. A failed action is
// forgotten by the engine, in the plan's order, once its group is done.
func (l *Loop) apply(ctx context.Context, actions []api.Action) {
	for len(actions) > 0 {
		n := 1
		for n < len(actions) && actions[n].Kind == actions[0].Kind {
			n++
		}
		group := actions[:n]
		actions = actions[n:]
		if l.Parallel <= 1 || n == 1 {
			for _, a := range group {
				l.failed(a, l.backend.Apply(ctx, a))
			}
			continue
		}
		errs := make([]error, n)
		parallel.For(n, l.Parallel, func(i int) { errs[i] = l.backend.Apply(ctx, group[i]) })
		for i, a := range group {
			l.failed(a, errs[i])
		}
	}
}

// failed reports an action's error, if any, and has the engine forget it.
func (l *Loop) failed(a api.Action, err error) {
	if err == nil {
		return
	}
	l.report(fmt.Errorf("%s %s: %w", a.Kind, a.Job, err))
	if err := l.engine.Step(ActionFailed{Action: a, Err: err}); err != nil {
		l.report(err)
	}
}

func (l *Loop) observe(start time.Time, plan api.Plan, err error) {
	if l.Observe != nil {
		l.Observe(Round{Policy: l.engine.Policy(), Took: l.engine.stopwatch().Sub(start), RoundTimes: l.engine.LastRound(), Plan: plan, Err: err})
	}
}

// safely turns a panic into an error so one bad round does not take the
// controller down; the engine keeps its previous state.
func (l *Loop) safely(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("scheduler panic: %v\n%s", r, debug.Stack())
		}
	}()
	return fn()
}

func (l *Loop) report(err error) {
	if l.OnError != nil {
		l.OnError(err)
	}
}
