package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/scheduler"
)

// recorder is a backend that records what it is asked to do, when, and can
// fail or panic on chosen actions.
type recorder struct {
	mu      sync.Mutex
	start   time.Time
	applied []string
	fail    map[string]int // "Kind job" → failures left
	panicOn string
}

func (r *recorder) Apply(_ context.Context, a api.Action) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := fmt.Sprintf("%s %s", a.Kind, a.Job)
	if key == r.panicOn {
		r.panicOn = ""
		panic("backend exploded")
	}
	if r.fail[key] > 0 {
		r.fail[key]--
		r.applied = append(r.applied, fmt.Sprintf("+%v failed %s", time.Since(r.start), key))
		return errors.New("apiserver unavailable")
	}
	r.applied = append(r.applied, fmt.Sprintf("+%v %s %d→%d", time.Since(r.start), key, a.From, a.To))
	return nil
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.applied
	r.applied = nil
	return out
}

func job(id string, min, max int) scheduler.Event {
	return scheduler.JobSubmitted{ID: api.JobID(id), Spec: api.JobSpec{MinWorkers: min, MaxWorkers: max}}
}

// startLoop runs a loop with a 30 s rate limit and an 8-GPU node inside the
// current synctest bubble.
func startLoop(t *testing.T, policy string, b *recorder) (*scheduler.Loop, context.Context, *[]error) {
	cfg := scheduler.DefaultConfig("gpu", scheduler.SystemClock{})
	cfg.Policy = policy
	e, err := scheduler.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b.start = time.Now()
	l := scheduler.NewLoop(e, b, scheduler.SystemClock{})
	var errs []error
	l.OnError = func(err error) { errs = append(errs, err) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { l.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	must(t, l.Send(ctx, scheduler.NodeSet{Node: api.Node{Name: "n1", GPUs: 8}}))
	return l, ctx, &errs
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestLoopCoalescesEventsUnderTheRateLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &recorder{}
		l, ctx, _ := startLoop(t, "FIFO", b)
		must(t, l.Send(ctx, job("a", 2, 2)))
		synctest.Wait()
		if diff := cmp.Diff([]string{"+0s Start a 0→2"}, b.take()); diff != "" {
			t.Fatalf("first round (-want,+got):\n%s", diff)
		}
		time.Sleep(5 * time.Second)
		must(t, l.Send(ctx, job("b", 2, 2)))
		time.Sleep(5 * time.Second)
		must(t, l.Send(ctx, job("c", 2, 2)))
		synctest.Wait()
		if got := b.take(); len(got) != 0 {
			t.Fatalf("rescheduled inside the rate-limit window: %v", got)
		}
		time.Sleep(20 * time.Second)
		synctest.Wait()
		want := []string{"+30s Start b 0→2", "+30s Start c 0→2"}
		if diff := cmp.Diff(want, b.take()); diff != "" {
			t.Fatalf("coalesced round (-want,+got):\n%s", diff)
		}
	})
}

func TestLoopEventRightAfterARoundIsNotLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &recorder{}
		l, ctx, _ := startLoop(t, "FIFO", b)
		must(t, l.Send(ctx, job("a", 2, 2)))
		synctest.Wait()
		b.take()
		// Arrives in the same instant as the round that just ran.
		must(t, l.Send(ctx, job("b", 2, 2)))
		time.Sleep(time.Hour)
		synctest.Wait()
		if diff := cmp.Diff([]string{"+30s Start b 0→2"}, b.take()); diff != "" {
			t.Fatalf("(-want,+got):\n%s", diff)
		}
	})
}

func TestLoopRetriesAFailedActionNextRound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &recorder{fail: map[string]int{"Start b": 1}}
		l, ctx, errs := startLoop(t, "FIFO", b)
		// Both in one request, so they reach the same round.
		must(t, l.Do(ctx, func(e *scheduler.Engine) error {
			return errors.Join(e.Step(job("a", 2, 2)), e.Step(job("b", 2, 2)))
		}))
		time.Sleep(time.Hour)
		synctest.Wait()
		want := []string{"+0s Start a 0→2", "+0s failed Start b", "+30s Start b 0→2"}
		if diff := cmp.Diff(want, b.take()); diff != "" {
			t.Fatalf("(-want,+got):\n%s", diff)
		}
		if len(*errs) != 1 || !strings.Contains((*errs)[0].Error(), "apiserver unavailable") {
			t.Errorf("reported errors: %v", *errs)
		}
		var j scheduler.Job
		must(t, l.Do(ctx, func(e *scheduler.Engine) error { j, _ = e.Job("b"); return nil }))
		if j.Phase != api.PhaseRunning || j.Workers != 2 {
			t.Errorf("b is %s with %d workers, want Running with 2", j.Phase, j.Workers)
		}
	})
}

func TestLoopSurvivesAPanickingBackend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &recorder{panicOn: "Start a"}
		l, ctx, errs := startLoop(t, "FIFO", b)
		must(t, l.Send(ctx, job("a", 2, 2)))
		synctest.Wait()
		if len(*errs) != 1 || !strings.Contains((*errs)[0].Error(), "backend exploded") {
			t.Fatalf("reported errors: %v", *errs)
		}
		// The loop still serves requests and schedules.
		must(t, l.Send(ctx, job("b", 2, 2)))
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := b.take(); len(got) == 0 {
			t.Fatal("no rounds after the panic")
		}
	})
}

func TestLoopRejectsBadEventsAndKeepsState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &recorder{}
		l, ctx, _ := startLoop(t, "FIFO", b)
		if err := l.Send(ctx, scheduler.SetPolicy{Name: "lottery"}); err == nil ||
			!strings.Contains(err.Error(), "valid policies are") {
			t.Fatalf("got %v, want an error listing valid policies", err)
		}
		var policy string
		must(t, l.Do(ctx, func(e *scheduler.Engine) error { policy = e.Policy(); return nil }))
		if policy != "FIFO" {
			t.Errorf("policy is %s after a rejected change, want FIFO", policy)
		}
	})
}

// AfterRound runs on the loop's goroutine after every round that
// rescheduled (the node's arrival, with nothing to do yet, is one), once its
// actions were applied, and sees the engine with the plan assumed.
func TestLoopAfterRoundSeesTheAppliedPlan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := scheduler.DefaultConfig("gpu", scheduler.SystemClock{})
		e, err := scheduler.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		b := &recorder{start: time.Now()}
		l := scheduler.NewLoop(e, b, scheduler.SystemClock{})
		var rounds []string
		l.AfterRound = func(en *scheduler.Engine, p api.Plan) {
			j, _ := en.Job("a")
			rounds = append(rounds, fmt.Sprintf("%d actions, applied %d, a has %d workers", len(p.Actions), len(b.applied), j.Workers))
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { l.Run(ctx); close(done) }()
		defer func() { cancel(); <-done }()
		must(t, l.Send(ctx, scheduler.NodeSet{Node: api.Node{Name: "n1", GPUs: 8}}))
		synctest.Wait() // the node's round runs before the job arrives
		must(t, l.Send(ctx, job("a", 2, 4)))
		synctest.Wait()
		must(t, l.Do(ctx, func(*scheduler.Engine) error {
			if diff := cmp.Diff([]string{"0 actions, applied 0, a has 0 workers", "1 actions, applied 1, a has 4 workers"}, rounds); diff != "" {
				t.Errorf("rounds (-want,+got):\n%s", diff)
			}
			return nil
		}))
	})
}

// Observe sees every round that planned, with the times of its parts by
// the engine's stopwatch.
func TestLoopObserveTimesRounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := scheduler.DefaultConfig("gpu", scheduler.SystemClock{})
		// A stopwatch that advances 1 ms per reading.
		tick := time.Unix(0, 0)
		cfg.Stopwatch = func() time.Time { tick = tick.Add(time.Millisecond); return tick }
		e, err := scheduler.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		l := scheduler.NewLoop(e, &recorder{start: time.Now()}, scheduler.SystemClock{})
		var rounds []scheduler.Round
		l.Observe = func(r scheduler.Round) { rounds = append(rounds, r) }
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { l.Run(ctx); close(done) }()
		defer func() { cancel(); <-done }()
		must(t, l.Send(ctx, scheduler.NodeSet{Node: api.Node{Name: "n1", GPUs: 8}}))
		synctest.Wait()
		must(t, l.Send(ctx, job("a", 2, 4)))
		synctest.Wait()
		must(t, l.Do(ctx, func(*scheduler.Engine) error {
			if len(rounds) != 2 {
				t.Fatalf("%d rounds observed, want 2", len(rounds))
			}
			r := rounds[1]
			// Readings: round start, allocate start/end, place start/end, round end.
			want := scheduler.Round{Policy: "ElasticFIFO", Took: 5 * time.Millisecond,
				RoundTimes: scheduler.RoundTimes{Algorithm: time.Millisecond, Placement: time.Millisecond}}
			if r.Policy != want.Policy || r.Took != want.Took || r.RoundTimes != want.RoundTimes || len(r.Plan.Actions) != 1 || r.Err != nil {
				t.Errorf("round %+v, want %+v with one action", r, want)
			}
			return nil
		}))
	})
}

// slow is a backend whose every action takes a second, recording when each
// began and ended; it fails the actions in fail once.
type slow struct {
	mu          sync.Mutex
	start       time.Time
	applied     []string
	now, most   int
	fail        map[string]bool
	began, done map[string]time.Duration
}

func (s *slow) Apply(_ context.Context, a api.Action) error {
	key := fmt.Sprintf("%s %s", a.Kind, a.Job)
	s.mu.Lock()
	s.now++
	s.most = max(s.most, s.now)
	s.began[key] = time.Since(s.start)
	s.mu.Unlock()
	time.Sleep(time.Second)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now--
	s.done[key] = time.Since(s.start)
	if s.fail[key] {
		delete(s.fail, key)
		return errors.New("apiserver unavailable")
	}
	s.applied = append(s.applied, fmt.Sprintf("%s %d→%d", key, a.From, a.To))
	return nil
}

// With Parallel, the actions of one kind run at once, at most Parallel of
// them (here three of the four starts), each kind only once the one before it is done (capacity is freed
// before it is used); a failed one is forgotten and retried as before.
func TestLoopParallelAppliesOneKindAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := scheduler.DefaultConfig("gpu", scheduler.SystemClock{})
		cfg.Policy = "ElasticFIFO"
		e, err := scheduler.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		b := &slow{start: time.Now(), fail: map[string]bool{"Start d": true},
			began: map[string]time.Duration{}, done: map[string]time.Duration{}}
		l := scheduler.NewLoop(e, b, scheduler.SystemClock{})
		l.Parallel = 3
		var errs []error
		l.OnError = func(err error) { errs = append(errs, err) }
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { l.Run(ctx); close(done) }()
		defer func() { cancel(); <-done }()
		must(t, l.Do(ctx, func(e *scheduler.Engine) error {
			return errors.Join(e.Step(scheduler.NodeSet{Node: api.Node{Name: "n1", GPUs: 8}}),
				e.Step(job("a", 1, 8)), e.Step(job("a2", 1, 8)))
		}))
		time.Sleep(time.Minute)
		synctest.Wait()
		// a and a2 hold 4 each: four more jobs shrink both and start, in
		// a round at once (the last was a minute ago), done in 3 s.
		must(t, l.Do(ctx, func(e *scheduler.Engine) error {
			return errors.Join(e.Step(job("b", 1, 1)), e.Step(job("c", 1, 1)), e.Step(job("d", 1, 1)), e.Step(job("e", 1, 1)))
		}))
		time.Sleep(10 * time.Second)
		synctest.Wait()
		ins := max(b.done["ScaleIn a"], b.done["ScaleIn a2"])
		if ins == 0 {
			t.Fatalf("no scale-ins: %v", b.applied)
		}
		for _, s := range []string{"Start b", "Start c", "Start d", "Start e"} {
			if b.began[s] < ins {
				t.Errorf("%s began at %v, before the scale-ins ended (%v)", s, b.began[s], ins)
			}
		}
		if b.most != 3 {
			t.Errorf("at most %d actions at once, want 3 (of the four starts)", b.most)
		}
		if b.began["ScaleIn a"] != b.began["ScaleIn a2"] {
			t.Errorf("scale-ins began at %v and %v, want together", b.began["ScaleIn a"], b.began["ScaleIn a2"])
		}
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), "Start d") {
			t.Errorf("reported errors: %v", errs)
		}
		var d scheduler.Job
		must(t, l.Do(ctx, func(e *scheduler.Engine) error { d, _ = e.Job("d"); return nil }))
		if d.Phase != api.PhaseWaiting || d.Workers != 0 {
			t.Errorf("d is %s with %d workers after its start failed, want Waiting with 0", d.Phase, d.Workers)
		}
		time.Sleep(time.Minute) // the next round retries it
		synctest.Wait()
		if !slices.Contains(b.applied, "Start d 0→1") {
			t.Errorf("d's start not retried: %v", b.applied)
		}
	})
}
