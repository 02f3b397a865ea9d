package algorithm

import (
	"cmp"
	"math"
	"slices"
)

// FfDLOptimizer maximises the cluster's total speedup Σ S_j(n_j) (Saxena et
// al., MASCOTS'20), as the original Voda did, with these differences:
//
//   - Admission is first-come-first-served with backfilling: jobs are taken
//     in submission order while their minimum still fits (the original kept
//     the first G jobs and gave each at least one GPU, ignoring the minimum).
//   - Every admitted job gets a count in [Min, Max]; GPUs that would add no
//     speedup stay free (ties go to fewer GPUs).
//   - The batch-size dimension of the paper is not modelled: Voda keeps each
//     job's batch size.
//   - A job whose workers hold k > 1 GPUs is optimised over GPUs with a step
//     curve (x extra GPUs give ⌊x/k⌋ workers) in the dynamic program; when
//     the nodes are known its extra workers are then trimmed to what fits
//     whole on them (fitNodes).
//
// The optimum is exact. Jobs whose curve is concave on [Min, Max] are solved
// together by merging their marginal gains (exact for concave separable
// objectives); the rest go through the dynamic program
// P[j][k] = max_g S_j(g) + P[j-1][k-g] over extra GPUs, of which only the
// states a Lagrangian bound cannot rule out are filled (ffdl_dp.go); the two
// are then combined. 10 000 jobs on 32 768 GPUs take about 15 ms.
type FfDLOptimizer struct{}

var _ Policy = FfDLOptimizer{}

// Name implements Policy.
func (FfDLOptimizer) Name() string { return NameFfDLOptimizer }

// Allocate implements Policy.
func (p FfDLOptimizer) Allocate(s Snapshot) (Result, error) { return allocate(p, s) }

func (FfDLOptimizer) decide(s *Snapshot, d *Decision) error {
	c := newCapacity(s)
	admitted := make([]int, 0, len(s.Jobs))
	for _, i := range arrivalOrder(s.Jobs, &d.order) {
		j := &s.Jobs[i]
		if c.fits(j.k(), j.Min) {
			c.take(j.k(), j.Min)
			admitted = append(admitted, i)
			continue
		}
		d.set(i, 0, noRoom(j, j.Min, &c))
	}
	extra := maxTotalSpeedup(s.Jobs, admitted, c.free, true, &d.ffdl)
	if c.byFree != nil {
		fitNodes(s.Jobs, admitted, extra, &c)
	}
	for k, i := range admitted {
		j := &s.Jobs[i]
		n := j.Min + extra[k]
		d.set(i, n, allocated(j, n))
	}
	return nil
}

// fitNodes trims the extra workers to what the nodes hold whole: the
// optimum is over GPUs, and a worker of k GPUs also needs k on one node.
// Jobs with the largest workers take theirs first, since small workers fill
// the holes large ones leave; a job whose extra workers do not all fit gets
// as many as do, and the GPUs it cannot use stay free.
func fitNodes(jobs []Job, admitted, extra []int, c *capacity) {
	order := make([]int, len(admitted))
	for p := range order {
		order[p] = p
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Compare(jobs[admitted[b]].k(), jobs[admitted[a]].k())
	})
	for _, p := range order {
		k := jobs[admitted[p]].k()
		extra[p] = c.most(k, extra[p])
		c.take(k, extra[p])
	}
}

// usefulCap is the extra GPUs, above the minimum, at which the curve vals
// (vals[g] = S(Min+g)) first reaches its best value: more never raise the
// objective, and ties prefer fewer GPUs.
func usefulCap(vals []float64) int {
	at := 0
	for g, v := range vals {
		if v > vals[at] {
			at = g
		}
	}
	return at
}

// concave reports whether the marginal gains of vals never increase.
func concave(vals []float64) bool {
	for g := 2; g < len(vals); g++ {
		if vals[g]-vals[g-1] > vals[g-1]-vals[g-2] {
			return false
		}
	}
	return true
}

// gainStep is one GPU more for the concave job at position pos of admitted.
type gainStep struct {
	gain float64
	pos  int
}

// stepRun is a concave job's marginal gains not yet taken: gain is its
// next step's, from S(Min+x−1) to at = S(Min+x), and the steps up to x =
// end−1 gain; they do not increase. The gains are read from the curve as
// the run is taken, not kept for every job: at 100 000 jobs a copy of all
// of them was a fifth of what a round allocated.
type stepRun struct {
	gain, at float64
	x, end   int32
	pos      int32 // the job's position in admitted
}

// bestSteps merges the runs into the n best steps, by decreasing gain and
// then job order. A heap of runs makes that O(n log runs), not a sort of
// every step.
func bestSteps(jobs []Job, admitted []int, runs []stepRun, n int, buf []gainStep) []gainStep {
	// ahead reports whether run a's next step comes before run b's.
	ahead := func(a, b *stepRun) bool {
		return a.gain > b.gain || a.gain == b.gain && a.pos < b.pos
	}
	down := func(i int) {
		for {
			c := 2*i + 1
			if c >= len(runs) {
				return
			}
			if c+1 < len(runs) && ahead(&runs[c+1], &runs[c]) {
				c++
			}
			if !ahead(&runs[c], &runs[i]) {
				return
			}
			runs[i], runs[c] = runs[c], runs[i]
			i = c
		}
	}
	for i := len(runs)/2 - 1; i >= 0; i-- {
		down(i)
	}
	most := 0
	for _, r := range runs {
		most += int(r.end - r.x)
	}
	steps := slices.Grow(buf[:0], min(n, most))
	for len(steps) < n && len(runs) > 0 {
		top := &runs[0]
		steps = append(steps, gainStep{gain: top.gain, pos: int(top.pos)})
		if top.x++; top.x == top.end {
			runs[0] = runs[len(runs)-1]
			runs = runs[:len(runs)-1]
		} else {
			j := &jobs[admitted[top.pos]]
			v := j.S(j.Min + int(top.x))
			top.gain, top.at = v-top.at, v
		}
		down(0)
	}
	return steps
}

// ffdlBuf holds FfDL Optimizer's lists of a job each from round to round
// (the Decision keeps it): the extra workers it returns, the concave
// jobs' runs and their best steps.
type ffdlBuf struct {
	extra []int
	runs  []stepRun
	steps []gainStep
}

// ffdlParts is the admitted jobs split for maxTotalSpeedup: the concave
// jobs' steps, best first, with their prefix sums, and the other jobs'
// positions in admitted with their gains over their minimum (g = 0..cap).
type ffdlParts struct {
	steps     []gainStep
	prefix    []float64
	dp        []int
	gains     [][]float64 // over extra GPUs
	perWorker []int       // GPUs per worker of each dp job
}

// concaveBest is the concave group's best gain from x GPUs.
func (p *ffdlParts) concaveBest(x int) float64 { return p.prefix[min(x, len(p.steps))] }

// splitCurves reads each admitted job's curve once, up to its useful cap,
// and files the job as concave (its positive marginal gains become steps)
// or not (its gains go to the dynamic program).
func splitCurves(jobs []Job, admitted []int, budget int, buf *ffdlBuf) ffdlParts {
	var p ffdlParts
	if buf == nil {
		buf = new(ffdlBuf)
	}
	runs := slices.Grow(buf.runs[:0], len(admitted)) // concave jobs' positive marginal gains
	defer func() { buf.runs = runs[:0] }()
	var vals []float64
	for k, i := range admitted {
		j := &jobs[i]
		vals = vals[:0]
		for n := j.Min; n <= j.Max; n++ {
			vals = append(vals, j.S(n))
		}
		vals = vals[:usefulCap(vals)+1]
		if len(vals) == 1 {
			continue
		}
		if per := j.k(); per > 1 {
			// The table is over GPUs: x extra GPUs give x/per workers, a
			// step curve the dynamic program handles like any other.
			g := make([]float64, min((len(vals)-1)*per, budget)+1)
			for x := 1; x < len(g); x++ {
				g[x] = vals[x/per] - vals[0]
			}
			p.dp, p.gains, p.perWorker = append(p.dp, k), append(p.gains, g), append(p.perWorker, per)
			continue
		}
		if !concave(vals) {
			g := make([]float64, min(len(vals), budget+1))
			for x := 1; x < len(g); x++ {
				g[x] = vals[x] - vals[0]
			}
			p.dp, p.gains, p.perWorker = append(p.dp, k), append(p.gains, g), append(p.perWorker, 1)
			continue
		}
		end := 1
		for end < len(vals) && vals[end]-vals[end-1] > 0 {
			end++
		}
		if end > 1 {
			runs = append(runs, stepRun{gain: vals[1] - vals[0], at: vals[1], x: 1, end: int32(end), pos: int32(k)})
		}
	}
	// No step past the budget plus the bound's farthest rank is ever read.
	p.steps = bestSteps(jobs, admitted, runs, budget+rankOffsets[len(rankOffsets)-1], buf.steps)
	buf.steps = p.steps[:0]
	p.prefix = make([]float64, len(p.steps)+1)
	for i, st := range p.steps {
		p.prefix[i+1] = p.prefix[i] + st.gain
	}
	return p
}

// solveNonConcave fills the non-concave jobs' table, splits the budget
// between them and the concave group, and writes their extra GPUs into
// extra. It returns the non-concave jobs' share.
func solveNonConcave[T uint8 | int32](p *ffdlParts, bound *dpBound, budget int, extra []int) int {
	lo, hi, best, rows := dynamicProgram[T](p.gains, bound, budget)
	split, bestVal := -1, math.Inf(-1)
	for k := lo; k <= hi; k++ {
		if v := best[k] + p.concaveBest(budget-k); v > bestVal {
			split, bestVal = k, v
		}
	}
	k := split
	for d := len(p.dp) - 1; d >= 0; d-- {
		g := int(rows[d].sol[k-rows[d].lo])
		extra[p.dp[d]] = g / p.perWorker[d]
		k -= g
	}
	return split
}

// maxTotalSpeedup distributes budget extra GPUs over the admitted jobs, each
// getting up to its useful cap, maximising the sum of speedups. It returns
// the extra workers per admitted job (GPUs when workers hold one). Without prune the non-concave jobs' table
// is filled densely: the reference the pruned one must agree with.
func maxTotalSpeedup(jobs []Job, admitted []int, budget int, prune bool, buf *ffdlBuf) []int {
	if buf == nil {
		buf = new(ffdlBuf)
	}
	buf.extra = zeroed(buf.extra, len(admitted))
	extra := buf.extra
	if budget == 0 || len(admitted) == 0 {
		return extra
	}
	p := splitCurves(jobs, admitted, budget, buf)
	bound := &dpBound{lower: math.Inf(-1)}
	if prune && len(p.dp) > 0 {
		bound = newDPBound(&p, budget)
	}
	maxCap := 0
	for _, g := range p.gains {
		maxCap = max(maxCap, len(g)-1)
	}
	var split int
	if maxCap <= math.MaxUint8 {
		split = solveNonConcave[uint8](&p, bound, budget, extra)
	} else {
		split = solveNonConcave[int32](&p, bound, budget, extra)
	}
	for _, st := range p.steps[:min(budget-split, len(p.steps))] {
		extra[st.pos]++
	}
	return extra
}
