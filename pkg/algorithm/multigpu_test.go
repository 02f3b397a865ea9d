package algorithm_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	. "github.com/vodascheduler/voda/internal/testutil"
	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/api"
)

// randomMultiGPUSnapshot builds a small snapshot of uneven nodes and jobs
// whose workers hold 1, 2, 3, 4 or 8 GPUs, mixed.
func randomMultiGPUSnapshot(r *rand.Rand) algorithm.Snapshot {
	nodes := make([]int, 1+r.IntN(5))
	for i := range nodes {
		nodes[i] = []int{1, 2, 3, 4, 4, 8, 8}[r.IntN(7)]
	}
	var jobs []*JobWrapper
	for i := range r.IntN(8) {
		lo := 1 + r.IntN(3)
		hi := lo + r.IntN(4)
		w := MakeJob(fmt.Sprintf("j%02d", i)).Workers(lo, hi).
			PerWorker([]int{0, 1, 1, 2, 2, 3, 4, 8}[r.IntN(8)]).
			SubmittedAt(time.Duration(r.IntN(5))*time.Minute).
			Queue(r.IntN(3)).
			Attained(r.Float64()*1e5, r.Float64()*8000).
			Executed(r.Float64() * 3e4)
		if r.IntN(2) == 0 {
			w.Requested(lo + r.IntN(hi-lo+1))
		}
		if r.IntN(2) == 0 {
			w.StartedAt(time.Duration(r.IntN(100)) * time.Minute).Running(lo + r.IntN(hi-lo+1))
		}
		if r.IntN(3) > 0 {
			w.Remaining(time.Duration(r.IntN(40000)) * time.Second)
		}
		randomCurve(r, w)
		jobs = append(jobs, w)
	}
	return NodeSnapshot(nodes, jobs...)
}

// packs reports whether every allocated worker fits whole on some node, by
// an exhaustive search (the instances are small): an independent check of
// the policies' own best-fit accounting.
func packs(snap *algorithm.Snapshot, a api.Allocation) bool {
	var sizes []int
	for _, j := range snap.Jobs {
		for range a[j.ID] {
			sizes = append(sizes, max(j.GPUsPerWorker, 1))
		}
	}
	slices.Sort(sizes)
	slices.Reverse(sizes)
	free := slices.Clone(snap.NodeGPUs)
	var place func(i int) bool
	place = func(i int) bool {
		if i == len(sizes) {
			return true
		}
		tried := map[int]bool{}
		for n := range free {
			if free[n] < sizes[i] || tried[free[n]] {
				continue
			}
			tried[free[n]] = true
			free[n] -= sizes[i]
			ok := place(i + 1)
			free[n] += sizes[i]
			if ok {
				return true
			}
		}
		return false
	}
	return place(0)
}

func TestPoliciesPlaceWholeWorkersOfSeveralGPUs(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	policies := allPolicies(t)
	for iter := range 3000 {
		snap := randomMultiGPUSnapshot(r)
		for _, p := range policies {
			got, err := p.Allocate(snap)
			if err != nil {
				t.Fatalf("iteration %d, %s: %v", iter, p.Name(), err)
			}
			if err := algorithm.ValidateResult(&snap, got); err != nil {
				t.Fatalf("iteration %d, %s: %v", iter, p.Name(), err)
			}
			if !packs(&snap, got.Allocation) {
				t.Fatalf("iteration %d, %s: allocation %v does not fit nodes %v whole", iter, p.Name(), got.Allocation, snap.NodeGPUs)
			}
			for _, j := range snap.Jobs {
				reason := got.Reasons[j.ID].String()
				if n := got.Allocation[j.ID]; (n > 0) != strings.HasPrefix(reason, "running") {
					t.Fatalf("iteration %d, %s: job %s has %d workers but reason %q", iter, p.Name(), j.ID, n, reason)
				}
			}
			rigidSizes(t, p, snap, got)
		}
	}
}

// Scaling every worker and every node by the same k changes nothing: the
// policies count workers, and capacity in GPUs scales with them.
func TestWorkersOfKGPUsOnNodesScaledByKDecideAsOneGPUWorkers(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	for iter := range 1000 {
		one := randomSnapshot(r)
		one.NodeGPUs = nil
		k := 2 + r.IntN(3)
		// Nodes of 4 GPUs (one worker each) plus a remainder node.
		for g := one.GPUs; g > 0; g -= min(g, 4) {
			one.NodeGPUs = append(one.NodeGPUs, min(g, 4))
		}
		scaled := one
		scaled.GPUs *= k
		scaled.NodeGPUs = nil
		for _, g := range one.NodeGPUs {
			scaled.NodeGPUs = append(scaled.NodeGPUs, g*k)
		}
		scaled.Jobs = slices.Clone(one.Jobs)
		for i := range scaled.Jobs {
			scaled.Jobs[i].GPUsPerWorker = k
			scaled.Jobs[i].Attained *= float64(k)
			scaled.Jobs[i].AttainedSinceStart *= float64(k)
		}
		for _, p := range allPolicies(t) {
			want, err := p.Allocate(one)
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.Allocate(scaled)
			if err != nil {
				t.Fatal(err)
			}
			switch p.Name() {
			case algorithm.NameFfDLOptimizer:
				// The optimum is the same; ties may fall elsewhere.
				if w, g := totalSpeedup(one.Jobs, want.Allocation), totalSpeedup(scaled.Jobs, got.Allocation); math.Abs(w-g) > 1e-9*max(1, w) {
					t.Fatalf("iteration %d, k=%d: total speedup %v, want %v", iter, k, g, w)
				}
			case algorithm.NameAFSL, algorithm.NameTiresias, algorithm.NameElasticTiresias:
				// AFS-L weighs a waiting job's start against per-GPU
				// gains; Tiresias thresholds are in GPU-seconds, scaled
				// above; checked only for validity.
				if err := algorithm.ValidateResult(&scaled, got); err != nil {
					t.Fatal(err)
				}
			default:
				if diff := cmp.Diff(want.Allocation, got.Allocation); diff != "" {
					t.Fatalf("iteration %d, %s, k=%d: scaled snapshot decided differently (-one GPU,+k GPUs):\n%s", iter, p.Name(), k, diff)
				}
			}
		}
	}
}

func totalSpeedup(jobs []algorithm.Job, a api.Allocation) float64 {
	v := 0.0
	for i := range jobs {
		v += jobs[i].S(a[jobs[i].ID])
	}
	return v
}

func TestWorkersOfSeveralGPUs(t *testing.T) {
	cases := map[string]struct {
		snap       algorithm.Snapshot
		want       api.Allocation
		wantReason map[api.JobID]string
	}{
		"a node with 3 free GPUs cannot host a 4-GPU worker": {
			snap: NodeSnapshot([]int{3, 3}, MakeJob("big").Workers(1, 1).PerWorker(4)),
			want: api.Allocation{"big": 0},
			wantReason: map[api.JobID]string{
				"big": "waiting: a worker needs 4 GPUs on one node and no node has that many",
			},
		},
		"workers fill nodes whole and the remainder stays free": {
			snap: NodeSnapshot([]int{4, 3, 1}, MakeJob("a").Workers(3, 3).PerWorker(2), MakeJob("b").Workers(1, 1).PerWorker(2).SubmittedAt(time.Minute)),
			want: api.Allocation{"a": 3, "b": 0},
			wantReason: map[api.JobID]string{
				"a": "running: 6 GPUs (3 workers of 2)",
				"b": "waiting: 2 GPUs needed in workers of 2 on one node; 2 free, but not in such blocks",
			},
		},
		"a later one-GPU job backfills what a large worker cannot use": {
			snap: NodeSnapshot([]int{4, 4}, MakeJob("a").Workers(1, 1).PerWorker(4), MakeJob("b").Workers(2, 2).PerWorker(4).SubmittedAt(time.Minute),
				MakeJob("c").Workers(3, 3).SubmittedAt(2*time.Minute)),
			want: api.Allocation{"a": 1, "b": 0, "c": 3},
		},
		"GPUs are workers times GPUs per worker": {
			snap: Snapshot(8, MakeJob("a").Workers(1, 1).PerWorker(8), MakeJob("b").Workers(1, 1).SubmittedAt(time.Minute)),
			want: api.Allocation{"a": 1, "b": 0},
			wantReason: map[api.JobID]string{
				"a": "running: 8 GPUs (1 worker of 8)",
				"b": "waiting: 1 GPUs needed, 0 free",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for _, p := range []algorithm.Policy{algorithm.FIFO{}, algorithm.ElasticFIFO{}, algorithm.Tiresias{Config: algorithm.DefaultTiresias()}} {
				got, err := p.Allocate(tc.snap)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.want, got.Allocation); diff != "" {
					t.Errorf("%s: allocation (-want,+got):\n%s", p.Name(), diff)
				}
				for id, want := range tc.wantReason {
					if got := got.Reasons[id].String(); got != want {
						t.Errorf("%s: job %s: reason %q, want %q", p.Name(), id, got, want)
					}
				}
			}
		})
	}
}

// FfDL's optimum holds with workers of several GPUs: brute force over
// worker counts whose GPUs fit the total.
func TestFfDLIsOptimalWithWorkersOfSeveralGPUs(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	for iter := range 400 {
		gpus := 1 + r.IntN(16)
		var ws []*JobWrapper
		for i := range 1 + r.IntN(4) {
			lo := 1 + r.IntN(2)
			w := MakeJob(fmt.Sprintf("j%d", i)).Workers(lo, lo+r.IntN(4)).PerWorker(1 + r.IntN(4)).SubmittedAt(time.Duration(i) * time.Minute)
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
		var best func(jobs []algorithm.Job, gpus int) float64
		best = func(jobs []algorithm.Job, gpus int) float64 {
			if len(jobs) == 0 {
				return 0
			}
			j, b := jobs[0], math.Inf(-1)
			k := max(j.GPUsPerWorker, 1)
			for n := j.Min; n <= j.Max && n*k <= gpus; n++ {
				b = max(b, j.S(n)+best(jobs[1:], gpus-n*k))
			}
			return b
		}
		if v, b := totalSpeedup(admitted, got.Allocation), best(admitted, gpus); v < b-1e-9 {
			t.Fatalf("iteration %d: total speedup %v, brute force finds %v (allocation %v)", iter, v, b, got.Allocation)
		}
	}
}
