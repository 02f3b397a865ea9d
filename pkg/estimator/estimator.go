// Package estimator turns what running jobs report — how long a unit of
// work (a step, an epoch) takes at the worker count they ran with — into
// what the policies need: each job's time for its remaining work at one GPU
// and its speedup curve S(n).
//
// The model: work per unit at n workers takes
//
//	T(n) = T1 · f(n),   f(n) = s + (1−s)/n + c·(n−1)
//
// with T1 the time at one worker, s the serial fraction (Amdahl) and c the
// communication cost each extra worker adds; S(n) = 1/f(n). Nothing assumes
// the job ever ran on one worker: T1 follows from whatever counts were
// observed. With observations at one count, the curve's shape (s, c) comes
// from the job's category, else from a conservative default, and only T1
// is fitted; at two counts, s is fitted too; at three or more, s and c.
//
// Per category (jobs alike, e.g. the same model and batch size), the
// fitted T1, s and c of finished jobs are averaged and start every new job
// of the category, and so is each measured T(n)/T1, the category's curve:
// a smooth model cannot follow a curve that drops where a job starts to
// span nodes, and a job of a category that ran at a size before need not
// find the drop again. T1 is anchored on what was measured: the time at
// one worker when the job ran there, else the category's curve at the
// counts it ran at, else the model's fit (never below the time at the
// smallest count n times n^ExploreExponent); a job of the last kind starts
// its category's curve when it has none, and adds nothing to one, and the
// first job of the category measured at one worker rescales a curve so
// started.
//
// The original Voda's estimator divided by the time of a one-worker run
// that may never have happened, filled unobserved counts with linear
// speedup, and never updated a category's history; this one does none of
// that.
//
// Import rule: pkg/algorithm (for Speedup) and the standard library. Pure:
// no clock, no goroutines; not safe for concurrent use.
package estimator

import (
	"maps"
	"math"
	"slices"
)

// Shape is a speedup curve's shape: f(n) = Serial + (1−Serial)/n +
// Comm·(n−1).
type Shape struct {
	Serial, Comm float64
}

// DefaultShape is the shape used when nothing better is known: 5 % serial
// work and a 0.5 % cost per extra worker, so S(8) ≈ 5.6 — below linear, as
// most data-parallel jobs are.
var DefaultShape = Shape{Serial: 0.05, Comm: 0.005}

// factor is f(n).
func (s Shape) factor(n int) float64 {
	if n < 1 {
		n = 1
	}
	return s.Serial + (1-s.Serial)/float64(n) + s.Comm*float64(n-1)
}

// Speedup is S(n) = f(1)/f(n) = 1/f(n).
func (s Shape) Speedup(n int) float64 {
	if n <= 0 {
		return 0
	}
	return 1 / s.factor(n)
}

// Observation is one report: at Workers workers, a unit of work took
// Seconds. Weight is how many units the report covers (0 counts as 1).
type Observation struct {
	Workers int
	Seconds float64
	Weight  float64
}

// Fit is what the estimator believes about a job.
type Fit struct {
	// OneWorker is T1, the seconds per unit of work at one worker; 0 when
	// unknown (no observation and no history).
	OneWorker float64
	Shape     Shape
	// Counts is how many distinct worker counts were observed.
	Counts int
	// Measured are the mean times per unit at each observed worker count,
	// by count, ascending.
	Measured []Point
	// Curve is the category's mean T(n)/T1 at each count its finished
	// jobs ran at, by count, ascending.
	Curve []CurvePoint
}

// Point is the mean time of a unit of work at N workers.
type Point struct {
	N       int
	Seconds float64
}

// Speedup is the fit's speedup curve: measured where the job was observed,
// else the category's curve where its jobs were, and elsewhere the
// model's, scaled by how far the known speedup at the nearest smaller
// count fell below the model (never raised), so a drop the model cannot
// shape (a job crossing a node boundary) carries to the larger counts.
// Above the largest count known, up to twice it, the curve is at least
// the known speedup times (n/m)^ExploreExponent: a job is expected to keep
// most of the efficiency it showed one doubling further, so it is tried
// there and measured, rather than held back for good by a model fitted to
// few counts.
func (f Fit) Speedup(n int) float64 {
	if n <= 0 {
		return 0
	}
	m, s := f.known(n)
	if m == n {
		return s
	}
	model := f.Shape.Speedup(n)
	if m == 0 {
		return model
	}
	v := model * min(s/f.Shape.Speedup(m), 1)
	if m == f.largestKnown() {
		v = max(v, s*math.Pow(float64(min(n, 2*m))/float64(m), ExploreExponent))
	}
	return v
}

// Bounded is Speedup, at most, where neither the job nor its category
// was measured, the speedup at the nearest smaller count m measured times
// steps(m)/steps(n): a learned model of a step's time (StepModel, at the
// job's batch) says how much faster n workers can be than m, and it knows
// what the fit's shape cannot, such as a job slowing down where it first
// spans two nodes. steps nil, or not positive and finite at m or n,
// bounds nothing.
func (f Fit) Bounded(n int, steps func(n int) float64) float64 {
	v := f.Speedup(n)
	if steps == nil || n <= 0 {
		return v
	}
	m, s := f.known(n)
	if m == 0 || m == n {
		return v
	}
	at, to := steps(m), steps(n)
	if !(at > 0) || !(to > 0) || math.IsInf(at, 0) || math.IsInf(to, 0) {
		return v
	}
	return min(v, s*at/to)
}

// ExploreExponent is how much of its known efficiency a job is expected to
// keep above the largest count it or its category was measured at: S(n)
// ≥ S(m)·(n/m)^0.8 up to n = 2m. On the Pollux workloads at 1.0× load
// with estimated information, HeSRPT's mean JCT fell 0.7% (workloads 1–4)
// and 1.5% (5–8) against none (docs/estimator.md). A T1 the model guesses
// rests on the same expectation from one worker up to the smallest count
// measured (anchor).
const ExploreExponent = 0.8

// largestKnown is the largest count at which the job or its category
// measured the speedup; 0 when there is none.
func (f Fit) largestKnown() int {
	top := 0
	if f.Known() && len(f.Measured) > 0 {
		top = f.Measured[len(f.Measured)-1].N
	}
	if len(f.Curve) > 0 {
		top = max(top, f.Curve[len(f.Curve)-1].Workers)
	}
	return top
}

// known returns the largest count m ≤ n at which the job or its category
// measured the speedup, and the speedup there (the job's own where both
// did); m is 0 when there is none.
func (f Fit) known(n int) (m int, s float64) {
	if f.Known() {
		i, ok := slices.BinarySearchFunc(f.Measured, n, func(p Point, n int) int { return p.N - n })
		if ok {
			i++
		}
		if i > 0 {
			p := f.Measured[i-1]
			m, s = p.N, f.OneWorker/p.Seconds
		}
	}
	i, ok := slices.BinarySearchFunc(f.Curve, n, byWorkers)
	if ok {
		i++
	}
	if i > 0 && f.Curve[i-1].Workers > m {
		m, s = f.Curve[i-1].Workers, 1/f.Curve[i-1].Factor
	}
	return m, s
}

// KnownAt reports whether the speedup at n workers was measured, by the
// job or its category, rather than extrapolated.
func (f Fit) KnownAt(n int) bool {
	m, _ := f.known(n)
	return m == n && n > 0
}

// Known reports whether the fit can estimate times.
func (f Fit) Known() bool { return f.OneWorker > 0 }

// Seconds is the time of one unit of work at n workers.
func (f Fit) Seconds(n int) float64 { return f.OneWorker * f.Shape.factor(n) }

// Remaining is the time of units of work at one worker; negative when
// unknown.
func (f Fit) Remaining(units float64) float64 {
	if !f.Known() {
		return -1
	}
	return units * f.OneWorker
}

// job holds one job's observations, merged per worker count.
type job struct {
	category string
	// perCount[n] = (weighted sum of seconds, total weight)
	perCount map[int][2]float64
	fit      Fit
	stale    bool
	// seen is the category's version the fit was made with.
	seen int
}

// history is a category's merged fits.
type history struct {
	oneWorker, serial, comm float64
	jobs                    int
	// curve[n] = (sum of T(n)/T1, jobs that ran at n)
	curve map[int][2]float64
	// guessed is set while the curve's scale rests on a T1 the model
	// guessed (its first job never ran at one worker).
	guessed bool
}

// History is a category's history as it is saved: the mean fit of its
// completed jobs.
type History struct {
	OneWorker float64 `json:"oneWorkerSeconds"`
	Serial    float64 `json:"serial"`
	Comm      float64 `json:"comm"`
	Jobs      int     `json:"jobs"`
	// Curve is the mean T(n)/T1 at each count the jobs ran at.
	Curve []CurvePoint `json:"curve,omitempty"`
	// Guessed is set while the curve's T1 is the model's guess: no job
	// of the category has yet finished with a time at one worker.
	Guessed bool `json:"curveGuessed,omitempty"`
}

// CurvePoint is a category's mean T(n)/T1 at Workers workers, over Jobs
// jobs.
type CurvePoint struct {
	Workers int     `json:"workers"`
	Factor  float64 `json:"factor"`
	Jobs    int     `json:"jobs"`
}

// byWorkers orders curve points by worker count, for binary search.
func byWorkers(p CurvePoint, n int) int { return p.Workers - n }

// Histories returns every category's history, to be saved.
func (e *Estimator) Histories() map[string]History {
	out := make(map[string]History, len(e.categories))
	for c, h := range e.categories {
		out[c] = History{OneWorker: h.oneWorker, Serial: h.serial, Comm: h.comm, Jobs: h.jobs, Curve: h.points(), Guessed: h.guessed}
	}
	return out
}

// points is the category's curve by count, ascending.
func (h *history) points() []CurvePoint {
	var pts []CurvePoint
	for _, n := range slices.Sorted(maps.Keys(h.curve)) {
		acc := h.curve[n]
		pts = append(pts, CurvePoint{Workers: n, Factor: acc[0] / acc[1], Jobs: int(acc[1])})
	}
	return pts
}

// SetHistories replaces the categories' histories with saved ones; entries
// that do not make sense (no jobs, a non-positive time, a shape outside the
// model's range) are dropped, and so are curve points that do not (a
// count below 1, no jobs, a factor that is not positive and finite).
func (e *Estimator) SetHistories(hs map[string]History) {
	clear(e.categories)
	for c, h := range hs {
		if h.Jobs < 1 || !(h.OneWorker > 0) || math.IsInf(h.OneWorker, 0) || !(h.Serial >= 0 && h.Serial < 1) || !(h.Comm >= 0 && h.Comm <= 1) {
			continue
		}
		kept := &history{oneWorker: h.OneWorker, serial: h.Serial, comm: h.Comm, jobs: h.Jobs, curve: map[int][2]float64{}, guessed: h.Guessed}
		for _, p := range h.Curve {
			if p.Workers >= 1 && p.Jobs >= 1 && p.Factor > 0 && !math.IsInf(p.Factor, 0) {
				kept.curve[p.Workers] = [2]float64{p.Factor * float64(p.Jobs), float64(p.Jobs)}
			}
		}
		e.categories[c] = kept
	}
	for _, j := range e.jobs {
		j.stale = true
	}
}

// Estimator keeps observations per job and history per category.
type Estimator struct {
	jobs       map[string]*job
	categories map[string]*history
	// versions counts the changes to each category's history, so that
	// fits made before one are made again.
	versions map[string]int
	// Default is the shape without history; the zero value means
	// DefaultShape.
	Default Shape
}

// New returns an empty estimator.
func New() *Estimator {
	return &Estimator{jobs: map[string]*job{}, categories: map[string]*history{}, versions: map[string]int{}}
}

func (e *Estimator) defaultShape() Shape {
	if e.Default == (Shape{}) {
		return DefaultShape
	}
	return e.Default
}

func (e *Estimator) job(id, category string) *job {
	j, ok := e.jobs[id]
	if !ok {
		j = &job{category: category, perCount: map[int][2]float64{}, stale: true}
		e.jobs[id] = j
	}
	return j
}

// Observe records a report of a job of a category. Reports with no
// workers or no positive, finite time are ignored.
func (e *Estimator) Observe(id, category string, o Observation) {
	if o.Workers < 1 || !(o.Seconds > 0) || math.IsInf(o.Seconds, 0) {
		return
	}
	w := o.Weight
	if !(w > 0) || math.IsInf(w, 0) {
		w = 1
	}
	j := e.job(id, category)
	acc := j.perCount[o.Workers]
	j.perCount[o.Workers] = [2]float64{acc[0] + o.Seconds*w, acc[1] + w}
	j.stale = true
}

// Replace sets a job's observations to obs, dropping what it had: for a
// caller that keeps the sums itself (the controller keeps them in the
// TrainingJob status, so that they survive restarts).
func (e *Estimator) Replace(id, category string, obs []Observation) {
	j := e.job(id, category)
	j.category = category
	clear(j.perCount)
	j.stale = true
	for _, o := range obs {
		e.Observe(id, category, o)
	}
}

// Estimate returns the current fit of a job: from its observations, its
// category's history and the default, in that order.
func (e *Estimator) Estimate(id, category string) Fit {
	j := e.job(id, category)
	if v := e.versions[j.category]; j.stale || j.seen != v {
		j.fit, _ = e.fit(j)
		j.stale, j.seen = false, v
	}
	return j.fit
}

// prior is the category's history, or the default shape with T1 unknown.
func (e *Estimator) prior(category string) Fit {
	h, ok := e.categories[category]
	if !ok || h.jobs == 0 {
		return Fit{Shape: e.defaultShape()}
	}
	return Fit{OneWorker: h.oneWorker, Shape: Shape{Serial: h.serial, Comm: h.comm}, Curve: h.points()}
}

// point is the mean time at one worker count.
type point struct {
	n       int
	seconds float64
	weight  float64
}

// fit is the job's fit, and whether its T1 rests on measurements (at one
// worker, or on the category's curve) rather than on the model alone.
func (e *Estimator) fit(j *job) (Fit, bool) {
	prior := e.prior(j.category)
	var pts []point
	for n, acc := range j.perCount {
		pts = append(pts, point{n: n, seconds: acc[0] / acc[1], weight: acc[1]})
	}
	if len(pts) == 0 {
		return prior, false
	}
	slices.SortFunc(pts, func(a, b point) int { return a.n - b.n })
	measured := make([]Point, len(pts))
	for i, p := range pts {
		measured[i] = Point{N: p.n, Seconds: p.seconds}
	}
	shape := prior.Shape
	if len(pts) >= 2 {
		shape = fitShape(pts, prior.Shape)
	}
	t1, anchored := anchor(pts, shape, prior.Curve)
	return Fit{OneWorker: t1, Shape: shape, Counts: len(pts), Measured: measured, Curve: prior.Curve}, anchored
}

// fitShape is the shape that best fits two or more points: at two counts
// the serial fraction with the prior's communication cost, or, when that
// misses them by more than twoCountTolerance, the best fit over every
// lower cost (ties to the higher cost); both at three or more.
func fitShape(pts []point, prior Shape) Shape {
	if len(pts) == 2 {
		best, err := searchShape(pts, []float64{prior.Comm})
		if err <= twoCountTolerance*twoCountTolerance*(pts[0].weight+pts[1].weight) {
			return best
		}
		// The prior's communication cost cannot follow the two counts: the
		// job still speeds up where the prior's curve has turned down (a
		// job 1.5 times as fast on 22 workers as on 11, against a prior
		// whose best count is 14). Kept, it drove the serial fraction to
		// its limit, a fit in which the job ran no faster on 11 workers
		// than on one. The cost goes down to what fits the two counts.
		var comms []float64
		for c := prior.Comm; c > 0; c -= 0.00025 {
			comms = append(comms, c)
		}
		best, _ = searchShape(pts, append(comms, 0))
		return best
	}
	var comms []float64
	for c := 0.0; c <= 0.1+1e-9; c += 0.0025 {
		comms = append(comms, c)
	}
	best, _ := searchShape(pts, comms)
	return best
}

// twoCountTolerance is the relative error within which the prior's
// communication cost is kept for a job measured at two counts.
const twoCountTolerance = 0.02

// searchShape is the shape, over the given communication costs and every
// serial fraction, that fits the points best, and its summed weighted
// squared relative error; ties go to the cost listed first.
func searchShape(pts []point, comms []float64) (Shape, float64) {
	best, bestErr := Shape{}, math.Inf(1)
	for _, c := range comms {
		for s := 0.0; s <= 0.95+1e-9; s += 0.005 {
			sh := Shape{Serial: s, Comm: c}
			t1 := oneWorker(pts, sh.factor)
			var err float64
			for _, p := range pts {
				// Relative error, so that slow and fast counts weigh alike.
				d := (t1*sh.factor(p.n) - p.seconds) / p.seconds
				err += p.weight * d * d
			}
			if err < bestErr-1e-12 {
				best, bestErr = sh, err
			}
		}
	}
	return best, bestErr
}

// anchor is T1 from the points: the time measured at one worker if there
// is one, else the best fit to the category's curve at the counts it
// knows, else to the shape; and whether it was one of the first two. A
// T1 fitted to the shape is at least the time at the smallest count n
// times n^ExploreExponent: points measured where a curve is flat (a job
// run only at 14, 28 and 40 workers) fit a shape with nearly all work
// serial and a T1 close to the time at 14 workers, a speedup of 1 there;
// the floor assumes the job kept, from one worker to n, the efficiency
// it is expected to keep one doubling above what was measured.
func anchor(pts []point, shape Shape, curve []CurvePoint) (float64, bool) {
	if pts[0].n == 1 {
		return pts[0].seconds, true
	}
	var onCurve []point
	for _, p := range pts {
		if _, ok := slices.BinarySearchFunc(curve, p.n, byWorkers); ok {
			onCurve = append(onCurve, p)
		}
	}
	if len(onCurve) > 0 {
		return oneWorker(onCurve, func(n int) float64 {
			i, _ := slices.BinarySearchFunc(curve, n, byWorkers)
			return curve[i].Factor
		}), true
	}
	t1 := oneWorker(pts, shape.factor)
	return max(t1, pts[0].seconds*math.Pow(float64(pts[0].n), ExploreExponent)), false
}

// oneWorker is the T1 that best fits the points when T(n) = T1·factor(n),
// in the least-squares sense of relative errors.
func oneWorker(pts []point, factor func(int) float64) float64 {
	var num, den float64
	for _, p := range pts {
		r := factor(p.n) / p.seconds // predicted / observed, per unit T1
		num += p.weight * r
		den += p.weight * r * r
	}
	if den == 0 {
		return 0
	}
	return num / den
}

// Finish merges a finished job's fit into its category's history and
// forgets the job.
func (e *Estimator) Finish(id string) {
	j, ok := e.jobs[id]
	if !ok {
		return
	}
	delete(e.jobs, id)
	if len(j.perCount) == 0 {
		return
	}
	f, anchored := e.fit(j)
	h := e.categories[j.category]
	if h == nil {
		h = &history{}
		e.categories[j.category] = h
	}
	if h.guessed && len(f.Measured) > 0 && f.Measured[0].N == 1 {
		h.rescale(f)
	}
	k := float64(h.jobs)
	h.oneWorker = (h.oneWorker*k + f.OneWorker) / (k + 1)
	h.serial = (h.serial*k + f.Shape.Serial) / (k + 1)
	h.comm = (h.comm*k + f.Shape.Comm) / (k + 1)
	h.jobs++
	if h.curve == nil {
		h.curve = map[int][2]float64{}
	}
	// A job whose T1 the model guessed starts the curve only when the
	// category has none: its times are exact relative to one another and
	// the model's error in T1 then scales the whole category alike (later
	// jobs anchor on the curve, remaining times and speedups all off by
	// one factor); added to a curve, it would bend it.
	if anchored || len(h.curve) == 0 {
		if len(h.curve) == 0 {
			h.guessed = !anchored
		}
		for _, p := range f.Measured {
			acc := h.curve[p.N]
			h.curve[p.N] = [2]float64{acc[0] + p.Seconds/f.OneWorker, acc[1] + 1}
		}
	}
	e.versions[j.category]++
}

// rescale puts a curve whose scale was guessed on the scale of f, a fit
// whose T1 was measured at one worker: every factor and the mean T1 move
// by the ratio of f's factors to the curve's at the counts both have
// (geometric mean), or, with none in common, by the ratio of the two T1s.
// Until then every job of the category anchored on the guess, and their
// remaining times and speedups were all off by the guess's error.
func (h *history) rescale(f Fit) {
	var logs float64
	common := 0
	for _, p := range f.Measured {
		if acc, ok := h.curve[p.N]; ok {
			logs += math.Log((p.Seconds / f.OneWorker) / (acc[0] / acc[1]))
			common++
		}
	}
	q := h.oneWorker / f.OneWorker
	if common > 0 {
		q = math.Exp(logs / float64(common))
	}
	if !(q > 0) || math.IsInf(q, 0) {
		return
	}
	for n, acc := range h.curve {
		h.curve[n] = [2]float64{acc[0] * q, acc[1]}
	}
	h.oneWorker /= q
	h.guessed = false
}

// Forget drops a job without learning from it (deleted, failed).
func (e *Estimator) Forget(id string) { delete(e.jobs, id) }
