package simulator

import (
	"cmp"
	"math"
	"slices"
	"sync"
)

// The fluid bound. Measure a job's progress as the fraction x_j(τ) of it
// done per second. Whatever a policy does, the job runs at some size n at
// a time, progressing at 1/t_n per second on n GPUs (t_n its least time
// at n GPUs over the placements that fit), after a restart delay
// d on every start. Relax that: let the job run at any speed s up to
// 1/t_best, on the GPUs the upper concave hull of its points (n, 1/t_n)
// and (0, 0) needs for s, which is never more than a real size needs; let
// jobs share the G GPUs at once, and let each start work at R_j = r_j + d.
// Its completion C_j is then at least F_j + t_best/2, F_j = ∫τ x_j(τ)dτ
// being the mean time of its work (a speed of at most 1/t_best spreads the
// work over at least t_best seconds before C_j), so the mean flow time is
// at least the least Σ (F_j + t_j/2 − r_j) / n over fluid schedules. Where
// the isolated bound lets every job run at its best size at once, here the
// jobs that overlap share G, and a job that runs fast pays for it in GPUs.
//
// With the hull cut into segments k of speed width Δs_jk that need γ_jk
// GPUs per unit of speed (γ rising along the hull), the least is a linear
// program; fluidBound bounds it from below by weak duality, which needs no
// solver and no care about optimality: for any numbers μ_j and π(τ) ≥ 0,
//
//	Σ_j F_j ≥ Σ_j μ_j − ∫ G π(τ) dτ − Σ_jk Δs_jk ∫_{τ≥R_j} (μ_j − γ_jk π(τ) − τ)^+ dτ
//
// (work done at τ costs τ ≥ μ_j − γ_jk π(τ) − ν_jk(τ), ν the positive
// part; a job does all its work, the GPUs used are at most G, and each
// segment runs at most at its width). π is taken constant on each of a few
// hundred slots, so every integral is exact; μ and π are searched for
// (completions of a greedy fluid schedule, then subgradient steps), and
// whatever they are, the value is a valid bound.

// fluidSeg is a piece of a job's speed hull: Δs more speed (fraction of
// the job per second) at gpu GPUs per unit of speed.
type fluidSeg struct{ ds, gpu float64 }

// fluidJob is a job of the fluid relaxation: it may work from R on, along
// its hull's segments, cheapest first.
type fluidJob struct {
	R    float64
	segs []fluidSeg
}

// best is the job's best time, 1 / its top speed.
func (j *fluidJob) best() float64 {
	s := 0.0
	for _, g := range j.segs {
		s += g.ds
	}
	return 1 / s
}

// fluidHull returns the segments of the upper concave hull of (0, 0) and
// the points (gpus[i], speed[i]), gpus rising.
func fluidHull(gpus, speed []float64) []fluidSeg {
	type pt struct{ x, y float64 }
	h := []pt{{0, 0}}
	for i := range gpus {
		p := pt{gpus[i], speed[i]}
		if !(p.y > h[len(h)-1].y) {
			continue // no faster than fewer GPUs
		}
		for len(h) >= 2 {
			a, b := h[len(h)-2], h[len(h)-1]
			if (b.y-a.y)*(p.x-a.x) > (p.y-a.y)*(b.x-a.x) {
				break
			}
			h = h[:len(h)-1]
		}
		h = append(h, p)
	}
	segs := make([]fluidSeg, 0, len(h)-1)
	for i := 1; i < len(h); i++ {
		ds := h[i].y - h[i-1].y
		segs = append(segs, fluidSeg{ds, (h[i].x - h[i-1].x) / ds})
	}
	return segs
}

// fluidSlots is the number of slots π is constant on.
const fluidSlots = 300

// fluidCache keeps bounds already computed: every policy run on a
// workload asks for the same one.
var fluidCache struct {
	sync.Mutex
	m map[uint64]float64
}

// fluidMaxSegments caps the size of the relaxation fluidBound takes on
// (its greedy schedule grows with jobs × segments × events): about 2 000
// jobs of ten hull segments each.
const fluidMaxSegments = 20000

// fluidBound returns a lower bound on Σ_j F_j over the fluid schedules of
// jobs on g GPUs (see above), and false when it has none: no jobs, a job
// that cannot run, or more than fluidMaxSegments hull segments.
func fluidBound(jobs []fluidJob, g float64) (float64, bool) {
	n := len(jobs)
	if n == 0 || !(g > 0) {
		return 0, false
	}
	segs := 0
	for _, j := range jobs {
		if len(j.segs) == 0 || math.IsNaN(j.R) || math.IsInf(j.R, 0) {
			return 0, false
		}
		for _, s := range j.segs {
			if !(s.ds > 0) || !(s.gpu > 0) || math.IsInf(s.ds, 0) || math.IsInf(s.gpu, 0) {
				return 0, false
			}
		}
		segs += len(j.segs)
	}
	if segs > fluidMaxSegments {
		return 0, false
	}
	key := fluidKey(jobs, g)
	fluidCache.Lock()
	v, ok := fluidCache.m[key]
	fluidCache.Unlock()
	if ok {
		return v, true
	}
	mu, primal := greedyPrices(jobs, g)
	best := math.Inf(-1)
	// Each evaluation costs about fluidSlots × segments × log(segments);
	// stay within a budget of about a second.
	iters := int(min(40, max(3, 3e8/(fluidSlots*float64(segs)*math.Log2(float64(segs)+2)))))
	recv := make([]float64, n)
	eta := 0.5
	for range iters {
		best = max(best, fluidDual(jobs, g, mu, recv))
		for i := range jobs {
			mu[i] += eta * (1 - recv[i]) * jobs[i].best()
		}
		eta *= 0.9
	}
	// The greedy schedule is feasible, so by weak duality no bound is
	// above its value; one that were would be a bug, and no bound is
	// better than a wrong one.
	if !(best <= primal*(1+1e-9)) {
		return 0, false
	}
	fluidCache.Lock()
	if fluidCache.m == nil || len(fluidCache.m) > 1024 {
		fluidCache.m = map[uint64]float64{}
	}
	fluidCache.m[key] = best
	fluidCache.Unlock()
	return best, true
}

// fluidKey hashes the jobs and GPUs (FNV-1a over the bits).
func fluidKey(jobs []fluidJob, g float64) uint64 {
	h := uint64(14695981039346656037)
	mix := func(f float64) {
		b := math.Float64bits(f)
		for range 8 {
			h ^= b & 0xff
			h *= 1099511628211
			b >>= 8
		}
	}
	mix(g)
	for _, j := range jobs {
		mix(j.R)
		mix(float64(len(j.segs)))
		for _, s := range j.segs {
			mix(s.ds)
			mix(s.gpu)
		}
	}
	return h
}

// greedyPrices returns μ_j = C_j, the completions of a greedy fluid
// schedule, and its Σ_j F_j. At every release and completion it hands
// the GPUs out a hull segment at a time, the segment whose GPUs would
// finish its job's remaining work cheapest first (remaining share ×
// GPUs per unit of speed), so that short jobs and efficient speeds go
// first and no job climbs to an expensive speed while another waits for
// a cheap one.
func greedyPrices(jobs []fluidJob, g float64) ([]float64, float64) {
	n := len(jobs)
	rem := make([]float64, n)
	byR := make([]int, n)
	for i := range jobs {
		rem[i], byR[i] = 1, i
	}
	slices.SortStableFunc(byR, func(a, b int) int { return cmp.Compare(jobs[a].R, jobs[b].R) })
	mu := make([]float64, n)
	var active []int
	type seg struct {
		key  float64
		i, k int
	}
	var segs []seg
	rate := make([]float64, n)
	now, next, sumF := 0.0, 0, 0.0
	for left := n; left > 0; {
		for ; next < n && jobs[byR[next]].R <= now; next++ {
			active = append(active, byR[next])
		}
		release := math.Inf(1)
		if next < n {
			release = jobs[byR[next]].R
		}
		if len(active) == 0 {
			now = release
			continue
		}
		segs = segs[:0]
		for _, i := range active {
			for k, s := range jobs[i].segs {
				segs = append(segs, seg{rem[i] * s.gpu, i, k})
			}
		}
		slices.SortFunc(segs, func(a, b seg) int {
			if c := cmp.Compare(a.key, b.key); c != 0 {
				return c
			}
			if c := cmp.Compare(a.i, b.i); c != 0 {
				return c
			}
			return cmp.Compare(a.k, b.k)
		})
		free, dt := g, release-now
		for _, i := range active {
			rate[i] = 0
		}
		for _, sg := range segs {
			if free <= 0 {
				break
			}
			s := jobs[sg.i].segs[sg.k]
			take := min(s.ds, free/s.gpu)
			rate[sg.i] += take
			if free -= take * s.gpu; free <= 1e-12*g {
				free = 0
			}
		}
		for _, i := range active {
			if rate[i] > 0 {
				dt = min(dt, rem[i]/rate[i])
			}
		}
		for _, i := range active {
			sumF += rate[i] * ((now+dt)*(now+dt) - now*now) / 2
		}
		now += dt
		done := false
		for _, i := range active {
			if rate[i] > 0 {
				if rem[i] -= rate[i] * dt; rem[i] <= 1e-9 {
					rem[i], mu[i], done = 0, now, true
					left--
				}
			}
		}
		if done {
			active = slices.DeleteFunc(active, func(i int) bool { return rem[i] == 0 })
		}
	}
	return mu, sumF
}

// fluidDual returns the dual value for prices mu, with π chosen on each
// slot, and sets recv[j] to the share of job j done at those prices (the
// subgradient is 1 − recv[j]).
func fluidDual(jobs []fluidJob, g float64, mu, recv []float64) float64 {
	clear(recv)
	lo, hi := math.Inf(1), math.Inf(-1)
	val := 0.0
	for i, j := range jobs {
		lo = min(lo, j.R)
		hi = max(hi, mu[i]) // past μ_j the job's terms are 0 for π ≥ 0
		val += mu[i]
	}
	if !(hi > lo) {
		return val
	}
	width := (hi - lo) / fluidSlots
	type cand struct{ v, gpus float64 }
	var cs []cand
	for s := range fluidSlots {
		t0 := lo + float64(s)*width
		t1, mid := t0+width, t0+width/2
		// π: the value per GPU at which the segments worth more fill g.
		cs = cs[:0]
		for i, j := range jobs {
			if j.R <= mid && mu[i] > mid {
				for _, sg := range j.segs {
					cs = append(cs, cand{(mu[i] - mid) / sg.gpu, sg.ds * sg.gpu})
				}
			}
		}
		slices.SortFunc(cs, func(a, b cand) int { return cmp.Compare(b.v, a.v) })
		pi, used := 0.0, 0.0
		for _, c := range cs {
			if used += c.gpus; used >= g {
				pi = c.v
				break
			}
		}
		val -= g * pi * width
		for i, j := range jobs {
			if mu[i] <= t0 || j.R >= t1 {
				continue
			}
			for _, sg := range j.segs {
				m := mu[i] - sg.gpu*pi
				from, to := max(t0, j.R), min(t1, m)
				if to > from {
					val -= sg.ds * (m*(to-from) - (to*to-from*from)/2)
					recv[i] += sg.ds * (to - from)
				}
			}
		}
	}
	return val
}
