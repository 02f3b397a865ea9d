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
// Per category (jobs alike, e.g. the same model), the fitted T1, s and c of
// finished jobs are averaged and start every new job of the category.
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
}

// Point is the mean time of a unit of work at N workers.
type Point struct {
	N       int
	Seconds float64
}

// Speedup is the fit's speedup curve: measured where the job was observed,
// and elsewhere the model's, scaled by how far the measurement at the
// nearest smaller observed count fell below the model (never raised), so a
// drop the model cannot shape (a job crossing a node boundary) carries to
// the larger counts.
func (f Fit) Speedup(n int) float64 {
	if n <= 0 {
		return 0
	}
	model := f.Shape.Speedup(n)
	if !f.Known() || len(f.Measured) == 0 {
		return model
	}
	i, exact := slices.BinarySearchFunc(f.Measured, n, func(p Point, n int) int { return p.N - n })
	if exact {
		return f.OneWorker / f.Measured[i].Seconds
	}
	if i == 0 {
		return model
	}
	p := f.Measured[i-1]
	ratio := f.OneWorker / p.Seconds / f.Shape.Speedup(p.N)
	return model * min(ratio, 1)
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
}

// history is a category's merged fits.
type history struct {
	oneWorker, serial, comm float64
	jobs                    int
}

// History is a category's history as it is saved: the mean fit of its
// completed jobs.
type History struct {
	OneWorker float64 `json:"oneWorkerSeconds"`
	Serial    float64 `json:"serial"`
	Comm      float64 `json:"comm"`
	Jobs      int     `json:"jobs"`
}

// Histories returns every category's history, to be saved.
func (e *Estimator) Histories() map[string]History {
	out := make(map[string]History, len(e.categories))
	for c, h := range e.categories {
		out[c] = History{OneWorker: h.oneWorker, Serial: h.serial, Comm: h.comm, Jobs: h.jobs}
	}
	return out
}

// SetHistories replaces the categories' histories with saved ones; entries
// that do not make sense (no jobs, a non-positive time, a shape outside the
// model's range) are dropped.
func (e *Estimator) SetHistories(hs map[string]History) {
	clear(e.categories)
	for c, h := range hs {
		if h.Jobs < 1 || !(h.OneWorker > 0) || math.IsInf(h.OneWorker, 0) || !(h.Serial >= 0 && h.Serial < 1) || !(h.Comm >= 0 && h.Comm <= 1) {
			continue
		}
		e.categories[c] = &history{oneWorker: h.OneWorker, serial: h.Serial, comm: h.Comm, jobs: h.Jobs}
	}
	for _, j := range e.jobs {
		j.stale = true
	}
}

// Estimator keeps observations per job and history per category.
type Estimator struct {
	jobs       map[string]*job
	categories map[string]*history
	// Default is the shape without history; the zero value means
	// DefaultShape.
	Default Shape
}

// New returns an empty estimator.
func New() *Estimator {
	return &Estimator{jobs: map[string]*job{}, categories: map[string]*history{}}
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
	if j.stale {
		j.fit = e.fit(j)
		j.stale = false
	}
	return j.fit
}

// prior is the category's history, or the default shape with T1 unknown.
func (e *Estimator) prior(category string) Fit {
	if h, ok := e.categories[category]; ok && h.jobs > 0 {
		return Fit{OneWorker: h.oneWorker, Shape: Shape{Serial: h.serial, Comm: h.comm}}
	}
	return Fit{Shape: e.defaultShape()}
}

// point is the mean time at one worker count.
type point struct {
	n       int
	seconds float64
	weight  float64
}

func (e *Estimator) fit(j *job) Fit {
	prior := e.prior(j.category)
	var pts []point
	for n, acc := range j.perCount {
		pts = append(pts, point{n: n, seconds: acc[0] / acc[1], weight: acc[1]})
	}
	slices.SortFunc(pts, func(a, b point) int { return a.n - b.n })
	measured := make([]Point, len(pts))
	for i, p := range pts {
		measured[i] = Point{N: p.n, Seconds: p.seconds}
	}
	switch len(pts) {
	case 0:
		return prior
	case 1:
		return Fit{OneWorker: oneWorker(pts, prior.Shape), Shape: prior.Shape, Counts: 1, Measured: measured}
	}
	best, bestErr := prior.Shape, math.Inf(1)
	comms := []float64{prior.Shape.Comm}
	if len(pts) >= 3 {
		comms = comms[:0]
		for c := 0.0; c <= 0.1+1e-9; c += 0.0025 {
			comms = append(comms, c)
		}
	}
	for _, c := range comms {
		for s := 0.0; s <= 0.95+1e-9; s += 0.005 {
			sh := Shape{Serial: s, Comm: c}
			t1 := oneWorker(pts, sh)
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
	return Fit{OneWorker: oneWorker(pts, best), Shape: best, Counts: len(pts), Measured: measured}
}

// oneWorker is the T1 that best fits the points under a shape, in the
// least-squares sense of relative errors.
func oneWorker(pts []point, sh Shape) float64 {
	var num, den float64
	for _, p := range pts {
		r := sh.factor(p.n) / p.seconds // predicted / observed, per unit T1
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
	f := e.fit(j)
	h := e.categories[j.category]
	if h == nil {
		h = &history{}
		e.categories[j.category] = h
	}
	k := float64(h.jobs)
	h.oneWorker = (h.oneWorker*k + f.OneWorker) / (k + 1)
	h.serial = (h.serial*k + f.Shape.Serial) / (k + 1)
	h.comm = (h.comm*k + f.Shape.Comm) / (k + 1)
	h.jobs++
}

// Forget drops a job without learning from it (deleted, failed).
func (e *Estimator) Forget(id string) { delete(e.jobs, id) }
