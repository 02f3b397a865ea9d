package estimator

import (
	"math"
)

// # Jobs that let Voda choose their batch size
//
// A job's goodput at n workers and global batch M is its statistical
// efficiency at M over its time per epoch there:
//
//	goodput(n, M) = E(M) / T(n, M)   (epochs at the initial batch M0 per second)
//
// E(M) = (B + M0)/(B + M) is the progress an epoch at M makes, in epochs
// at M0, for a gradient noise scale of B samples (McCandlish et al., "An
// Empirical Model of Large-Batch Training", 2018: a step at M makes
// (B/M0 + 1)/(B/M + 1) times the progress of a step at M0, and an epoch at
// M takes M0/M as many steps). B = tr(Σ)/|G|², the per-sample gradient
// variance over the squared gradient, is what the job's reports measure;
// without a report, B is taken to be 0 (E(M) = M0/M), so a job stays at
// M0 until it has measured its noise.
//
// T(n, M) scales the estimator's time per epoch at n workers, measured at
// M0, by what a larger batch saves: an epoch's per-sample share p does not
// change with the batch, its per-step share q (the optimiser's step, the
// gradients' all-reduce) is paid once per step, and an epoch at M takes
// M0/M as many steps:
//
//	T(n, M) = T(n, M0) · (p + q·M0/M) / (p + q)
//
// The shares are fixed (batchShares, PerStepShare), not the job's fit;
// they are the model until the job's category has measured enough steps
// to learn its own (StepModels, BatchRange.Time).
//
// A per-GPU batch above the job's PerGPUMax runs as gradient accumulation:
// as many micro-steps as needed, MaxAccumulation at most, each of the same
// per-sample cost; the all-reduce and the step stay once per batch.

// MaxAccumulation (v1alpha1.MaxAccumulation, which the specs are checked
// against) is the most micro-steps Voda splits one step's per-GPU
// batch into, when it does not fit in PerGPUMax.
const MaxAccumulation = 8

// BatchRange is what a job lets Voda choose from: global batch sizes from
// Initial (M0, the batch its work is counted at) to Max, with at most
// PerGPUMax samples per GPU and micro-step (0: no limit) and at least
// PerGPUMin per GPU (0: 1).
type BatchRange struct {
	Initial, Max, PerGPUMax, PerGPUMin int
	// Time, when set, replaces BatchTime as the batch model: T(n, M)/T(n,
	// M0) at n workers and a global batch of M samples. The controller
	// and the simulator set it to the job's category's learned step model
	// (StepModel.BatchModel) once there is one.
	Time func(n, batch int) float64
	// Steps, when set, is the time of a step at the initial batch on n
	// workers by the same learned step model (packed, as Time takes
	// them). It bounds the speedup where the job and its category were
	// not measured: never more than at the nearest smaller count measured
	// times Steps there over Steps at n (Fit.Bounded).
	Steps func(n int) float64
}

// TimeAt is the range's batch model at n workers and batch samples:
// Time, else BatchTime.
func (r BatchRange) TimeAt(n, batch int) float64 {
	if r.Time != nil {
		return r.Time(n, batch)
	}
	return BatchTime(n, r.Initial, batch)
}

// Batch is a batch size for one allocation: Global = Local × GPUs ×
// Accumulation samples per step.
type Batch struct {
	Global, Local, Accumulation int
	// Efficiency is E(Global): the epochs at the initial batch an epoch
	// makes (1 at the initial batch, less above it).
	Efficiency float64
}

// Efficiency is E(M) = (B + M0)/(B + M) for a noise scale of noise samples
// (negative: unknown, taken as 0).
func Efficiency(noise float64, initial, batch int) float64 {
	if batch <= 0 || initial <= 0 {
		return 0
	}
	b := max(noise, 0)
	return (b + float64(initial)) / (b + float64(batch))
}

// batchSteps is how finely Best searches: this many candidate batches per
// doubling, from the initial batch.
const batchSteps = 8

// split turns a target global batch on gpus GPUs into the batch the job
// runs: the fewest micro-steps that keep the per-GPU batch within
// perGPUMax, and the per-GPU batch nearest the target, at least perGPUMin,
// that keeps the global batch within hi. It returns false when even
// MaxAccumulation micro-steps do not hold it, or perGPUMin samples per GPU
// exceed hi.
func split(target, gpus, perGPUMax, perGPUMin, hi int) (Batch, bool) {
	acc := 1
	if perGPUMax > 0 {
		acc = max((target+gpus*perGPUMax-1)/(gpus*perGPUMax), 1)
		if acc > MaxAccumulation {
			return Batch{}, false
		}
	}
	least := max(perGPUMin, 1)
	local := max(int(math.Round(float64(target)/float64(gpus*acc))), least)
	if perGPUMax > 0 {
		local = min(local, perGPUMax)
	}
	if local*gpus*acc > hi {
		local = hi / (gpus * acc)
	}
	if local < least {
		return Batch{}, false
	}
	return Batch{Global: local * gpus * acc, Local: local, Accumulation: acc}, true
}

// BatchTime is T(n, M)/T(n, M0): how much of an epoch's time at n workers
// a batch of batch samples leaves, against the initial batch. Its shares
// are fixed (batchShares), not a job's fitted shape: epochs at one batch
// cannot tell a per-step cost from a per-sample one, and times brought
// back to the initial batch by a fitted shape feed that fit (in the
// simulator a job's fitted serial fraction ran up to 0.95 so).
func BatchTime(n, initial, batch int) float64 {
	if n < 1 || initial <= 0 || batch <= 0 {
		return 1
	}
	perSample, perStep := batchShares(n)
	return (perSample + perStep*float64(initial)/float64(batch)) / (perSample + perStep)
}

// batchShares are the per-sample and per-step shares of an epoch's time at
// n workers (BatchTime), in the default shape's terms scaled down by
// PerStepShare: per step k·(s + c·(n−1)), per sample (1 − k·s)/n.
func batchShares(n int) (perSample, perStep float64) {
	s, c, k := DefaultShape.Serial, DefaultShape.Comm, PerStepShare
	return (1 - k*s) / float64(n), k * (s + c*float64(n-1))
}

// PerStepShare is the part of the default shape's serial and
// communication terms that a larger batch pays less often. Chosen on
// workloads 1–4 of the Pollux traces at the four loads, HeSRPT adapting
// with estimated information, among 1, ½ and ¼ of both terms and all or ½
// of the communication term alone: ¼ gave a mean JCT 1.040 times Pollux's
// against 1.073 with all of them (docs/evaluation.md). Most of an epoch
// is per-sample work; an estimator that credits larger batches with more
// picks them where they do not pay.
const PerStepShare = 0.25

// Best returns the batch with the most goodput at n workers of gpus GPUs
// each, for a noise scale of noise samples (negative: unknown), and that
// goodput relative to the fit's at n workers and the initial batch
// (Speedup(n) times it is the speedup at n by goodput). ok is false when
// no batch of the range can be split over the workers' GPUs.
//
// The candidates are the range's ends, the smallest and largest batches
// the GPUs can split, and a grid of batchSteps per doubling from the
// initial batch, of which only the points around the optimum are tried:
// the goodput (B + M0)/(B + M) / ((p + q·M0/M)/(p + q)), with p and q the
// per-sample and per-step shares of BatchTime, has one maximum, at M =
// √(B·q·M0/p). TestBestMatchesTheGrid checks it against the whole grid.
func (f Fit) Best(r BatchRange, n, gpus int, noise float64) (b Batch, rel float64, ok bool) {
	total := n * gpus
	if total < 1 || r.Initial < 1 {
		return Batch{}, 0, false
	}
	lo := r.Initial
	hi := max(r.Max, lo)
	try := func(target int) {
		c, fits := split(target, total, r.PerGPUMax, r.PerGPUMin, hi)
		if !fits {
			return
		}
		c.Efficiency = Efficiency(noise, r.Initial, c.Global)
		g := c.Efficiency / r.TimeAt(n, c.Global)
		if !ok || g > rel || (g == rel && c.Global < b.Global) {
			b, rel, ok = c, g, true
		}
	}
	least, most := max(lo, total*max(r.PerGPUMin, 1)), hi
	if r.PerGPUMax > 0 {
		most = min(most, total*r.PerGPUMax*MaxAccumulation)
	}
	if most < lo {
		return Batch{}, 0, false // the GPUs cannot hold the initial batch
	}
	try(lo)
	try(least)
	try(most)
	try(hi)
	p, q := batchShares(n)
	opt := math.Sqrt(max(noise, 0) * q * float64(lo) / p)
	opt = min(max(opt, float64(least)), float64(most))
	// The grid's points around the optimum: rounding to whole samples per
	// GPU and micro-steps moves a point off its target, most where the
	// per-GPU batch is small, so a few on either side.
	k := math.Floor(batchSteps * math.Log2(opt/float64(lo)))
	from, to := max(k-2, 1), k+3
	if r.Time != nil {
		// Another model's optimum is not BatchTime's: the whole grid.
		from, to = 1, math.Ceil(batchSteps*math.Log2(float64(hi)/float64(lo)))
	}
	for i := from; i <= to; i++ {
		if t := int(math.Round(float64(lo) * math.Exp2(i/batchSteps))); t <= hi {
			try(t)
		}
	}
	return b, rel, ok
}

// Adaptive is what the policies see of a job that lets Voda choose its
// batch size: at every worker count, the best batch there and the goodput
// it gives.
type Adaptive struct {
	fit     Fit
	rng     BatchRange
	noise   float64
	batches []Batch   // by workers; Global 0 where none splits
	rel     []float64 // goodput relative to the fit's at the initial batch
	one     float64   // goodput at the smallest count that runs, relative to the fit at one worker
	speedup []float64 // Speedup, by workers
}

// Adapt computes a job's best batch at every count from 1 to maxWorkers
// workers of gpus GPUs each, for a noise scale of noise samples
// (negative: unknown).
func (f Fit) Adapt(r BatchRange, gpus, maxWorkers int, noise float64) Adaptive {
	a := Adaptive{fit: f, rng: r, noise: noise, batches: make([]Batch, maxWorkers+1), rel: make([]float64, maxWorkers+1)}
	for n := 1; n <= maxWorkers; n++ {
		b, rel, ok := f.Best(r, n, gpus, noise)
		if !ok {
			continue
		}
		a.batches[n], a.rel[n] = b, rel
		if a.one == 0 {
			a.one = rel * f.Bounded(n, r.Steps) / f.Bounded(1, r.Steps)
		}
	}
	a.speedup = make([]float64, maxWorkers+1)
	if a.one > 0 {
		for n := 1; n <= maxWorkers; n++ {
			a.speedup[n] = f.Bounded(n, r.Steps) * a.rel[n] / a.one
		}
	}
	return a
}

// Batch is the best batch at n workers; Global is 0 where none splits.
func (a Adaptive) Batch(n int) Batch {
	if n < 1 || n >= len(a.batches) {
		return Batch{}
	}
	return a.batches[n]
}

// Speedup is the goodput at n workers over the goodput at one (at its
// best batch there); 0 where no batch of the range splits.
func (a Adaptive) Speedup(n int) float64 {
	if n < 1 || n >= len(a.speedup) {
		return 0
	}
	return a.speedup[n]
}

// Remaining is the time at one worker (at its best batch) of units epochs
// at the initial batch; negative when unknown.
func (a Adaptive) Remaining(units float64) float64 {
	if !a.fit.Known() || !(a.one > 0) {
		return -1
	}
	return units * a.fit.OneWorker / a.one
}

// Fit is the fit the goodputs were computed from.
func (a Adaptive) Fit() Fit { return a.fit }

// Relative is the goodput at n workers of a global batch of batch samples
// over that of the best batch there (1 for the best; 0 where none splits).
func (a Adaptive) Relative(n, batch int) float64 {
	if n < 1 || n >= len(a.rel) || !(a.rel[n] > 0) || batch < 1 {
		return 0
	}
	return Efficiency(a.noise, a.rng.Initial, batch) / a.rng.TimeAt(n, batch) / a.rel[n]
}

// RetuneSaving is how many seconds a job at n workers running a global
// batch of batch samples would save by moving to the best batch there, for
// left seconds of work at the best batch: left/Relative − left; 0 when it
// runs the best already or nothing is known.
func (a Adaptive) RetuneSaving(n, batch int, left float64) float64 {
	best := a.Batch(n)
	if best.Global == 0 || best.Global == batch || !(left > 0) {
		return 0
	}
	r := a.Relative(n, batch)
	if !(r > 0 && r < 1) {
		return 0
	}
	return left/r - left
}
