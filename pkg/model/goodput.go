package model

import (
	"math"
	"slices"
)

// # Goodput
//
// A job that lets the scheduler choose its batch size trades throughput
// for statistical efficiency. Its goodput on a placement at global batch M
// in epoch e is
//
//	goodput_e(M) = gain_e(M) / StepSeconds(placement, M)
//
// progress, in steps at the smallest traced batch M0, per second: the
// throughput (steps per second, with gradient accumulation where the
// per-GPU batch does not fit) times the statistical efficiency of a step at
// M, gain_e(M) = (var + sqr) / (var/(M/M0) + sqr). That efficiency is the
// gradient noise scale model of McCandlish et al., "An Empirical Model of
// Large-Batch Training" (2018): a batch much smaller than the noise scale
// var/sqr makes almost M/M0 times the progress of M0, one much larger only
// about as much as a step at the noise scale; Pollux (Qiao et al., OSDI'21,
// §3.1) calls the ratio of progress to that of M0 steps the statistical
// efficiency and schedules by goodput. The noise scale grows as training
// goes on, so larger batches pay off later. The statistics are those of the
// validation traces (grad_sqr, grad_var per epoch), interpolated in the
// batch as Steps interpolates them.

// statWork is a work model that knows the gradient statistics epoch by
// epoch, so that a job may change its batch as it goes.
type statWork interface {
	workModel
	total() float64
	epochOf(progress float64) (e int, end float64)
	gainAt(e int, batch float64) float64
	// noiseAt is the noise scale var/sqr, in units of the smallest
	// traced batch, that gainAt uses at batch in epoch e.
	noiseAt(e int, batch float64) float64
}

// maxNoise bounds a noise scale (in batches M0) where the squared
// gradient vanishes.
const maxNoise = 1e9

func (w *exactWork) noiseAt(e int, batch float64) float64 {
	sqr, vr := w.statsAt(e, batch)
	if !(sqr > 0) {
		return maxNoise
	}
	return min(max(vr/sqr, 0), maxNoise)
}

func (w *fittedWork) noiseAt(e int, batch float64) float64 {
	return min(w.phiAt(e, batch), maxNoise)
}

// NoiseScale returns the gradient noise scale, in samples, a job at global
// batch batch measures in epoch e: the B with Efficiency(e, batch) = (B/M0
// + 1)/(B/batch + 1), M0 = InitBatch (McCandlish et al.); 0 for a model
// that is not Adaptive.
func (m *Model) NoiseScale(e, batch int) float64 {
	if w, ok := m.work.(statWork); ok && batch >= 1 {
		return w.noiseAt(e, float64(batch)) * float64(m.Batches[0])
	}
	return 0
}

// MinLocal returns the smallest per-GPU batch the model's throughput is
// measured at (MinLocalBatch).
func (m *Model) MinLocal() int { return m.MinLocalBatch }

// MaxLocal returns the largest per-GPU batch the model runs without
// accumulating gradients (MaxLocalBatch).
func (m *Model) MaxLocal() int { return m.MaxLocalBatch }

func (w *exactWork) total() float64 { return w.cum[len(w.cum)-1] }

// epochOf returns the epoch that progress falls in and the progress at
// which it ends; past the end it is the last epoch.
func (w *exactWork) epochOf(progress float64) (int, float64) {
	e, found := slices.BinarySearch(w.cum, progress)
	if found {
		e++ // an epoch ends exactly here: the next one starts
	}
	e = min(e, len(w.cum)-1)
	return e, w.cum[e]
}

func (w *exactWork) gainAt(e int, batch float64) float64 {
	sqr, vr := w.statsAt(e, batch)
	return gain(sqr, vr, batch/w.m0)
}

// statsAt is grad_sqr and grad_var in epoch e, interpolated to batch.
func (w *exactWork) statsAt(e int, batch float64) (sqr, vr float64) {
	e = min(max(e, 0), len(w.dTarget)-1)
	i, j, t := bracket(w.batches, batch)
	return lerp(w.sqr[i][e], w.sqr[j][e], t), lerp(w.vr[i][e], w.vr[j][e], t)
}

// Adaptive reports whether the model knows its statistical efficiency
// epoch by epoch (measured profiles do; the built-in catalog does not), so
// that its jobs may let the scheduler choose their batch size.
func (m *Model) Adaptive() bool {
	_, ok := m.work.(statWork)
	return ok
}

// MaxBatch returns the largest traced global batch: the most a job that
// tunes its batch may use.
func (m *Model) MaxBatch() int { return m.Batches[len(m.Batches)-1] }

// Work returns the statistical progress that finishes training, in steps
// at InitBatch; 0 for a model that is not Adaptive.
func (m *Model) Work() float64 {
	if w, ok := m.work.(statWork); ok {
		return w.total()
	}
	return 0
}

// Epoch returns the epoch a job is in after progress steps at InitBatch
// (counting from 0; past the end, the last) and the progress at which that
// epoch ends. It returns (0, +Inf) for a model that is not Adaptive.
func (m *Model) Epoch(progress float64) (e int, end float64) {
	if w, ok := m.work.(statWork); ok {
		return w.epochOf(progress)
	}
	return 0, math.Inf(1)
}

// Efficiency returns the statistical efficiency of a step at global batch
// batch in epoch e: the progress it makes, in steps at InitBatch (1 at
// InitBatch; between 1 and batch/InitBatch above it). It is 1 for a model
// that is not Adaptive.
func (m *Model) Efficiency(e, batch int) float64 {
	if w, ok := m.work.(statWork); ok && batch >= 1 {
		return w.gainAt(e, float64(batch))
	}
	return 1
}

// Goodput returns the progress per second, in steps at InitBatch, of a job
// at global batch batch on a placement (gpusPerNode as for StepSeconds) in
// epoch e; 0 where it cannot run.
func (m *Model) Goodput(gpusPerNode []int, e, batch int) float64 {
	t := m.StepSeconds(gpusPerNode, batch)
	if !(t > 0) || math.IsInf(t, 1) {
		return 0
	}
	return m.Efficiency(e, batch) / t
}

// batchSteps is how finely BestBatch searches: this many candidate batches
// per doubling.
const batchSteps = 8

// BestBatch returns the global batch between lo and hi with the most
// goodput on a placement in epoch e, and that goodput. Every GPU gets at
// least MinLocalBatch, so a placement of n GPUs needs a batch of at least
// n×MinLocalBatch; where even hi is too small it returns (0, 0). The
// candidates are lo, hi, n×MinLocalBatch when it lies between them, and a
// geometric grid from lo of batchSteps per doubling, the same for every
// placement (so that StepSeconds' cache serves them).
func (m *Model) BestBatch(gpusPerNode []int, e, lo, hi int) (batch int, goodput float64) {
	n := 0
	for _, g := range gpusPerNode {
		n += max(g, 0)
	}
	lo = max(lo, 1)
	least := max(lo, n*m.MinLocalBatch)
	if n == 0 || least > hi {
		return 0, 0
	}
	try := func(b int) {
		if b < least || b > hi {
			return
		}
		if g := m.Goodput(gpusPerNode, e, b); g > goodput || (g == goodput && b < batch) {
			batch, goodput = b, g
		}
	}
	try(least)
	try(hi)
	for i := 1; ; i++ {
		b := int(math.Round(float64(lo) * math.Exp2(float64(i)/batchSteps)))
		if b > hi {
			break
		}
		try(b)
	}
	return batch, goodput
}

// noiseStretches is how many stretches of epochs the built-in catalog
// summarises the gradient statistics over (fewer for models that train
// fewer epochs).
const noiseStretches = 8

// fittedNoise is the built-in catalog's summary of a model's gradient
// statistics, for jobs that adapt their batch: the epochs are cut into
// equal stretches (noiseStretches, or one per epoch when there are fewer);
// Done[k] is the share of the work done by the end of stretch k, and
// LogPhi[k][i] the log of a gradient noise scale (grad_var/grad_sqr)
// that makes stretch k take, at traced batch i, the steps the
// epoch-by-epoch statistics give (fitNoise). Within a
// stretch the epochs are taken to be of equal work; between traced batches
// the log noise scale is interpolated linearly in the log batch (held at
// the ends). A step at batch M then gains (φ + 1)/(φ/(M/M0) + 1).
type fittedNoise struct {
	Done   []float64
	LogPhi [][]float64
}

// stretches returns how many stretches a model of epochs epochs has.
func stretches(epochs int) int { return min(epochs, noiseStretches) }

// stretchStart returns the first epoch of stretch k of epochs epochs cut
// into n stretches.
func stretchStart(k, n, epochs int) int { return k * epochs / n }

// fitNoise summarises a model's statistics (see fittedNoise). The noise
// scale of stretch k at traced batch i is the one at which a fixed batch
// takes, over the stretch, exactly the steps the epoch-by-epoch statistics
// give: with r = those steps over the stretch's progress (between 1/s and
// 1 at s = batch/M0), (φ/s + 1)/(φ + 1) = r gives φ = (1 − r)/(r − 1/s).
// At M0 (s = 1) every noise scale fits; it takes the next batch's.
func fitNoise(w *exactWork, epochs int) fittedNoise {
	n := stretches(epochs)
	var f fittedNoise
	total := w.total()
	for k := range n {
		from, to := stretchStart(k, n, epochs), stretchStart(k+1, n, epochs)
		f.Done = append(f.Done, round6(w.cum[to-1]/total))
		row := make([]float64, len(w.batches))
		for i, b := range w.batches {
			scale := b / w.m0
			var progress, steps float64
			for e := from; e < to; e++ {
				progress += w.dTarget[e]
				steps += w.dTarget[e] / gain(w.sqr[i][e], w.vr[i][e], scale)
			}
			r := steps / progress
			switch {
			case i == 0 || !(progress > 0):
				continue
			case r >= 1:
				row[i] = -30 // no noise at all: every batch gains its scale
			case r <= 1/scale:
				row[i] = 30
			default:
				row[i] = round6(math.Log((1 - r) / (r - 1/scale)))
			}
		}
		if len(row) > 1 {
			row[0] = row[1]
		}
		f.LogPhi = append(f.LogPhi, row)
	}
	f.Done[n-1] = 1
	return f
}

func (w *fittedWork) total() float64 { return w.steps(w.m0) }

func (w *fittedWork) epochOf(progress float64) (int, float64) {
	n, total := len(w.noise.Done), w.total()
	start := 0.0
	for k, done := range w.noise.Done {
		end := done * total
		if progress < end || k == n-1 {
			from, to := stretchStart(k, n, w.epochs), stretchStart(k+1, n, w.epochs)
			width := (end - start) / float64(to-from)
			i := 0
			if width > 0 {
				i = int(math.Floor((progress - start) / width))
			}
			i = max(i, 0)
			// An epoch ending exactly at progress (or, rounded, before
			// it) is over: the next one starts.
			for i < to-from-1 && start+float64(i+1)*width <= progress {
				i++
			}
			if i >= to-from-1 {
				return to - 1, end
			}
			return from + i, start + float64(i+1)*width
		}
		start = end
	}
	return w.epochs - 1, total
}

func (w *fittedWork) gainAt(e int, batch float64) float64 {
	phi := w.phiAt(e, batch)
	return (phi + 1) / (phi/(batch/w.m0) + 1)
}

// phiAt is the noise scale of epoch e's stretch, interpolated to batch.
func (w *fittedWork) phiAt(e int, batch float64) float64 {
	n := len(w.noise.Done)
	k := 0
	for k < n-1 && stretchStart(k+1, n, w.epochs) <= e {
		k++
	}
	i, j, t := bracket(w.logBatches, math.Log(batch))
	return math.Exp(lerp(w.noise.LogPhi[k][i], w.noise.LogPhi[k][j], t))
}
