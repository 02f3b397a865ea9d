package algorithm_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	. "github.com/vodascheduler/voda/internal/testutil"
	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/api"
)

func nan() float64 { return math.NaN() }

func allPolicies(t testing.TB) []algorithm.Policy {
	t.Helper()
	var out []algorithm.Policy
	for _, n := range algorithm.Names() {
		p, err := algorithm.New(n, algorithm.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// randomCurve returns one of several speedup shapes, garbage included.
func randomCurve(r *rand.Rand, w *JobWrapper) {
	switch r.IntN(6) {
	case 0: // linear (nil)
	case 1:
		w.Amdahl(r.Float64() * 0.3)
	case 2: // measured-looking table with dips
		tab := make([]float64, 1+r.IntN(16))
		v := 0.0
		for i := range tab {
			v += r.Float64()*1.5 - 0.3
			tab[i] = max(v, 0.05)
		}
		w.SpeedupTable(tab...)
	case 3: // flat
		w.SpeedupTable(1)
	case 4: // garbage: zero, negative, NaN and infinite values
		w.SpeedupTable(0, -1, math.NaN(), math.Inf(1), 3)
	case 5:
		w.Amdahl(0.05)
	}
}

// randomSnapshot builds a valid snapshot with awkward corners: zero GPUs,
// no jobs, equal submission times, unknown and garbage remaining times.
func randomSnapshot(r *rand.Rand) algorithm.Snapshot {
	gpus := r.IntN(65)
	if r.IntN(10) == 0 {
		gpus = 0
	}
	n := r.IntN(25)
	var jobs []*JobWrapper
	for i := range n {
		lo := 1 + r.IntN(8)
		hi := lo + r.IntN(12)
		w := MakeJob(fmt.Sprintf("j%02d", i)).Workers(lo, hi).
			SubmittedAt(time.Duration(r.IntN(5))*time.Minute).
			Queue(r.IntN(4)).
			Attained(r.Float64()*1e5, r.Float64()*8000).
			Executed(r.Float64() * 3e4)
		if r.IntN(2) == 0 {
			w.Requested(lo + r.IntN(hi-lo+1))
		}
		if r.IntN(2) == 0 {
			w.StartedAt(time.Duration(r.IntN(100)) * time.Minute).Running(lo + r.IntN(hi-lo+1))
		}
		switch r.IntN(5) {
		case 0: // unknown
		case 1:
			w.Job.Remaining = math.NaN()
		case 2:
			w.Job.Remaining = -5
		default:
			w.Remaining(time.Duration(r.IntN(40000)) * time.Second)
		}
		randomCurve(r, w)
		jobs = append(jobs, w)
	}
	return Snapshot(gpus, jobs...)
}

func TestPropertiesOfEveryPolicy(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	policies := allPolicies(t)
	for iter := range 2000 {
		snap := randomSnapshot(r)
		for _, p := range policies {
			got, err := p.Allocate(snap)
			if err != nil {
				t.Fatalf("iteration %d, %s: %v", iter, p.Name(), err)
			}
			if err := algorithm.ValidateResult(&snap, got); err != nil {
				t.Fatalf("iteration %d, %s: %v", iter, p.Name(), err)
			}
			if len(got.Reasons) != len(snap.Jobs) {
				t.Fatalf("iteration %d, %s: %d reasons for %d jobs", iter, p.Name(), len(got.Reasons), len(snap.Jobs))
			}
			for _, j := range snap.Jobs {
				reason := got.Reasons[j.ID].String()
				if n := got.Allocation[j.ID]; (n > 0) != strings.HasPrefix(reason, "running") {
					t.Fatalf("iteration %d, %s: job %s has %d GPUs but reason %q", iter, p.Name(), j.ID, n, reason)
				}
			}
			rigidSizes(t, p, snap, got)

			// Deterministic: the same snapshot with its jobs reversed and
			// shuffled gives the same result.
			shuffled := snap
			shuffled.Jobs = append([]algorithm.Job(nil), snap.Jobs...)
			r.Shuffle(len(shuffled.Jobs), func(a, b int) {
				shuffled.Jobs[a], shuffled.Jobs[b] = shuffled.Jobs[b], shuffled.Jobs[a]
			})
			again, err := p.Allocate(shuffled)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(got.Allocation, again.Allocation); diff != "" {
				t.Fatalf("iteration %d, %s: shuffled jobs changed the result (-first,+shuffled):\n%s", iter, p.Name(), diff)
			}
			if diff := cmp.Diff(got.Reasons, again.Reasons); diff != "" {
				t.Fatalf("iteration %d, %s: shuffled jobs changed the reasons (-first,+shuffled):\n%s", iter, p.Name(), diff)
			}
		}
	}
}

// rigidSizes checks that the rigid policies give exactly the requested size
// or nothing.
func rigidSizes(t *testing.T, p algorithm.Policy, snap algorithm.Snapshot, got algorithm.Result) {
	t.Helper()
	switch p.Name() {
	case algorithm.NameFIFO, algorithm.NameSRJF, algorithm.NameTiresias:
	default:
		return
	}
	for _, j := range snap.Jobs {
		if n := got.Allocation[j.ID]; n != 0 && n != j.RequestedWorkers() {
			t.Fatalf("%s gave %s %d GPUs, requested %d", p.Name(), j.ID, n, j.RequestedWorkers())
		}
	}
}

// A work-conserving check for every policy: while a job waits for its
// minimum (the rigid ones: its requested size), the free GPUs must be
// fewer than that, on the random snapshots and on rigid and large-minimum
// jobs (HeSRPT's own test also looks at nodes and preemptions).
func TestElasticPoliciesLeaveNoRoomForAWaitingJob(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for iter := range 1000 {
		snap := randomSnapshot(r)
		if iter%2 == 1 {
			snap = rigidSnapshot(r)
		}
		if snap.NodeGPUs != nil {
			continue // the check counts GPUs, not nodes
		}
		for _, p := range allPolicies(t) {
			got, err := p.Allocate(snap)
			if err != nil {
				t.Fatal(err)
			}
			free := snap.GPUs - got.Allocation.Total()
			for _, j := range snap.Jobs {
				need := j.Min
				if p.Name() == algorithm.NameFIFO || p.Name() == algorithm.NameSRJF || p.Name() == algorithm.NameTiresias {
					need = j.RequestedWorkers()
				}
				// A curve with no speed at the minimum (garbage the
				// snapshot may hold) gives the policies that weigh speed
				// nothing to grant.
				if got.Allocation[j.ID] == 0 && need <= free && (need != j.Min || j.S(j.Min) > 0) {
					t.Fatalf("%s: %s waits for %d GPUs while %d are free: S(min) %v, running %d, %s", p.Name(), j.ID, need, free, j.S(j.Min), j.Workers, got.Reasons[j.ID])
				}
			}
		}
	}
}

// FfDL's result must be optimal: no other feasible choice over the admitted
// jobs has a larger total speedup. Checked by brute force on small cases.
func TestFfDLIsOptimal(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for iter := range 400 {
		gpus := 1 + r.IntN(10)
		var ws []*JobWrapper
		for i := range 1 + r.IntN(4) {
			lo := 1 + r.IntN(3)
			w := MakeJob(fmt.Sprintf("j%d", i)).Workers(lo, lo+r.IntN(4)).SubmittedAt(time.Duration(i) * time.Minute)
			randomCurve(r, w)
			ws = append(ws, w)
		}
		snap := Snapshot(gpus, ws...)
		got, err := algorithm.FfDLOptimizer{}.Allocate(snap)
		if err != nil {
			t.Fatal(err)
		}
		var admitted []algorithm.Job
		for _, j := range snap.Jobs {
			if got.Allocation[j.ID] > 0 {
				admitted = append(admitted, j)
			}
		}
		value := func(a api.Allocation) float64 {
			v := 0.0
			for _, j := range admitted {
				v += j.S(a[j.ID])
			}
			return v
		}
		best := bruteForce(admitted, gpus)
		if v := value(got.Allocation); v < best-1e-9 {
			t.Fatalf("iteration %d: total speedup %v, brute force finds %v (allocation %v)", iter, v, best, got.Allocation)
		}
	}
}

func bruteForce(jobs []algorithm.Job, gpus int) float64 {
	if len(jobs) == 0 {
		return 0
	}
	j, best := jobs[0], math.Inf(-1)
	for n := j.Min; n <= j.Max && n <= gpus; n++ {
		best = max(best, j.S(n)+bruteForce(jobs[1:], gpus-n))
	}
	return best
}

func TestInvalidSnapshotsAreErrors(t *testing.T) {
	cases := map[string]algorithm.Snapshot{
		"minimum below one":       Snapshot(4, MakeJob("a").Workers(0, 2)),
		"maximum below minimum":   Snapshot(4, MakeJob("a").Workers(3, 2)),
		"requested out of range":  Snapshot(4, MakeJob("a").Workers(1, 2).Requested(5)),
		"negative current size":   Snapshot(4, MakeJob("a").Running(-1)),
		"negative queue":          Snapshot(4, MakeJob("a").Queue(-1)),
		"duplicate job":           Snapshot(4, MakeJob("a"), MakeJob("a")),
		"duplicate out of order":  Snapshot(4, MakeJob("b"), MakeJob("c"), MakeJob("a"), MakeJob("c")),
		"duplicate at the start":  Snapshot(4, MakeJob("c"), MakeJob("a"), MakeJob("c")),
		"job without an ID":       Snapshot(4, MakeJob("")),
		"negative GPUs":           Snapshot(-1, MakeJob("a")),
		"nodes do not add up":     {GPUs: 4, NodeGPUs: []int{2, 1}},
		"node with negative GPUs": {GPUs: 0, NodeGPUs: []int{2, -2}},
	}
	for name, snap := range cases {
		t.Run(name, func(t *testing.T) {
			for _, p := range allPolicies(t) {
				_, err := p.Allocate(snap)
				switch {
				case err == nil:
					t.Errorf("%s accepted an invalid snapshot", p.Name())
				case strings.HasPrefix(name, "duplicate") && !strings.Contains(err.Error(), "job c appears twice") && !strings.Contains(err.Error(), "job a appears twice"):
					t.Errorf("%s: %v, want it to name the duplicate", p.Name(), err)
				}
			}
		})
	}
}

func TestEmptySnapshots(t *testing.T) {
	for _, snap := range []algorithm.Snapshot{{}, {GPUs: 8}, {GPUs: 8, NodeGPUs: []int{4, 4}}} {
		for _, p := range allPolicies(t) {
			got, err := p.Allocate(snap)
			if err != nil || len(got.Allocation) != 0 {
				t.Errorf("%s on %+v: got %v, %v; want an empty allocation", p.Name(), snap, got.Allocation, err)
			}
		}
	}
}

// Decide gives what Allocate gives, in snapshot order, also when the
// reasons go to Report instead of the decision, and reuses its buffers
// from one snapshot to the next.
func TestDecideAgreesWithAllocate(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, p := range allPolicies(t) {
		var plain, reported algorithm.Decision
		for iter := range 300 {
			snap := randomSnapshot(r)
			want, err := p.Allocate(snap)
			if err != nil {
				t.Fatalf("%s, iteration %d: %v", p.Name(), iter, err)
			}
			if err := algorithm.Decide(p, snap, &plain); err != nil {
				t.Fatalf("%s, iteration %d: Decide: %v", p.Name(), iter, err)
			}
			got := make([]algorithm.Reason, len(snap.Jobs))
			reported.Report = func(i int, r algorithm.Reason) { got[i] = r }
			if err := algorithm.Decide(p, snap, &reported); err != nil {
				t.Fatalf("%s, iteration %d: Decide with Report: %v", p.Name(), iter, err)
			}
			if len(reported.Reasons) != 0 {
				t.Fatalf("%s, iteration %d: %d reasons kept beside Report", p.Name(), iter, len(reported.Reasons))
			}
			for i, j := range snap.Jobs {
				if n := want.Allocation[j.ID]; plain.Workers[i] != n || reported.Workers[i] != n {
					t.Fatalf("%s, iteration %d: %s gets %d and %d, Allocate %d", p.Name(), iter, j.ID, plain.Workers[i], reported.Workers[i], n)
				}
				if w := want.Reasons[j.ID]; plain.Reasons[i] != w || got[i] != w {
					t.Fatalf("%s, iteration %d: %s's reason %+v and %+v, Allocate %+v", p.Name(), iter, j.ID, plain.Reasons[i], got[i], w)
				}
			}
		}
	}
}
