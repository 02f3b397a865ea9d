package scheduler_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/scheduler"
)

// randomRun drives an engine with a random stream of valid events and
// returns a transcript of every plan. It fails the test if an invariant
// breaks after any rescheduling.
func randomRun(t *testing.T, seed uint64) string {
	r := rand.New(rand.NewPCG(seed, 99))
	c := &fakeClock{t: t0}
	cfg := scheduler.DefaultConfig("gpu", c)
	cfg.Policy = algorithm.Names()[r.IntN(len(algorithm.Names()))]
	cfg.RateLimit = time.Duration(r.IntN(3)) * 15 * time.Second
	e, err := scheduler.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	var last api.Plan
	nextJob := 0
	for step := range 300 {
		jobs := e.Jobs()
		pick := func() (api.JobID, bool) {
			if len(jobs) == 0 {
				return "", false
			}
			return jobs[r.IntN(len(jobs))].ID, true
		}
		var ev scheduler.Event
		switch k := r.IntN(20); {
		case k < 5:
			lo := 1 + r.IntN(4)
			ev = scheduler.JobSubmitted{ID: api.JobID(fmt.Sprintf("j%03d", nextJob)),
				Spec: api.JobSpec{MinWorkers: lo, MaxWorkers: lo + r.IntN(8), Priority: r.IntN(3),
					GPUsPerWorker: []int{0, 1, 1, 2, 3, 4}[r.IntN(6)]},
				Remaining: float64(r.IntN(20000))}
			nextJob++
		case k < 7:
			if id, ok := pick(); ok {
				ev = scheduler.JobCompleted{ID: id}
			}
		case k < 8:
			if id, ok := pick(); ok {
				ev = scheduler.JobFailed{ID: id}
			}
		case k < 9:
			if id, ok := pick(); ok {
				ev = scheduler.JobDeleted{ID: id}
			}
		case k < 11:
			ev = scheduler.NodeSet{Node: api.Node{Name: api.NodeName(fmt.Sprintf("n%d", r.IntN(6))), GPUs: r.IntN(9)}}
		case k < 12:
			ev = scheduler.NodeRemoved{Name: api.NodeName(fmt.Sprintf("n%d", r.IntN(6)))}
		case k < 13:
			ev = scheduler.SetPolicy{Name: algorithm.Names()[r.IntN(len(algorithm.Names()))]}
		case k < 14:
			if len(last.Actions) > 0 {
				a := last.Actions[r.IntN(len(last.Actions))]
				ev = scheduler.ActionFailed{Action: a, Err: errors.New("injected")}
			}
		case k < 15:
			if id, ok := pick(); ok {
				ev = scheduler.Progress{ID: id, Remaining: float64(r.IntN(5000))}
			}
		default:
			c.t = c.t.Add(time.Duration(r.IntN(120)) * time.Second)
		}
		if ev != nil {
			// Invalid events (a job finished twice, an unknown node) are
			// rejected; that is part of what is tested.
			_ = e.Step(ev)
		}
		plan, err := e.Tick()
		if err != nil {
			t.Fatalf("seed %d step %d: %v", seed, step, err)
		}
		if !plan.Rescheduled {
			continue
		}
		if err := checkInvariants(e); err != nil {
			t.Fatalf("seed %d step %d: %v", seed, step, err)
		}
		last = plan
		fmt.Fprintf(&out, "%v %s\n", c.t.Sub(t0), formatActions(plan.Actions))
	}
	return out.String()
}

func TestRandomEventStreamsKeepInvariantsAndAreDeterministic(t *testing.T) {
	for seed := range uint64(60) {
		first := randomRun(t, seed)
		if second := randomRun(t, seed); first != second {
			t.Fatalf("seed %d: two runs of the same events differ", seed)
		}
	}
}
