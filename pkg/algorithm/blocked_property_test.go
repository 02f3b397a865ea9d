package algorithm_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	. "github.com/vodascheduler/voda/internal/testutil"
	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/api"
)

// rigidSnapshot is a random cluster of whole nodes whose jobs are often
// rigid (minimum = maximum) or have a large minimum, some running, packed
// as a scheduler would have left them.
func rigidSnapshot(r *rand.Rand) algorithm.Snapshot {
	node := []int{4, 8}[r.IntN(2)]
	nodes := 1 + r.IntN(8)
	total := node * nodes
	var jobs []*JobWrapper
	used := 0
	for i := range 1 + r.IntN(10) {
		var lo, hi int
		switch r.IntN(10) {
		case 0, 1, 2, 3: // rigid
			lo = []int{1, 2, 4, 8, node, total}[r.IntN(6)]
			hi = lo
		case 4, 5, 6: // large minimum
			lo = 2 + r.IntN(7)
			hi = lo + r.IntN(9)
		default: // elastic
			lo, hi = 1, 1+r.IntN(16)
		}
		w := MakeJob(fmt.Sprintf("j%02d", i)).Workers(lo, hi).
			SubmittedAt(-time.Duration(r.IntN(600)) * time.Second)
		if r.IntN(10) < 7 {
			w.Remaining(time.Duration(60+r.IntN(40000)) * time.Second)
		}
		if r.IntN(3) > 0 {
			w.Amdahl(r.Float64() * 0.3)
		}
		if n := lo + r.IntN(hi-lo+1); r.IntN(2) == 0 && used+n <= total {
			w.StartedAt(-time.Duration(r.IntN(3600)) * time.Second).Running(n)
			used += n
		}
		jobs = append(jobs, w)
	}
	if r.IntN(2) == 0 {
		ng := make([]int, nodes)
		for i := range ng {
			ng[i] = node
		}
		return NodeSnapshot(ng, jobs...)
	}
	return Snapshot(total, jobs...)
}

// HeSRPT on rigid and large-minimum jobs: no GPU idles while a job that
// could run waits for a minimum that fits in them, and no running job is
// preempted where keeping it, and dropping for it the jobs worth least,
// is worth more by HeSRPT's own objective.
func TestHeSRPTNeitherIdlesNorPreemptsAtALoss(t *testing.T) {
	p := algorithm.HeSRPT{Config: algorithm.DefaultHeSRPT()}
	r := rand.New(rand.NewPCG(36, 3))
	preemptions, blocked := 0, 0
	for iter := range 5000 {
		snap := rigidSnapshot(r)
		got, err := p.Allocate(snap)
		if err != nil {
			t.Fatalf("iteration %d: %v", iter, err)
		}
		free := snap.GPUs - got.Allocation.Total()
		for _, j := range snap.Jobs {
			if got.Allocation[j.ID] == 0 && j.S(j.Min) > 0 && j.Min <= free {
				t.Fatalf("iteration %d: %s waits for %d GPUs while %d are free (%s)\n%v",
					iter, j.ID, j.Min, free, got.Reasons[j.ID], got.Allocation)
			}
			if got.Allocation[j.ID] == 0 && j.Min <= snap.GPUs && j.Min > free {
				blocked++
			}
		}
		worth := func(a api.Allocation) float64 { return algorithm.HeSRPTObjective(p, snap, a) }
		have := worth(got.Allocation)
		for _, j := range snap.Jobs {
			if j.Workers == 0 || got.Allocation[j.ID] > 0 {
				continue
			}
			preemptions++
			alt := keepAndDrop(snap, got.Allocation, j, worth)
			if w := worth(alt); w > have*(1+1e-9)+1e-12 {
				t.Fatalf("iteration %d: %s (running on %d) preempted for an allocation worth %.6g, while keeping it is worth %.6g:\nchosen %v\nkept   %v",
					iter, j.ID, j.Workers, have, w, got.Allocation, alt)
			}
		}
	}
	t.Logf("%d preemptions and %d jobs left waiting for a minimum that did not fit, checked", preemptions, blocked)
}

// keepAndDrop is a: the running job keeps its size, and the other jobs
// whose absence costs least by worth are dropped until everything fits.
func keepAndDrop(snap algorithm.Snapshot, a api.Allocation, keep algorithm.Job, worth func(api.Allocation) float64) api.Allocation {
	alt := api.Allocation{}
	for id, n := range a {
		alt[id] = n
	}
	alt[keep.ID] = keep.Workers
	for alt.Total() > snap.GPUs {
		var drop api.JobID
		best := 0.0
		for _, j := range snap.Jobs {
			if j.ID == keep.ID || alt[j.ID] == 0 {
				continue
			}
			n := alt[j.ID]
			alt[j.ID] = 0
			if w := worth(alt); drop == "" || w > best || (w == best && j.ID < drop) {
				drop, best = j.ID, w
			}
			alt[j.ID] = n
		}
		alt[drop] = 0
	}
	return alt
}
