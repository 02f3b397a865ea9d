package algorithm

import (
	"cmp"
	"math"
	"slices"
)

// The jobs whose speedup curve is not concave are solved by the dynamic
// program P_d[k] = max_g gain_d(g) + P_{d-1}[k−g], where P_d[k] is the best
// gain of the first d of them with at most k extra GPUs. Filled densely it
// costs jobs × GPUs × range: 600 ms for the 680 such jobs of a 10 000-job,
// 32 768-GPU cluster. Most of those states cannot lie on an optimal path, and
// a bound proves it:
//
//   - The upper bound. For any λ ≥ 0, the jobs not yet in the table and the
//     concave group together gain at most λ·r + Σ_i max_x (gain_i(x) − λ·x)
//     from r GPUs (Lagrangian relaxation). A handful of λ values, taken from
//     the slopes of the jobs' concave hulls around the budget, give a bound
//     close to the hull-greedy one; the bound for state k is the least of
//     them at r = budget − k.
//   - The lower bound. A feasible choice: the hull-greedy allocation, with each
//     non-concave job at its greedy count or rounded down to a hull vertex,
//     the rest going to the concave group.
//
// A state whose value plus its upper bound falls below the lower bound is
// dropped, and only the band between the first and last surviving state is
// kept. Every state of an optimal path survives (its value plus the rest of
// that path is at least the optimum), and so does every state tied with one.
// The bound is consistent — a job's gain plus the bound of the jobs after it
// never exceeds the bound including it — so a surviving state's value is the
// one the dense table holds and the traced choice is the same, ties included.

// dpRow is the dense table's row for one job, restricted to its live band:
// sol[k−lo] is the job's extra GPUs in the best choice with at most k. The
// rows hold most of the table's memory, so they are bytes whenever no job
// can take more than 255 extra GPUs.
type dpRow[T uint8 | int32] struct {
	lo  int
	sol []T
}

// dpBound is the pruning test. phi[d·L+i] is Σ over the jobs from d on, and
// the concave group, of max_x (gain(x) − λ_i·x).
type dpBound struct {
	lambda []float64
	phi    []float64
	lower  float64 // a feasible total gain; −Inf disables pruning
}

// upper bounds the gain of the jobs from d on plus the concave group with r
// GPUs.
func (b *dpBound) upper(d, r int) float64 {
	phi := b.phi[d*len(b.lambda):]
	u := math.Inf(1)
	for i, l := range b.lambda {
		u = min(u, l*float64(r)+phi[i])
	}
	return u
}

// dynamicProgram solves the non-concave jobs (gains[d][g] is job d's gain with
// g extra GPUs, g ≤ its cap) given a budget, keeping only the states bound
// admits. It returns the live band of the final row, best[k] (−Inf outside
// the band) and the rows for the trace-back.
func dynamicProgram[T uint8 | int32](gains [][]float64, b *dpBound, budget int) (lo, hi int, best []float64, rows []dpRow[T]) {
	width := 0
	for _, g := range gains {
		width += len(g) - 1
	}
	width = min(width, budget)
	prev := make([]float64, width+1)
	cur := make([]float64, width+1)
	prune := !math.IsInf(b.lower, -1)
	slack := b.lower - 1e-9*max(1, math.Abs(b.lower))
	// Before any job every k is worth 0; keep those the bound admits.
	hi = -1
	for k := 0; k <= width && (!prune || b.upper(0, budget-k) >= slack); k++ {
		hi = k
	}
	lo = 0
	rows = make([]dpRow[T], len(gains))
	for d, gd := range gains {
		c := min(len(gd)-1, width)
		top := min(hi+c, width)
		row := make([]T, top-lo+1)
		for k := lo; k <= top; k++ {
			bv, bg := math.Inf(-1), 0
			for g := max(0, k-hi); g <= min(c, k-lo); g++ {
				if v := gd[g] + prev[k-g]; v > bv {
					bv, bg = v, g
				}
			}
			cur[k], row[k-lo] = bv, T(bg)
		}
		newLo, newHi := -1, -1
		for k := lo; k <= top; k++ {
			if cur[k] == math.Inf(-1) || prune && cur[k]+b.upper(d+1, budget-k) < slack {
				cur[k] = math.Inf(-1)
				continue
			}
			if newLo < 0 {
				newLo = k
			}
			newHi = k
		}
		if newLo < 0 {
			// Only rounding beyond the slack could do this: fill densely.
			return dynamicProgram[T](gains, &dpBound{lower: math.Inf(-1)}, budget)
		}
		rows[d] = dpRow[T]{lo: newLo, sol: row[newLo-lo : newHi-lo+1]}
		lo, hi = newLo, newHi
		prev, cur = cur, prev
	}
	return lo, hi, prev, rows
}

// hullVertex is a corner of a job's concave hull: x extra GPUs, gain y.
type hullVertex struct {
	x int
	y float64
}

// upperHull returns the vertices of the least concave majorant of gains over
// 0..len(gains)−1.
func upperHull(gains []float64) []hullVertex {
	var h []hullVertex
	for x, y := range gains {
		h = hullAppend(h, hullVertex{x, y})
	}
	return h
}

// hullAppend adds p, right of every vertex of the upper concave hull h, and
// returns the hull: the vertices that p puts on or below a chord go.
func hullAppend(h []hullVertex, p hullVertex) []hullVertex {
	for len(h) >= 2 && !above(h[len(h)-2], h[len(h)-1], p) {
		h = h[:len(h)-1]
	}
	return append(h, p)
}

// above reports whether b lies strictly above the segment from a to p, so
// that a hull through a, b and p keeps b.
func above(a, b, p hullVertex) bool {
	return (b.y-a.y)*float64(p.x-a.x) > (p.y-a.y)*float64(b.x-a.x)
}

// hullSegment is a hull edge of job d: n unit steps of gain slope each.
type hullSegment struct {
	d     int
	n     int
	slope float64
}

// newDPBound builds the pruning test for the split jobs.
func newDPBound(p *ffdlParts, budget int) *dpBound {
	gains, steps := p.gains, p.steps
	hulls := make([][]hullVertex, len(gains))
	edges := 0
	for d, g := range gains {
		hulls[d] = upperHull(g)
		edges += max(len(hulls[d])-1, 0)
	}
	// Counted first: tens of thousands of jobs can be split.
	segs := make([]hullSegment, 0, edges)
	for d := range gains {
		for i := 1; i < len(hulls[d]); i++ {
			a, b := hulls[d][i-1], hulls[d][i]
			if s := (b.y - a.y) / float64(b.x-a.x); s > 0 {
				segs = append(segs, hullSegment{d: d, n: b.x - a.x, slope: s})
			}
		}
	}
	// Within a job the slopes decrease, so a stable sort keeps each job's
	// segments in order.
	slices.SortStableFunc(segs, func(a, b hullSegment) int { return cmp.Compare(b.slope, a.slope) })

	b := &dpBound{lower: lowerGain(p, hulls, segs, budget)}
	b.lambda = rankSlopes(segs, steps, budget)
	// phi, filled from the last job back to the first.
	L := len(b.lambda)
	b.phi = make([]float64, (len(gains)+1)*L)
	for i, l := range b.lambda {
		cnt, _ := slices.BinarySearchFunc(steps, l, func(s gainStep, l float64) int {
			return cmp.Compare(l, s.gain) // steps[:cnt] have gain > l
		})
		b.phi[len(gains)*L+i] = p.prefix[cnt] - l*float64(cnt)
	}
	for d := len(gains) - 1; d >= 0; d-- {
		for i, l := range b.lambda {
			best := 0.0
			for _, v := range hulls[d] {
				best = max(best, v.y-l*float64(v.x))
			}
			b.phi[d*L+i] = b.phi[(d+1)*L+i] + best
		}
	}
	// An infinite speedup (a curve may report one) makes the bounds
	// meaningless; the table is then filled densely.
	finite := !math.IsNaN(b.lower) && !math.IsInf(b.lower, 0)
	for _, v := range b.phi {
		finite = finite && !math.IsNaN(v) && !math.IsInf(v, 0)
	}
	if !finite {
		b.lower = math.Inf(-1)
	}
	return b
}

// rankOffsets are where, relative to the budget, the bound's λ values are
// taken in the list of all unit slopes: dense near the budget, where the
// optimal path runs, sparse further out.
var rankOffsets = []int{-8192, -2048, -512, -128, -32, 0, 32, 128, 512, 2048, 8192}

// rankSlopes returns the slopes found at budget+offset in the merged,
// decreasing list of the concave steps and the hull segments' unit steps
// (0 past its end).
func rankSlopes(segs []hullSegment, steps []gainStep, budget int) []float64 {
	var out []float64
	i, s, taken := 0, 0, 0 // next step, next segment, units before them
	for _, off := range rankOffsets {
		r := budget + off
		if r < 1 {
			continue
		}
		slope := 0.0
		for {
			fromSteps := i < len(steps) && (s == len(segs) || steps[i].gain >= segs[s].slope)
			if !fromSteps && s == len(segs) {
				break // past the end
			}
			var next float64
			var n int
			if fromSteps {
				next, n = steps[i].gain, 1
			} else {
				next, n = segs[s].slope, segs[s].n
			}
			if taken+n >= r {
				slope = next
				break
			}
			taken += n
			if fromSteps {
				i++
			} else {
				s++
			}
		}
		if len(out) == 0 || out[len(out)-1] != slope {
			out = append(out, slope)
		}
	}
	return out
}

// lowerGain is the gain of a feasible choice: take unit steps in decreasing
// slope order until the budget is spent (non-concave jobs along their hull),
// then either keep each non-concave job's count or round it down to its hull
// vertex, the concave group taking whatever is left. The better is returned.
func lowerGain(p *ffdlParts, hulls [][]hullVertex, segs []hullSegment, budget int) float64 {
	gains, steps := p.gains, p.steps
	x := make([]int, len(gains))
	left, i := budget, 0
	for _, sg := range segs {
		for i < len(steps) && steps[i].gain >= sg.slope && left > 0 {
			i++
			left--
		}
		if left == 0 {
			break
		}
		x[sg.d] += min(sg.n, left)
		left -= min(sg.n, left)
	}
	asIs, rounded := 0.0, 0.0
	usedAsIs, usedRounded := 0, 0
	for d, g := range gains {
		asIs += g[x[d]]
		usedAsIs += x[d]
		v := 0
		for _, h := range hulls[d] {
			if h.x <= x[d] {
				v = h.x
			}
		}
		rounded += g[v]
		usedRounded += v
	}
	return max(asIs+p.concaveBest(budget-usedAsIs), rounded+p.concaveBest(budget-usedRounded))
}
