package algorithm_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	. "github.com/vodascheduler/voda/internal/testutil"
	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/api"
)

type policyCase struct {
	snap        algorithm.Snapshot
	want        api.Allocation
	wantReasons map[api.JobID]string // checked only for the jobs listed
}

func runCases(t *testing.T, p algorithm.Policy, cases map[string]policyCase) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := p.Allocate(tc.snap)
			if err != nil {
				t.Fatalf("Allocate: %v", err)
			}
			if diff := cmp.Diff(tc.want, got.Allocation); diff != "" {
				t.Errorf("allocation (-want,+got):\n%s", diff)
			}
			for id, want := range tc.wantReasons {
				if got := got.Reasons[id].String(); got != want {
					t.Errorf("reason for %s: got %q, want %q", id, got, want)
				}
			}
		})
	}
}

const (
	min1 = time.Minute
	h1   = time.Hour
)

func TestFIFO(t *testing.T) {
	runCases(t, algorithm.FIFO{}, map[string]policyCase{
		"jobs start in submission order and a later small job backfills": {
			snap: Snapshot(4,
				MakeJob("a").Workers(1, 4).Requested(3),
				MakeJob("b").Workers(1, 4).Requested(2).SubmittedAt(min1),
				MakeJob("c").Workers(1, 4).Requested(1).SubmittedAt(2*min1)),
			want: api.Allocation{"a": 3, "b": 0, "c": 1},
			wantReasons: map[api.JobID]string{
				"a": "running: 3 GPUs",
				"b": "waiting: 2 GPUs needed, 1 free",
			},
		},
		"the order of jobs in the snapshot does not matter": {
			snap: Snapshot(4,
				MakeJob("c").Workers(1, 4).Requested(1).SubmittedAt(2*min1),
				MakeJob("b").Workers(1, 4).Requested(2).SubmittedAt(min1),
				MakeJob("a").Workers(1, 4).Requested(3)),
			want: api.Allocation{"a": 3, "b": 0, "c": 1},
		},
		"an unset requested size means the minimum": {
			snap: Snapshot(8, MakeJob("a").Workers(2, 6)),
			want: api.Allocation{"a": 2},
		},
		"jobs submitted together are ordered by ID": {
			snap: Snapshot(2, MakeJob("y").Workers(2, 2), MakeJob("x").Workers(2, 2)),
			want: api.Allocation{"x": 2, "y": 0},
		},
		"no GPUs, everyone waits": {
			snap: Snapshot(0, MakeJob("a")),
			want: api.Allocation{"a": 0},
		},
	})
}

func TestElasticFIFO(t *testing.T) {
	runCases(t, algorithm.ElasticFIFO{}, map[string]policyCase{
		"minimums first, then spare GPUs round-robin in submission order": {
			snap: Snapshot(10,
				MakeJob("a").Workers(1, 4),
				MakeJob("b").Workers(2, 3).SubmittedAt(min1),
				MakeJob("c").Workers(1, 8).SubmittedAt(2*min1)),
			// min: a1 b2 c1 (6 left); rounds: a2 b3 c2, a3 c3, a4.
			want: api.Allocation{"a": 4, "b": 3, "c": 3},
		},
		"a job that cannot get its minimum gets nothing, not single GPUs": {
			snap: Snapshot(5,
				MakeJob("a").Workers(4, 4),
				MakeJob("b").Workers(3, 6).SubmittedAt(min1)),
			want:        api.Allocation{"a": 4, "b": 0},
			wantReasons: map[api.JobID]string{"b": "waiting: 3 GPUs needed, 1 free"},
		},
		"everyone at maximum leaves GPUs idle": {
			snap: Snapshot(16, MakeJob("a").Workers(1, 2), MakeJob("b").Workers(3, 3).SubmittedAt(min1)),
			want: api.Allocation{"a": 2, "b": 3},
		},
	})
}

func TestSRJF(t *testing.T) {
	runCases(t, algorithm.SRJF{}, map[string]policyCase{
		"shortest remaining work first, unknown remaining time last": {
			snap: Snapshot(4,
				MakeJob("a").Workers(1, 4).Requested(2).Remaining(10*h1),
				MakeJob("b").Workers(1, 4).Requested(2).Remaining(h1).SubmittedAt(min1),
				MakeJob("c").Workers(1, 4).Requested(2).SubmittedAt(-min1)),
			want: api.Allocation{"a": 2, "b": 2, "c": 0},
		},
		"jobs with unknown remaining time go in submission order": {
			snap: Snapshot(2,
				MakeJob("late").Workers(2, 2).SubmittedAt(min1),
				MakeJob("early").Workers(2, 2)),
			want: api.Allocation{"early": 2, "late": 0},
		},
	})
}

func TestElasticSRJF(t *testing.T) {
	runCases(t, algorithm.ElasticSRJF{}, map[string]policyCase{
		"a job whose minimum equals its maximum never grows past it": {
			snap: Snapshot(8,
				MakeJob("a").Workers(2, 2).Remaining(h1),
				MakeJob("b").Workers(1, 3).Remaining(2*h1)),
			want: api.Allocation{"a": 2, "b": 3},
		},
		"spare GPUs go round-robin in remaining-time order": {
			snap: Snapshot(5,
				MakeJob("long").Workers(1, 4).Remaining(9*h1),
				MakeJob("short").Workers(1, 4).Remaining(h1).SubmittedAt(min1)),
			// min: short1 long1; rounds: short2 long2, short3.
			want: api.Allocation{"short": 3, "long": 2},
		},
	})
}

func TestTiresias(t *testing.T) {
	runCases(t, algorithm.Tiresias{Config: algorithm.DefaultTiresias()}, map[string]policyCase{
		"inside a queue the first-started job goes first": {
			snap: Snapshot(4,
				MakeJob("a").Workers(1, 4).Requested(2).StartedAt(10*min1).Running(2),
				MakeJob("b").Workers(1, 4).Requested(2).SubmittedAt(min1).StartedAt(5*min1).Running(2),
				MakeJob("c").Workers(1, 4).Requested(2)),
			want: api.Allocation{"a": 2, "b": 2, "c": 0},
		},
		"started jobs go before never-started ones in the same queue": {
			snap: Snapshot(2,
				MakeJob("new").Workers(2, 2),
				MakeJob("old").Workers(2, 2).SubmittedAt(min1).StartedAt(2*min1)),
			want: api.Allocation{"new": 0, "old": 2},
		},
		"a job past the threshold is demoted below a fresh one": {
			snap: Snapshot(4,
				MakeJob("hog").Workers(4, 4).StartedAt(0).Running(4).Attained(4000, 4000),
				MakeJob("fresh").Workers(4, 4).SubmittedAt(h1)),
			want: api.Allocation{"hog": 0, "fresh": 4},
		},
		"a lower queue still gets what the higher one leaves": {
			snap: Snapshot(6,
				MakeJob("high").Workers(4, 4),
				MakeJob("low").Workers(2, 2).Queue(1)),
			want: api.Allocation{"high": 4, "low": 2},
		},
	})
}

func TestTiresiasPolluxArtifactPreset(t *testing.T) {
	// 20 000 s executed × 4 requested = 80 000 GPU-s ≥ 57 600: demoted,
	// although its GPU-seconds since the last start are small.
	p := algorithm.Tiresias{Config: algorithm.PolluxArtifactTiresias()}
	runCases(t, p, map[string]policyCase{
		"service is executed time times requested GPUs": {
			snap: Snapshot(4,
				MakeJob("long").Workers(1, 8).Requested(4).StartedAt(0).Executed(20000).Attained(80000, 10),
				MakeJob("short").Workers(1, 8).Requested(4).SubmittedAt(h1).StartedAt(h1).Executed(100)),
			want: api.Allocation{"long": 0, "short": 4},
		},
	})
}

func TestTiresiasQueueRules(t *testing.T) {
	c := algorithm.DefaultTiresias()
	three := algorithm.TiresiasConfig{Thresholds: []float64{3250, 7200}, Service: algorithm.ServiceTotal}
	cases := map[string]struct {
		cfg  algorithm.TiresiasConfig
		job  algorithm.Job
		want int
	}{
		"below the threshold stays":                           {c, MakeJob("a").Attained(0, 3599).Obj(), 0},
		"at the threshold is demoted":                         {c, MakeJob("a").Attained(0, 3600).Obj(), 1},
		"the last queue has no threshold":                     {c, MakeJob("a").Queue(1).Attained(0, 1e9).Obj(), 1},
		"a priority beyond the queues is clamped to the last": {c, MakeJob("a").Queue(7).Obj(), 1},
		"three queues demote twice":                           {three, MakeJob("a").Attained(7200, 0).Obj(), 2},
		"a recorded queue is never raised":                    {three, MakeJob("a").Queue(1).Attained(10, 0).Obj(), 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.cfg.QueueOf(&tc.job); got != tc.want {
				t.Errorf("QueueOf: got %d, want %d", got, tc.want)
			}
		})
	}
}

func TestTiresiasPromote(t *testing.T) {
	c := algorithm.DefaultTiresias()
	cases := map[string]struct {
		queue            int
		waiting, lastRun float64
		knob             float64
		want             bool
	}{
		"waited 8× its last run":       {1, 800, 100, 8, true},
		"waited a little less":         {1, 799, 100, 8, false},
		"already in the top queue":     {0, 1e6, 100, 8, false},
		"never ran keeps its priority": {1, 1e6, 0, 8, false},
		"promotion off":                {1, 1e6, 100, 0, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c.PromoteKnob = tc.knob
			if got := c.Promote(tc.queue, tc.waiting, tc.lastRun); got != tc.want {
				t.Errorf("Promote: got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestElasticTiresias(t *testing.T) {
	cfg := algorithm.DefaultTiresias()
	runCases(t, algorithm.ElasticTiresias{Config: cfg}, map[string]policyCase{
		"spare GPUs go to the largest marginal speedup": {
			snap: Snapshot(8,
				MakeJob("a").Workers(1, 8).Requested(2).StartedAt(0).SpeedupTable(1, 1.9, 2.7, 3.4, 4.0, 4.5, 4.9, 5.2),
				MakeJob("b").Workers(1, 8).Requested(2).StartedAt(min1)),
			// base a2 b2; b's gain 1 beats a's 0.8 four times.
			want: api.Allocation{"a": 2, "b": 6},
		},
		"growth stops when one more GPU gains nothing": {
			snap: Snapshot(8, MakeJob("a").Workers(1, 8).Requested(2).SpeedupTable(1, 1.8, 1.8, 1.8)),
			want: api.Allocation{"a": 2},
		},
		"a running job keeps growing while fewer GPUs than its minimum are free": {
			snap: Snapshot(6, MakeJob("a").Workers(4, 6).StartedAt(0).Running(4)),
			want: api.Allocation{"a": 6},
		},
		"a waiting job that fits only at its minimum starts at its minimum": {
			snap: Snapshot(6,
				MakeJob("a").Workers(4, 4).StartedAt(0),
				MakeJob("b").Workers(2, 8).Requested(8).SubmittedAt(min1)),
			want: api.Allocation{"a": 4, "b": 2},
		},
	})
	cfg.CompactionThreshold = 1
	runCases(t, algorithm.ElasticTiresias{Config: cfg}, map[string]policyCase{
		"many waiting jobs shrink low-priority jobs to their minimum": {
			snap: Snapshot(8,
				MakeJob("x").Workers(4, 4),
				MakeJob("y").Workers(2, 6).Requested(6).SubmittedAt(min1),
				MakeJob("z").Workers(2, 6).Requested(6).SubmittedAt(2*min1),
				MakeJob("a").Workers(1, 4).Requested(4).Queue(1).StartedAt(-h1).Running(4)),
			// base x4 a4, y and z wait (2 > 1): a shrinks to 1; y starts at 2
			// and takes the last GPU; z cannot start with 1 free.
			want: api.Allocation{"x": 4, "y": 3, "z": 0, "a": 1},
			wantReasons: map[api.JobID]string{
				"a": "running: 1 GPUs, shrunk to its minimum because 1 jobs are waiting",
			},
		},
	})
}

func TestFfDLOptimizer(t *testing.T) {
	runCases(t, algorithm.FfDLOptimizer{}, map[string]policyCase{
		"spare GPUs maximise the total speedup": {
			snap: Snapshot(6,
				MakeJob("a").Workers(1, 4).SpeedupTable(1, 1.9, 2.5, 2.8),
				MakeJob("b").Workers(1, 4).SubmittedAt(min1)),
			// b's gains are 1, 1, 1; a's best is 0.9: a2 b4 = 5.9.
			want: api.Allocation{"a": 2, "b": 4},
		},
		"a curve with a dip is solved exactly": {
			snap: Snapshot(5,
				MakeJob("a").Workers(1, 4).SpeedupTable(1, 0.8, 2.5, 3.0),
				MakeJob("b").Workers(1, 2).SubmittedAt(min1)),
			// a3 b2 = 2.5 + 2 beats a4 b1 = 3 + 1.
			want: api.Allocation{"a": 3, "b": 2},
		},
		"minimums are honoured and admission is first come first served": {
			snap: Snapshot(5,
				MakeJob("a").Workers(3, 5),
				MakeJob("b").Workers(3, 3).SubmittedAt(min1)),
			want:        api.Allocation{"a": 5, "b": 0},
			wantReasons: map[api.JobID]string{"b": "waiting: 3 GPUs needed, 2 free"},
		},
		"GPUs that add no speedup stay free": {
			snap: Snapshot(8, MakeJob("a").Workers(1, 4).SpeedupTable(1, 2, 2, 2)),
			want: api.Allocation{"a": 2},
		},
		"a job past its peak is not grown onto the slope": {
			snap: Snapshot(8,
				MakeJob("a").Workers(2, 8).SpeedupTable(1, 1.5, 3, 2.9, 2.8, 2.7, 2.6, 2.5),
				MakeJob("b").Workers(1, 2).SubmittedAt(min1)),
			want: api.Allocation{"a": 3, "b": 2},
		},
	})
}

func TestAFSL(t *testing.T) {
	runCases(t, algorithm.AFSL{}, map[string]policyCase{
		// The paper's rule looks one GPU ahead: the 9th lowers the
		// throughput, so the job stops at 8 and 8 GPUs stay idle although
		// 16 would be faster (a documented choice, docs/policies.md;
		// HeSRPT crosses such dips through the concave hull).
		"a dip stops the job even if a larger size is faster": {
			snap: Snapshot(16,
				MakeJob("dip").Workers(1, 16).Remaining(10*h1).
					SpeedupTable(0.95, 1.9, 2.85, 3.8, 4.75, 5.7, 6.65, 7.6, 6.3, 6.8, 7.3, 7.8, 8.3, 8.8, 9.2, 9.6)),
			want: api.Allocation{"dip": 8},
		},
		"the short job gets GPUs until a waiting job gains relatively more": {
			snap: Snapshot(4,
				MakeJob("a").Workers(1, 4).Remaining(h1),
				MakeJob("b").Workers(1, 4).Remaining(10*h1).SubmittedAt(min1)),
			// a1; a2 (b's gain 1 does not beat a's 1); b1 (1 > 0.5);
			// a3 (b's 0.5 does not beat a's 0.5).
			want: api.Allocation{"a": 3, "b": 1},
		},
		"a long job that scales better takes GPUs from a short one that does not": {
			snap: Snapshot(4,
				MakeJob("a").Workers(1, 4).Remaining(h1).SpeedupTable(1, 1.1, 1.15, 1.2),
				MakeJob("b").Workers(1, 4).Remaining(10*h1).SubmittedAt(min1)),
			want: api.Allocation{"a": 1, "b": 3},
		},
		"a waiting job receives its minimum as one block": {
			snap: Snapshot(5,
				MakeJob("a").Workers(2, 4).Remaining(h1),
				MakeJob("b").Workers(3, 3).Remaining(2*h1).SubmittedAt(min1)),
			want: api.Allocation{"a": 2, "b": 3},
		},
		"a job whose minimum no longer fits waits": {
			snap: Snapshot(3,
				MakeJob("a").Workers(2, 2).Remaining(h1),
				MakeJob("b").Workers(2, 4).Remaining(2*h1).SubmittedAt(min1)),
			want:        api.Allocation{"a": 2, "b": 0},
			wantReasons: map[api.JobID]string{"b": "waiting: 2 GPUs needed, 1 free"},
		},
		"no GPU is handed out for no throughput gain": {
			snap: Snapshot(8, MakeJob("a").Workers(1, 8).Remaining(h1).SpeedupTable(1, 1.5, 1.5)),
			want: api.Allocation{"a": 2},
		},
	})
}
