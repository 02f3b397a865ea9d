package algorithm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vodascheduler/voda/pkg/api"
)

// randomFfDLJobs mixes concave curves, curves with a dip where a job first
// spans two nodes, plateaus, and copies of one curve (exact ties), so the
// pruned table meets every shape it must get right.
func randomFfDLJobs(r *rand.Rand, n int) []Job {
	shared := 0.05 + 0.1*r.Float64()
	jobs := make([]Job, n)
	for i := range jobs {
		lo := 1 + r.IntN(4)
		j := Job{ID: api.JobID(fmt.Sprintf("j%04d", i)), Min: lo, Max: lo + r.IntN(40), Submitted: time.Unix(int64(i), 0)}
		switch r.IntN(5) {
		case 0: // linear (the default)
		case 1:
			f := 0.02 + 0.2*r.Float64()
			j.Speedup = func(n int) float64 { return float64(n) / (1 + f*float64(n-1)) }
		case 2:
			j.Speedup = func(n int) float64 { return float64(n) / (1 + shared*float64(n-1)) }
		case 3:
			node, drop, slope := 2+r.IntN(8), r.Float64()*3, 0.2+r.Float64()
			j.Speedup = func(n int) float64 {
				if n <= node {
					return 0.95 * float64(n)
				}
				return 0.95*float64(node) - drop + slope*float64(n-node)
			}
		case 4:
			tab := make([]float64, 1+r.IntN(12))
			for k := range tab {
				tab[k] = float64(k) + 3*r.Float64()
			}
			j.Speedup = func(n int) float64 { return tab[min(n, len(tab))-1] }
		}
		jobs[i] = j
	}
	return jobs
}

func TestFfDLPrunedTableMatchesDenseTable(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	type size struct{ jobs, budget int }
	var sizes []size
	for range 400 {
		n := 1 + r.IntN(120)
		sizes = append(sizes, size{n, r.IntN(40 * n)})
	}
	// More concave steps than the budget plus the bound's farthest rank:
	// only the best of them are merged.
	sizes = append(sizes, size{1500, 500}, size{1500, 3000}, size{2500, 1})
	for iter, sz := range sizes {
		jobs := randomFfDLJobs(r, sz.jobs)
		admitted := make([]int, len(jobs))
		for i := range admitted {
			admitted[i] = i
		}
		want := maxTotalSpeedup(jobs, admitted, sz.budget, false)
		got := maxTotalSpeedup(jobs, admitted, sz.budget, true)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("iteration %d, %d jobs, budget %d (-dense,+pruned):\n%s", iter, sz.jobs, sz.budget, diff)
		}
	}
}

// The bound must do its work: on a large cluster most of the table is never
// filled.
func TestFfDLBoundPrunesTheTable(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	jobs := randomFfDLJobs(r, 3000)
	admitted := make([]int, len(jobs))
	for i := range admitted {
		admitted[i] = i
	}
	const budget = 20000
	p := splitCurves(jobs, admitted, budget)
	if len(p.steps) <= budget {
		t.Fatalf("%d concave steps: the budget is not contended", len(p.steps))
	}
	states := func(rows []dpRow) int {
		n := 0
		for _, row := range rows {
			n += len(row.sol)
		}
		return n
	}
	_, _, _, dense := dynamicProgram(p.gains, &dpBound{lower: math.Inf(-1)}, budget)
	_, _, _, pruned := dynamicProgram(p.gains, newDPBound(&p, budget), budget)
	if d, q := states(dense), states(pruned); q*10 > d {
		t.Errorf("the pruned table keeps %d of %d states, want under a tenth", q, d)
	} else {
		t.Logf("%d non-concave jobs: %d of %d states kept", len(p.dp), q, d)
	}
}
