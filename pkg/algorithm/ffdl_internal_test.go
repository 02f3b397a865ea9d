package algorithm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
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
	type size struct {
		jobs, budget int
		wide         bool // ranges over 255 GPUs: the table's rows hold int32, not bytes
	}
	var sizes []size
	for range 400 {
		n := 1 + r.IntN(120)
		sizes = append(sizes, size{n, r.IntN(40 * n), false})
	}
	// More concave steps than the budget plus the bound's farthest rank:
	// only the best of them are merged.
	sizes = append(sizes, size{1500, 500, false}, size{1500, 3000, false}, size{2500, 1, false})
	for range 10 {
		sizes = append(sizes, size{1 + r.IntN(30), 200 + r.IntN(2000), true})
	}
	for iter, sz := range sizes {
		jobs := randomFfDLJobs(r, sz.jobs)
		if sz.wide {
			for i := range jobs {
				jobs[i].Max = jobs[i].Min + 250 + r.IntN(100)
			}
		}
		admitted := make([]int, len(jobs))
		for i := range admitted {
			admitted[i] = i
		}
		want := maxTotalSpeedup(jobs, admitted, sz.budget, false, nil)
		got := maxTotalSpeedup(jobs, admitted, sz.budget, true, nil)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("iteration %d, %d jobs, budget %d (-dense,+pruned):\n%s", iter, sz.jobs, sz.budget, diff)
		}
		if sz.wide { // both went through the int32 rows: check the optimum independently
			used, value := 0, 0.0
			for i, x := range got {
				used += x
				value += jobs[i].S(jobs[i].Min+x) - jobs[i].S(jobs[i].Min)
			}
			if best := naiveBestGain(jobs, sz.budget); used > sz.budget || math.Abs(value-best) > 1e-9*max(1, best) {
				t.Fatalf("iteration %d: %d extra GPUs of %d gain %v, the optimum is %v", iter, used, sz.budget, value, best)
			}
		}
	}
}

// naiveBestGain is the best total gain over the jobs' minimums with budget
// extra GPUs, by the plain dynamic program over every job.
func naiveBestGain(jobs []Job, budget int) float64 {
	best := make([]float64, budget+1)
	for i := range jobs {
		j := &jobs[i]
		next := slices.Clone(best)
		for k := range next {
			for x := 1; x <= min(k, j.Max-j.Min); x++ {
				next[k] = max(next[k], best[k-x]+j.S(j.Min+x)-j.S(j.Min))
			}
		}
		best = next
	}
	return best[budget]
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
	p := splitCurves(jobs, admitted, budget, nil)
	if len(p.steps) <= budget {
		t.Fatalf("%d concave steps: the budget is not contended", len(p.steps))
	}
	states := func(rows []dpRow[int32]) int {
		n := 0
		for _, row := range rows {
			n += len(row.sol)
		}
		return n
	}
	_, _, _, dense := dynamicProgram[int32](p.gains, &dpBound{lower: math.Inf(-1)}, budget)
	_, _, _, pruned := dynamicProgram[int32](p.gains, newDPBound(&p, budget), budget)
	if d, q := states(dense), states(pruned); q*10 > d {
		t.Errorf("the pruned table keeps %d of %d states, want under a tenth", q, d)
	} else {
		t.Logf("%d non-concave jobs: %d of %d states kept", len(p.dp), q, d)
	}
}
