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
}

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
	e = min(max(e, 0), len(w.dTarget)-1)
	i, j, t := bracket(w.batches, batch)
	return gain(lerp(w.sqr[i][e], w.sqr[j][e], t), lerp(w.vr[i][e], w.vr[j][e], t), batch/w.m0)
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
