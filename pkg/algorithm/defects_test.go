package algorithm_test

// Each test here pins a defect of the original Voda scheduler (listed in the
// research notes on it, §4 and §10) to the corrected behaviour.

import (
	"strings"
	"testing"

	. "github.com/vodascheduler/voda/internal/testutil"
	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/api"
)

// The original's Elastic-FIFO and Elastic-SRJF handed single leftover GPUs
// to jobs that had not received their minimum, and Elastic-SRJF grew jobs
// with min == max past their maximum; both made its validator panic.
func TestDefectElasticLeftoversRespectTheRange(t *testing.T) {
	snap := Snapshot(7,
		MakeJob("a").Workers(2, 2).Remaining(h1),
		MakeJob("b").Workers(6, 8).Remaining(2*h1).SubmittedAt(min1))
	for _, p := range []algorithm.Policy{algorithm.ElasticFIFO{}, algorithm.ElasticSRJF{}} {
		got, err := p.Allocate(snap)
		if err != nil {
			t.Fatalf("%s: %v", p.Name(), err)
		}
		want := api.Allocation{"a": 2, "b": 0}
		if got.Allocation["a"] != want["a"] || got.Allocation["b"] != want["b"] {
			t.Errorf("%s: got %v, want %v", p.Name(), got.Allocation, want)
		}
	}
}

// The original computed both jobs' remaining lengths with the current
// winner's worker count. Here a holds 1 GPU and b holds 2: with their own
// counts b is the shorter job and wins the third GPU; with the typo a would.
func TestDefectAFSLUsesEachJobsOwnAllocation(t *testing.T) {
	snap := Snapshot(4,
		MakeJob("a").Workers(1, 4).Remaining(h1).SpeedupTable(1, 1.5, 1.8, 2.0),
		MakeJob("b").Workers(2, 4).Remaining(90*min1).SubmittedAt(min1))
	got, err := algorithm.AFSL{}.Allocate(snap)
	if err != nil {
		t.Fatal(err)
	}
	if got.Allocation["a"] != 1 || got.Allocation["b"] != 3 {
		t.Errorf("got %v, want a:1 b:3", got.Allocation)
	}
}

// The original divided by a zero throughput when a job holding no GPUs was
// compared as the shorter job, and handed GPUs one at a time below a job's
// minimum. Garbage curves (zero or NaN speedups) must not break it either.
func TestDefectAFSLZeroThroughputAndMinimum(t *testing.T) {
	snap := Snapshot(8,
		MakeJob("zero").Workers(2, 4).Remaining(h1).SpeedupTable(0, 0, 0, 0),
		MakeJob("nan").Workers(3, 4).Remaining(h1).SubmittedAt(min1).SpeedupTable(nan(), nan(), nan(), nan()),
		MakeJob("ok").Workers(2, 4).Remaining(2*h1).SubmittedAt(2*min1))
	got, err := algorithm.AFSL{}.Allocate(snap)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range snap.Jobs {
		if n := got.Allocation[j.ID]; n != 0 && n < j.Min {
			t.Errorf("%s got %d GPUs, below its minimum %d", j.ID, n, j.Min)
		}
	}
	if got.Allocation.Total() > 8 {
		t.Errorf("handed out %d GPUs of 8", got.Allocation.Total())
	}
}

// The original's FfDL optimizer gave every admitted job at least one GPU,
// ignoring its minimum.
func TestDefectFfDLHonoursMinimum(t *testing.T) {
	snap := Snapshot(8,
		MakeJob("a").Workers(1, 8),
		MakeJob("b").Workers(4, 4).SubmittedAt(min1).SpeedupTable(0.1, 0.2, 0.3, 0.4))
	got, err := algorithm.FfDLOptimizer{}.Allocate(snap)
	if err != nil {
		t.Fatal(err)
	}
	if got.Allocation["b"] != 4 || got.Allocation["a"] != 4 {
		t.Errorf("got %v, want a:4 b:4 (b admitted at its minimum)", got.Allocation)
	}
}

// The original's Tiresias had no queue for JOB_PRIORITY ≥ 2, so such a job
// never ran (and was "demoted" every tick).
func TestDefectTiresiasPriorityBeyondQueuesIsScheduled(t *testing.T) {
	for _, p := range []algorithm.Policy{
		algorithm.Tiresias{Config: algorithm.DefaultTiresias()},
		algorithm.ElasticTiresias{Config: algorithm.DefaultTiresias()},
	} {
		got, err := p.Allocate(Snapshot(4, MakeJob("low").Workers(2, 2).Queue(5)))
		if err != nil {
			t.Fatalf("%s: %v", p.Name(), err)
		}
		if got.Allocation["low"] != 2 {
			t.Errorf("%s: got %v, want low:2", p.Name(), got.Allocation)
		}
	}
}

// The original's Elastic-Tiresias dropped running jobs from growth whenever
// fewer GPUs than their minimum were free.
func TestDefectElasticTiresiasGrowsRunningJobs(t *testing.T) {
	got, err := algorithm.ElasticTiresias{Config: algorithm.DefaultTiresias()}.Allocate(
		Snapshot(6, MakeJob("a").Workers(4, 6).Running(4)))
	if err != nil {
		t.Fatal(err)
	}
	if got.Allocation["a"] != 6 {
		t.Errorf("got %v, want a:6", got.Allocation)
	}
}

// The original panicked when a result was invalid; here invalid results are
// errors the engine can act on.
func TestDefectInvalidResultsAreErrors(t *testing.T) {
	snap := Snapshot(4, MakeJob("a").Workers(2, 3), MakeJob("b").Workers(1, 1))
	cases := map[string]struct {
		alloc api.Allocation
		want  string
	}{
		"below the minimum":    {api.Allocation{"a": 1, "b": 0}, "outside its range"},
		"above the maximum":    {api.Allocation{"a": 4, "b": 0}, "outside its range"},
		"negative":             {api.Allocation{"a": -1, "b": 0}, "outside its range"},
		"missing job":          {api.Allocation{"a": 2}, "has no allocation"},
		"unknown job":          {api.Allocation{"a": 2, "b": 1, "zz": 1}, "names 3 jobs"},
		"more GPUs than exist": {api.Allocation{"a": 3, "b": 1, "zz": 0}, "names 3 jobs"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := algorithm.ValidateResult(&snap, algorithm.Result{Allocation: tc.alloc})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	over := Snapshot(3, MakeJob("a").Workers(2, 3), MakeJob("b").Workers(1, 1))
	if err := algorithm.ValidateResult(&over, algorithm.Result{Allocation: api.Allocation{"a": 3, "b": 1}}); err == nil ||
		!strings.Contains(err.Error(), "only 3 exist") {
		t.Errorf("over-allocation: got %v, want an error", err)
	}
}

// The original's info-dependent policies dereferenced missing job info. Here
// a job with no speedup curve is linear and one with no remaining-time
// estimate counts as the longest; every policy still decides.
func TestDefectMissingJobInfo(t *testing.T) {
	snap := Snapshot(6,
		MakeJob("a").Workers(1, 4),
		MakeJob("b").Workers(2, 4).SubmittedAt(min1),
		MakeJob("c").Workers(1, 2).SubmittedAt(2*min1))
	for _, name := range algorithm.Names() {
		p, err := algorithm.New(name, algorithm.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.Allocate(snap)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got.Allocation["a"] == 0 {
			t.Errorf("%s: the first job got nothing: %v", name, got.Allocation)
		}
	}
}
