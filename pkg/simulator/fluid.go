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
//
// With several GPU types (capacity G_t each) a job has a hull per type and
// runs on one type at a time. Relaxed to time-sharing between types (a
// convex combination of one-type speeds), the job's term at τ is the best
// over types of its one-type term, max_t Σ_k Δs_jtk (μ_j − γ_jtk π_t(τ) −
// τ)^+, a linear objective being as large on the hull of the union as on
// one of the sets, and the GPUs term is Σ_t ∫ G_t π_t(τ) dτ.

// fluidSeg is a piece of a job's speed hull: Δs more speed (fraction of
// the job per second) at gpu GPUs per unit of speed, on GPUs of type t
// (an index into the capacities; 0 with one type).
type fluidSeg struct {
	ds, gpu float64
	t       int
}

// fluidJob is a job of the fluid relaxation: it may work from R on, along
// its hull's segments, cheapest first, on one type at a time. Its
// segments are grouped by type, each group in hull order.
type fluidJob struct {
	R    float64
	segs []fluidSeg
}

// best is the job's best time, 1 / its top speed on any type.
func (j *fluidJob) best() float64 {
	_, top := j.fastest()
	return 1 / top
}

// fastest returns the type of the job's top speed and that speed: the
// largest over types of its hull's sum.
func (j *fluidJob) fastest() (t int, top float64) {
	sum := 0.0
	for i, g := range j.segs {
		if i > 0 && g.t != j.segs[i-1].t {
			sum = 0
		}
		if sum += g.ds; sum > top {
			t, top = g.t, sum
		}
	}
	return t, top
}

// onType returns segments with their type set to t.
func onType(segs []fluidSeg, t int) []fluidSeg {
	for i := range segs {
		segs[i].t = t
	}
	return segs
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
		segs = append(segs, fluidSeg{ds: ds, gpu: (h[i].x - h[i-1].x) / ds})
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
// jobs on g GPUs of one type (see above), and false when it has none: no
// jobs, a job that cannot run, or more than fluidMaxSegments hull
// segments.
func fluidBound(jobs []fluidJob, g float64) (float64, bool) {
	return fluidBoundTypes(jobs, []float64{g})
}

// fluidBoundTypes is fluidBound on several GPU types, caps[t] GPUs of
// type t.
func fluidBoundTypes(jobs []fluidJob, caps []float64) (float64, bool) {
	n := len(jobs)
	if n == 0 || len(caps) == 0 {
		return 0, false
	}
	for _, g := range caps {
		if !(g > 0) || math.IsInf(g, 0) {
			return 0, false
		}
	}
	segs := 0
	for _, j := range jobs {
		if len(j.segs) == 0 || math.IsNaN(j.R) || math.IsInf(j.R, 0) {
			return 0, false
		}
		for _, s := range j.segs {
			if !(s.ds > 0) || !(s.gpu > 0) || math.IsInf(s.ds, 0) || math.IsInf(s.gpu, 0) || s.t < 0 || s.t >= len(caps) {
				return 0, false
			}
		}
		segs += len(j.segs)
	}
	if segs > fluidMaxSegments {
		return 0, false
	}
	key := fluidKey(jobs, caps)
	fluidCache.Lock()
	v, ok := fluidCache.m[key]
	fluidCache.Unlock()
	if ok {
		return v, true
	}
	mu, primal := greedyPrices(jobs, caps)
	best := math.Inf(-1)
	// Each evaluation costs about fluidSlots × segments × log(segments)
	// (with several types a slot's search touches only the jobs working
	// in it, so the same estimate holds); stay within about a second.
	iters := int(min(40, max(3, 3e8/(fluidSlots*float64(segs)*math.Log2(float64(segs)+2)))))
	recv := make([]float64, n)
	eta := 0.5
	for range iters {
		best = max(best, fluidDual(jobs, caps, mu, recv))
		for i := range jobs {
			mu[i] += eta * (1 - recv[i]) * jobs[i].best()
		}
		eta *= 0.9
	}
	if len(caps) > 1 {
		// Every job alone at its best from R_j, at prices 0 (which every
		// slot's search tries): the isolated value, which the search
		// from the greedy's completions need not reach with several types.
		for i := range jobs {
			mu[i] = jobs[i].R + jobs[i].best()
		}
		best = max(best, fluidDual(jobs, caps, mu, recv))
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
func fluidKey(jobs []fluidJob, caps []float64) uint64 {
	h := uint64(14695981039346656037)
	mix := func(f float64) {
		b := math.Float64bits(f)
		for range 8 {
			h ^= b & 0xff
			h *= 1099511628211
			b >>= 8
		}
	}
	for _, g := range caps {
		mix(g)
	}
	for _, j := range jobs {
		mix(j.R)
		mix(float64(len(j.segs)))
		for _, s := range j.segs {
			mix(s.ds)
			mix(s.gpu)
			mix(float64(s.t))
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
// a cheap one. A job's first segment handed out fixes its type until the
// next release or completion.
func greedyPrices(jobs []fluidJob, caps []float64) ([]float64, float64) {
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
	on := make([]int, n)
	free := make([]float64, len(caps))
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
		copy(free, caps)
		dt := release - now
		for _, i := range active {
			rate[i], on[i] = 0, -1
		}
		for _, sg := range segs {
			s := jobs[sg.i].segs[sg.k]
			if free[s.t] <= 0 || on[sg.i] >= 0 && on[sg.i] != s.t {
				continue
			}
			take := min(s.ds, free[s.t]/s.gpu)
			rate[sg.i] += take
			on[sg.i] = s.t
			if free[s.t] -= take * s.gpu; free[s.t] <= 1e-12*caps[s.t] {
				free[s.t] = 0
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

// fluidDual returns the dual value for prices mu, with π_t chosen on each
// slot, and sets recv[j] to the share of job j done at those prices (the
// subgradient is 1 − recv[j]).
func fluidDual(jobs []fluidJob, caps []float64, mu, recv []float64) float64 {
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
	types := len(caps)
	pi := make([]float64, types)
	choice := make([]int, len(jobs)) // the type each job is priced on
	var sl fluidSlot
	for s := range fluidSlots {
		t0 := lo + float64(s)*width
		t1, mid := t0+width, t0+width/2
		fluidPrices(jobs, caps, mu, mid, pi, choice)
		if types > 1 {
			val -= sl.search(jobs, caps, mu, pi, t0, t1, recv)
			continue
		}
		val -= caps[0] * pi[0] * width
		for i, j := range jobs {
			if mu[i] <= t0 || j.R >= t1 {
				continue
			}
			from := max(t0, j.R)
			for _, sg := range j.segs {
				m := mu[i] - sg.gpu*pi[0]
				to := min(t1, m)
				if to > from {
					val -= sg.ds * (m*(to-from) - (to*to-from*from)/2)
					recv[i] += sg.ds * (to - from)
				}
			}
		}
	}
	return val
}

// fluidSlot finds prices for one slot with several types: from the
// prices given, a few subgradient steps on the slot's dual term (convex in
// the prices; its subgradient in π_t is the GPU-time the jobs' best
// responses use on t less the type's), keeping the best prices seen. It
// keeps its buffers between calls.
type fluidSlot struct {
	in              fluidIntegral
	work, bestWork  []float64
	used, try, best []float64
}

// fluidSlotSteps is the number of subgradient steps per slot.
const fluidSlotSteps = 12

// search returns the slot's term at the best prices found, G·π·width plus
// the jobs' integrals, and adds to recv the work done at those prices.
func (sl *fluidSlot) search(jobs []fluidJob, caps, mu, pi []float64, t0, t1 float64, recv []float64) float64 {
	n, types := len(jobs), len(caps)
	sl.work, sl.bestWork = resize(sl.work, n), resize(sl.bestWork, n)
	sl.used, sl.try, sl.best = resize(sl.used, types), resize(sl.try, types), resize(sl.best, types)
	copy(sl.try, pi)
	scale := 0.0 // the step's unit: the largest value per GPU bid
	for i, j := range jobs {
		if j.R < t1 && mu[i] > t0 {
			for _, sg := range j.segs {
				scale = max(scale, (mu[i]-t0)/sg.gpu)
			}
		}
	}
	clear(sl.best)
	bestCost := sl.cost(jobs, caps, mu, sl.best, t0, t1) // prices 0
	copy(sl.bestWork, sl.work)
	step := 0.25
	for k := 0; ; k++ {
		cost := sl.cost(jobs, caps, mu, sl.try, t0, t1)
		if cost < bestCost {
			bestCost = cost
			copy(sl.best, sl.try)
			copy(sl.bestWork, sl.work)
		}
		if k == fluidSlotSteps || scale == 0 {
			break
		}
		w := t1 - t0
		for t, g := range caps {
			sl.try[t] = max(0, sl.try[t]-step*scale*(g*w-sl.used[t])/(g*w))
		}
		step *= 0.7
	}
	for i := range recv {
		recv[i] += sl.bestWork[i]
	}
	return bestCost
}

// cost is the slot's dual term at prices pi; it sets sl.work (each job's
// work) and sl.used (GPU-time per type) of the jobs' best responses.
func (sl *fluidSlot) cost(jobs []fluidJob, caps, mu, pi []float64, t0, t1 float64) float64 {
	clear(sl.work)
	clear(sl.used)
	c := 0.0
	for t, g := range caps {
		c += g * pi[t] * (t1 - t0)
	}
	for i, j := range jobs {
		if mu[i] <= t0 || j.R >= t1 {
			continue
		}
		v, r := sl.in.best(j.segs, mu[i], pi, max(t0, j.R), min(t1, mu[i]), sl.used)
		c += v
		sl.work[i] = r
	}
	return c
}

// resize returns s with length n, reusing its array when it can.
func resize(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

// fluidPrices sets pi[t], the value per GPU of type t at time mid, at
// which the segments worth more fill the type: the prices that minimise
// the slot's dual with one type. With several, a job bids on a type only
// while it gains more there than on the others at their prices, so the
// prices are set a type at a time (coordinate descent on the slot's dual,
// convex in the prices), from those with every job on its fastest type.
// Any prices give a valid bound; these aim at a tight one.
func fluidPrices(jobs []fluidJob, caps []float64, mu []float64, mid float64, pi []float64, choice []int) {
	type cand struct{ v, gpus float64 }
	var cs []cand
	price := func(t int, cutoff func(i int) float64) {
		cs = cs[:0]
		for i, j := range jobs {
			if !(j.R <= mid && mu[i] > mid) {
				continue
			}
			limit := cutoff(i)
			for _, sg := range j.segs {
				if sg.t == t {
					if v := min((mu[i]-mid)/sg.gpu, limit); v > 0 {
						cs = append(cs, cand{v, sg.ds * sg.gpu})
					}
				}
			}
		}
		slices.SortFunc(cs, func(a, b cand) int { return cmp.Compare(b.v, a.v) })
		pi[t] = 0
		used := 0.0
		for _, c := range cs {
			if used += c.gpus; used >= caps[t] {
				pi[t] = c.v
				break
			}
		}
	}
	none := func(int) float64 { return math.Inf(1) }
	if len(caps) == 1 {
		price(0, none)
		return
	}
	for i := range jobs {
		choice[i], _ = jobs[i].fastest()
	}
	for t := range caps {
		price(t, func(i int) float64 {
			if choice[i] == t {
				return math.Inf(1)
			}
			return 0
		})
	}
	for range 2 {
		for t := range caps {
			price(t, func(i int) float64 {
				return cutoffPrice(jobs[i].segs, mu[i]-mid, pi, t)
			})
		}
	}
}

// cutoffPrice is the price of type t up to which segs, at value v per
// unit of work, gain more on t than on any other type at prices pi.
func cutoffPrice(segs []fluidSeg, v float64, pi []float64, t int) float64 {
	other := 0.0
	for u := range pi {
		if u != t {
			other = max(other, typeValue(segs, v, pi[u], u))
		}
	}
	if other == 0 {
		return math.Inf(1)
	}
	// typeValue(p) on t falls from its value at 0 and is linear between
	// the prices v/γ_k (falling with k): find where it meets other.
	a, b, first := 0.0, 0.0, -1
	for k, g := range segs {
		if g.t == t {
			a += g.ds * v
			b += g.ds * g.gpu
			if first < 0 {
				first = k
			}
		}
	}
	if a <= other {
		return 0
	}
	// From p = 0 all of t's segments gain; segment k stops at v/γ_k,
	// the last (most GPUs per speed) first.
	for k := len(segs) - 1; k >= first; k-- {
		g := segs[k]
		if g.t != t {
			continue
		}
		stop := v / g.gpu
		if a-b*stop <= other {
			return (a - other) / b
		}
		a -= g.ds * v
		b -= g.ds * g.gpu
	}
	return math.Inf(1) // not reached: at the last stop t's value is 0
}

// typeValue is Σ_k Δs_k (v − γ_k p)^+ over the segments of type t.
func typeValue(segs []fluidSeg, v, p float64, t int) float64 {
	sum := 0.0
	for _, g := range segs {
		if g.t == t {
			sum += g.ds * max(v-g.gpu*p, 0)
		}
	}
	return sum
}

// fluidIntegral integrates a job's term on one slot with several types:
// ∫ max_t f_t(τ) dτ with f_t(τ) = Σ_k Δs_tk (m_tk − τ)^+, m_tk = μ −
// γ_tk π_t, and the work the maximiser does. Each f_t is linear between
// the points m_tk, so on every piece between those points and the
// crossings of two types' lines the maximum is one line, integrated
// exactly. It keeps its buffers between calls.
type fluidIntegral struct {
	cuts    []float64
	a, b, g []float64 // f_t(τ) = a[t] − b[t] τ on the current piece, using g[t] GPUs
	pieces  []float64
}

// best returns the integral and the work, and adds the GPU-time the
// maximiser uses on each type to used.
func (in *fluidIntegral) best(segs []fluidSeg, mu float64, pi []float64, from, to float64, used []float64) (val, work float64) {
	if !(to > from) {
		return 0, 0
	}
	in.cuts = append(in.cuts[:0], from, to)
	for _, g := range segs {
		if m := mu - g.gpu*pi[g.t]; m > from && m < to {
			in.cuts = append(in.cuts, m)
		}
	}
	slices.Sort(in.cuts)
	types := len(pi)
	in.a, in.b, in.g = resize(in.a, types), resize(in.b, types), resize(in.g, types)
	for c := 1; c < len(in.cuts); c++ {
		x0, x1 := in.cuts[c-1], in.cuts[c]
		if !(x1 > x0) {
			continue
		}
		clear(in.a)
		clear(in.b)
		clear(in.g)
		for _, g := range segs {
			if m := mu - g.gpu*pi[g.t]; m >= x1 {
				in.a[g.t] += g.ds * m
				in.b[g.t] += g.ds
				in.g[g.t] += g.ds * g.gpu
			}
		}
		in.pieces = append(in.pieces[:0], x0, x1)
		for t := range types {
			for u := t + 1; u < types; u++ {
				if db := in.b[t] - in.b[u]; db != 0 {
					if x := (in.a[t] - in.a[u]) / db; x > x0 && x < x1 {
						in.pieces = append(in.pieces, x)
					}
				}
			}
		}
		slices.Sort(in.pieces)
		for p := 1; p < len(in.pieces); p++ {
			y0, y1 := in.pieces[p-1], in.pieces[p]
			if !(y1 > y0) {
				continue
			}
			mid := (y0 + y1) / 2
			bt := 0
			for t := 1; t < types; t++ {
				if in.a[t]-in.b[t]*mid > in.a[bt]-in.b[bt]*mid {
					bt = t
				}
			}
			if in.b[bt] > 0 {
				val += in.a[bt]*(y1-y0) - in.b[bt]*(y1*y1-y0*y0)/2
				work += in.b[bt] * (y1 - y0)
				used[bt] += in.g[bt] * (y1 - y0)
			}
		}
	}
	return val, work
}
