package algorithm_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	. "github.com/vodascheduler/voda/internal/testutil"
	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/estimator"
)

// dipCurve models a job that slows down when it first spans two 8-GPU nodes
// and recovers later: the non-concave shape the measured profiles show.
func dipCurve(n int) float64 {
	switch {
	case n <= 8:
		return float64(n) * 0.95
	case n <= 12:
		return 6 + float64(n-8)*0.3
	default:
		return 7.2 + float64(n-12)*0.6
	}
}

// benchSnapshot builds a busy cluster: Philly-like sizes (mostly small
// jobs), max twice the request, three in four curves concave (Amdahl), one in
// four with a node-crossing dip, half the jobs running.
func benchSnapshot(jobs, gpus int) algorithm.Snapshot {
	r := rand.New(rand.NewPCG(uint64(jobs), uint64(gpus)))
	sizes := []int{1, 1, 1, 1, 2, 2, 4, 4, 8, 16, 32}
	var ws []*JobWrapper
	for i := range jobs {
		req := sizes[r.IntN(len(sizes))]
		w := MakeJob(fmt.Sprintf("job-%05d", i)).Workers(1, min(2*req, 64)).Requested(req).
			SubmittedAt(time.Duration(i)*time.Second).
			Queue(r.IntN(2)).
			Attained(r.Float64()*1e5, r.Float64()*7200).
			Executed(r.Float64() * 1e4).
			Remaining(time.Duration(r.IntN(100000)) * time.Second)
		if r.IntN(2) == 0 {
			w.StartedAt(time.Duration(i)*time.Second + time.Minute).Running(req)
		}
		if r.IntN(4) == 0 {
			w.Speedup = dipCurve
		} else {
			w.Amdahl(0.02 + r.Float64()*0.1)
		}
		ws = append(ws, w)
	}
	return Snapshot(gpus, ws...)
}

func BenchmarkAllocate(b *testing.B) {
	sizes := []struct{ jobs, gpus int }{{100, 256}, {1000, 4096}, {10000, 32768}}
	for _, p := range allPolicies(b) {
		for _, sz := range sizes {
			snap := benchSnapshot(sz.jobs, sz.gpus)
			b.Run(fmt.Sprintf("%s/jobs=%d/gpus=%d", p.Name(), sz.jobs, sz.gpus), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := p.Allocate(snap); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkFfDLNonConcave is FfDL's hard case: every curve dips where the
// job first spans two nodes, and all start at the same slope, so no concave
// jobs set the marginal gain and many allocations tie with the optimum. The
// bounded table must keep every state tied with an optimal one.
func BenchmarkFfDLNonConcave(b *testing.B) {
	for _, sz := range []struct{ jobs, gpus int }{{1000, 4096}, {10000, 32768}} {
		r := rand.New(rand.NewPCG(1, 2))
		sizes := []int{1, 1, 1, 1, 2, 2, 4, 4, 8, 16, 32}
		var ws []*JobWrapper
		for i := range sz.jobs {
			req := sizes[r.IntN(len(sizes))]
			node, drop := 2+r.IntN(8), 2*r.Float64()
			w := MakeJob(fmt.Sprintf("job-%05d", i)).Workers(1, min(2*req, 64)).Requested(req).
				SubmittedAt(time.Duration(i) * time.Second)
			w.Speedup = func(n int) float64 {
				if n <= node {
					return 0.95 * float64(n)
				}
				return 0.95*float64(node) - drop + 0.5*float64(n-node)
			}
			ws = append(ws, w)
		}
		snap := Snapshot(sz.gpus, ws...)
		b.Run(fmt.Sprintf("jobs=%d/gpus=%d", sz.jobs, sz.gpus), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := (algorithm.FfDLOptimizer{}).Allocate(snap); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAllocateMultiGPU is BenchmarkAllocate's cluster of 8-GPU nodes
// where a quarter of the jobs have workers of 2, 4 or 8 GPUs: the policies
// then lay every granted worker onto the nodes.
func BenchmarkAllocateMultiGPU(b *testing.B) {
	sizes := []struct{ jobs, gpus int }{{1000, 4096}, {10000, 32768}}
	for _, p := range allPolicies(b) {
		for _, sz := range sizes {
			snap := benchSnapshot(sz.jobs, sz.gpus)
			r := rand.New(rand.NewPCG(7, uint64(sz.jobs)))
			for i := range snap.Jobs {
				if r.IntN(4) == 0 {
					snap.Jobs[i].GPUsPerWorker = []int{2, 4, 8}[r.IntN(3)]
				}
			}
			for range sz.gpus / 8 {
				snap.NodeGPUs = append(snap.NodeGPUs, 8)
			}
			b.Run(fmt.Sprintf("%s/jobs=%d/gpus=%d", p.Name(), sz.jobs, sz.gpus), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := p.Allocate(snap); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// adaptiveSnapshot is benchSnapshot with every job letting Voda choose its
// batch size: its speedup is the goodput curve the controller and the
// simulator give the policies (estimator.Adaptive), for a batch range of
// 64 to 64×64 and a noise scale between 100 and 10 000 samples. recompute
// returns the curves computed afresh, as a round in which every job had
// reported would.
func adaptiveSnapshot(jobs, gpus int) (snap algorithm.Snapshot, recompute func()) {
	snap = benchSnapshot(jobs, gpus)
	r := rand.New(rand.NewPCG(3, uint64(jobs)))
	fits := make([]estimator.Fit, len(snap.Jobs))
	noise := make([]float64, len(snap.Jobs))
	for i := range snap.Jobs {
		fits[i] = estimator.Fit{OneWorker: 1, Shape: estimator.Shape{Serial: 0.02 + 0.1*r.Float64(), Comm: 0.005 * r.Float64()}}
		noise[i] = 100 * math.Pow(100, r.Float64())
	}
	rng := estimator.BatchRange{Initial: 64, Max: 64 * 64}
	recompute = func() {
		for i := range snap.Jobs {
			snap.Jobs[i].Speedup = fits[i].Adapt(rng, 1, snap.Jobs[i].Max, noise[i]).Speedup
		}
	}
	recompute()
	return snap, recompute
}

// BenchmarkAllocateAdaptive is BenchmarkAllocate with every job scheduled
// by goodput: "curves" times the policy alone on the curves, "round" also
// computes every job's curve first (the worst round: every job reported
// since the last). The target: within 2× of BenchmarkAllocate.
func BenchmarkAllocateAdaptive(b *testing.B) {
	sizes := []struct{ jobs, gpus int }{{1000, 4096}, {10000, 32768}}
	for _, p := range allPolicies(b) {
		for _, sz := range sizes {
			snap, recompute := adaptiveSnapshot(sz.jobs, sz.gpus)
			b.Run(fmt.Sprintf("%s/jobs=%d/gpus=%d/curves", p.Name(), sz.jobs, sz.gpus), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := p.Allocate(snap); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(fmt.Sprintf("%s/jobs=%d/gpus=%d/round", p.Name(), sz.jobs, sz.gpus), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					recompute()
					if _, err := p.Allocate(snap); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
