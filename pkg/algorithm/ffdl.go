package algorithm

import (
	"cmp"
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
//
// The optimum is exact. Jobs whose curve is concave on [Min, Max] are solved
// together by merging their marginal gains (exact for concave separable
// objectives); the rest go through the dynamic program
// P[j][k] = max_g S_j(g) + P[j-1][k-g] over extra GPUs; the two are then
// combined. This keeps the common case (concave curves, including the linear
// default) fast at thousands of jobs.
type FfDLOptimizer struct{}

var _ Policy = FfDLOptimizer{}

// Name implements Policy.
func (FfDLOptimizer) Name() string { return NameFfDLOptimizer }

// Allocate implements Policy.
func (FfDLOptimizer) Allocate(s Snapshot) (Result, error) {
	if err := s.validateJobs(); err != nil {
		return Result{}, err
	}
	r := newResult(len(s.Jobs))
	free := s.GPUs
	var admitted []int
	for _, i := range orderByKeys(s.Jobs, noKey) {
		j := &s.Jobs[i]
		if j.Min <= free {
			free -= j.Min
			admitted = append(admitted, i)
			continue
		}
		r.Allocation[j.ID] = 0
		r.Reasons[j.ID] = Reason{Code: NoRoom, Need: j.Min, Free: free}
	}
	extra := maxTotalSpeedup(s.Jobs, admitted, free)
	for k, i := range admitted {
		j := &s.Jobs[i]
		n := j.Min + extra[k]
		r.Allocation[j.ID] = n
		r.Reasons[j.ID] = Reason{Code: Allocated, Workers: n}
	}
	return checked(&s, r)
}

// usefulMax is the smallest n in [Min, Max] reaching the job's best speedup
// on that range: more GPUs than that never raise the objective, and ties
// prefer fewer GPUs.
func usefulMax(j *Job) int {
	best, at := j.S(j.Min), j.Min
	for n := j.Min + 1; n <= j.Max; n++ {
		if v := j.S(n); v > best {
			best, at = v, n
		}
	}
	return at
}

// concaveOn reports whether the job's marginal gains never increase on
// [Min, hi].
func concaveOn(j *Job, hi int) bool {
	prev := j.S(j.Min+1) - j.S(j.Min)
	for n := j.Min + 1; n < hi; n++ {
		d := j.S(n+1) - j.S(n)
		if d > prev {
			return false
		}
		prev = d
	}
	return true
}

type gainStep struct {
	pos  int // position in admitted
	n    int // the grant takes the job from n to n+1 GPUs
	gain float64
}

// maxTotalSpeedup distributes budget extra GPUs over the admitted jobs, each
// getting up to usefulMax−Min, maximising the sum of speedups. It returns
// the extra GPUs per admitted job.
func maxTotalSpeedup(jobs []Job, admitted []int, budget int) []int {
	extra := make([]int, len(admitted))
	if budget == 0 || len(admitted) == 0 {
		return extra
	}
	var steps []gainStep // concave jobs' positive marginal gains
	var dp []int         // positions of non-concave jobs
	caps := make([]int, len(admitted))
	for k, i := range admitted {
		j := &jobs[i]
		hi := usefulMax(j)
		caps[k] = hi - j.Min
		if caps[k] == 0 {
			continue
		}
		if !concaveOn(j, hi) {
			dp = append(dp, k)
			continue
		}
		for n := j.Min; n < hi; n++ {
			g := j.S(n+1) - j.S(n)
			if !(g > 0) {
				break
			}
			steps = append(steps, gainStep{pos: k, n: n, gain: g})
		}
	}
	// Within a concave job gains do not increase, so sorting by gain (ties by
	// job order, then by n) takes each job's grants in order.
	slices.SortFunc(steps, func(a, b gainStep) int {
		if c := cmp.Compare(b.gain, a.gain); c != 0 {
			return c
		}
		if c := cmp.Compare(a.pos, b.pos); c != 0 {
			return c
		}
		return cmp.Compare(a.n, b.n)
	})
	// concaveBest(x) = sum of the best x steps.
	prefix := make([]float64, len(steps)+1)
	for i, st := range steps {
		prefix[i+1] = prefix[i] + st.gain
	}
	concaveBest := func(x int) float64 { return prefix[min(x, len(steps))] }

	best, sol := dynamicProgram(jobs, admitted, dp, caps, budget)
	// Split the budget between the two groups.
	split, bestVal := 0, best[0]+concaveBest(budget)
	for k := 1; k < len(best); k++ {
		if v := best[k] + concaveBest(budget-k); v > bestVal {
			split, bestVal = k, v
		}
	}
	k := split
	for d := len(dp) - 1; d >= 0; d-- {
		g := int(sol[d][min(k, len(sol[d])-1)])
		extra[dp[d]] = g
		k -= g
	}
	for _, st := range steps[:min(budget-split, len(steps))] {
		extra[st.pos]++
	}
	return extra
}

// dynamicProgram solves the non-concave jobs exactly. best[k] is the best
// speedup gain with at most k extra GPUs over them; sol[d][k] is the extra
// GPUs of the d-th of them in that optimum. Row d only spans the GPUs the
// first d jobs could use at all, which keeps early rows short.
func dynamicProgram(jobs []Job, admitted, dp, caps []int, budget int) ([]float64, [][]int32) {
	width := 0
	for _, k := range dp {
		width += caps[k]
	}
	width = min(width, budget)
	prev := make([]float64, width+1)
	cur := make([]float64, width+1)
	sol := make([][]int32, len(dp))
	reach := 0 // GPUs the jobs so far can use
	for d, pos := range dp {
		j := &jobs[admitted[pos]]
		c := min(caps[pos], width)
		base := j.S(j.Min)
		gains := make([]float64, c+1)
		for g := range gains {
			gains[g] = j.S(j.Min+g) - base
		}
		reach = min(reach+c, width)
		row := make([]int32, reach+1)
		for k := 0; k <= reach; k++ {
			bv, bg := prev[k], 0 // prev is filled flat beyond its reach
			for g := 1; g <= min(c, k); g++ {
				if v := gains[g] + prev[k-g]; v > bv {
					bv, bg = v, g
				}
			}
			cur[k], row[k] = bv, int32(bg)
		}
		for k := reach + 1; k <= width; k++ {
			cur[k] = cur[reach]
		}
		sol[d] = row
		prev, cur = cur, prev
	}
	return prev, sol
}
