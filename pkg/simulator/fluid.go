package simulator

import (
	"cmp"
	"math"
	"slices"
)

// The fluid bound. A job j of a policy's class needs at least W_j
// GPU-seconds (its least over the sizes it may take), cannot finish in
// less than t_j seconds (its best time), and does no work in the restart
// delay d after its first start. Measure its progress in GPU-seconds at
// that least cost: it then advances at a rate x_j(τ) of at most
// c_j = W_j/t_j, the jobs' rates never sum to more than the G GPUs, and
// x_j is 0 before R_j = r_j + d. Its completion C_j is at least F_j + t_j/2,
// F_j = (1/W_j)∫τ x_j(τ)dτ being the mean time of its work: a rate of at
// most c_j spreads W_j over at least t_j seconds before C_j. So the mean
// flow time is at least the minimum over such fluid schedules of
// Σ (F_j + t_j/2 − r_j) / n. Where the isolated bound lets every job run
// at its best size at once, this one makes the jobs that overlap share G.
//
// The minimum is a linear program; fluidBound bounds it from below by weak
// duality, which needs no solver and no care about optimality: for any
// numbers μ_j and any π(τ) ≥ 0,
//
//	Σ_j ∫ x_j τ/W_j dτ ≥ Σ_j μ_j W_j − ∫ G π(τ) dτ − Σ_j c_j ∫_{τ≥R_j} (μ_j − π(τ) − τ/W_j)^+ dτ
//
// (each unit of work done at τ costs τ/W_j ≥ μ_j − π(τ) − ν_j(τ) with
// ν_j the positive part, and Σ x_j ≤ G, x_j ≤ c_j). π is taken constant on
// each of a few hundred slots, so every integral is exact; μ and π are
// searched for (prices from a greedy fluid schedule, then subgradient
// steps), and whatever they are, the value is a valid bound.

// fluidJob is a job of the fluid relaxation: released at R, W GPU-seconds
// of work, at most c of them per second.
type fluidJob struct{ R, W, c float64 }

// fluidSlots is the number of slots π is constant on.
const fluidSlots = 400

// fluidBound returns a lower bound on Σ_j F_j over the fluid schedules of
// jobs on g GPUs (see above); 0 when there are no jobs.
func fluidBound(jobs []fluidJob, g float64) float64 {
	n := len(jobs)
	if n == 0 || !(g > 0) {
		return 0
	}
	for _, j := range jobs {
		if !(j.W > 0) || !(j.c > 0) || math.IsInf(j.W, 0) || math.IsInf(j.c, 0) {
			return 0
		}
	}
	mu := greedyPrices(jobs, g)
	best := math.Inf(-1)
	// Each evaluation costs about fluidSlots × n log n; stay within a budget
	// so that large traces pay a few hundred milliseconds at most.
	iters := int(min(40, max(3, 2e7/(fluidSlots*float64(n)*math.Log2(float64(n)+2)))))
	recv := make([]float64, n)
	eta := 0.5
	for range iters {
		d := fluidDual(jobs, g, mu, recv)
		best = max(best, d)
		for i, j := range jobs {
			mu[i] += eta * (j.W - recv[i]) / (j.W * j.c)
		}
		eta *= 0.9
	}
	return best
}

// greedyPrices returns μ_j = C_j/W_j for the completions C_j of a greedy
// fluid schedule (the least work first, each at its rate cap).
func greedyPrices(jobs []fluidJob, g float64) []float64 {
	n := len(jobs)
	rem := make([]float64, n)
	byR := make([]int, n)
	for i, j := range jobs {
		rem[i], byR[i] = j.W, i
	}
	slices.SortStableFunc(byR, func(a, b int) int { return cmp.Compare(jobs[a].R, jobs[b].R) })
	less := func(a, b int) int {
		if c := cmp.Compare(jobs[a].W, jobs[b].W); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	}
	mu := make([]float64, n)
	var active []int // released and unfinished, the least work first
	type run struct {
		i    int
		rate float64
	}
	var runs []run
	now, next := 0.0, 0
	for left := n; left > 0; {
		for ; next < n && jobs[byR[next]].R <= now; next++ {
			i := byR[next]
			at, _ := slices.BinarySearchFunc(active, i, less)
			active = slices.Insert(active, at, i)
		}
		release := math.Inf(1)
		if next < n {
			release = jobs[byR[next]].R
		}
		if len(active) == 0 {
			now = release
			continue
		}
		free, dt := g, release-now
		runs = runs[:0]
		for _, i := range active {
			if free <= 0 {
				break
			}
			r := min(jobs[i].c, free)
			free -= r
			runs = append(runs, run{i, r})
			dt = min(dt, rem[i]/r)
		}
		now += dt
		done := false
		for _, r := range runs {
			if rem[r.i] -= r.rate * dt; rem[r.i] <= 1e-9*jobs[r.i].W {
				rem[r.i], mu[r.i], done = 0, now/jobs[r.i].W, true
				left--
			}
		}
		if done {
			active = slices.DeleteFunc(active, func(i int) bool { return rem[i] == 0 })
		}
	}
	return mu
}

// fluidDual returns the dual value for prices mu, with π chosen on each
// slot, and sets recv[j] to the work job j would take at those prices (the
// subgradient is W_j − recv[j]).
func fluidDual(jobs []fluidJob, g float64, mu, recv []float64) float64 {
	clear(recv)
	lo, hi := math.Inf(1), 0.0
	val := 0.0
	for i, j := range jobs {
		lo = min(lo, j.R)
		hi = max(hi, mu[i]*j.W) // past μ_j W_j the job's term is 0 for π ≥ 0
		val += mu[i] * j.W
	}
	if !(hi > lo) {
		return val
	}
	width := (hi - lo) / fluidSlots
	type cand struct{ v, c float64 }
	cs := make([]cand, 0, len(jobs))
	for s := range fluidSlots {
		t0 := lo + float64(s)*width
		t1, mid := t0+width, t0+width/2
		// π: where the rates of the jobs still worth more than π fill g.
		cs = cs[:0]
		for i, j := range jobs {
			if j.R <= mid {
				if v := mu[i] - mid/j.W; v > 0 {
					cs = append(cs, cand{v, j.c})
				}
			}
		}
		slices.SortFunc(cs, func(a, b cand) int { return cmp.Compare(b.v, a.v) })
		pi, sum := 0.0, 0.0
		for _, c := range cs {
			if sum += c.c; sum >= g {
				pi = c.v
				break
			}
		}
		val -= g * pi * width
		for i, j := range jobs {
			a, m := 1/j.W, mu[i]-pi
			from, to := max(t0, j.R), min(t1, m*j.W)
			if to > from {
				val -= j.c * (m*(to-from) - a*(to*to-from*from)/2)
				recv[i] += j.c * (to - from)
			}
		}
	}
	return val
}
