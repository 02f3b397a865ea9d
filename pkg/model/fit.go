package model

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// speedSample is one measured step time the speed fit matches.
type speedSample struct {
	nodes, gpus int
	local, step float64
	packed      bool
}

// speedSamples lists the measured step times of a profiled model that
// StepSeconds can use: local batches within [MinLocalBatch, MaxLocalBatch],
// from every placement and every scalability configuration. The order is
// deterministic.
func speedSamples(m *Model, ms *measuredSpeed) []speedSample {
	inRange := func(l float64) bool { return l >= float64(m.MinLocalBatch) && l <= float64(m.MaxLocalBatch) }
	var out []speedSample
	keys := make([]int64, 0, len(ms.placements))
	for k := range ms.placements {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, key := range keys {
		nodes, gpus, _ := keyCounts(key)
		c := ms.placements[key]
		for i, l := range c.local {
			if inRange(l) {
				out = append(out, speedSample{nodes: nodes, gpus: gpus, local: l, step: c.step[i], packed: packedKey(key)})
			}
		}
	}
	configs := make([][2]int, 0, len(ms.scalability))
	for c := range ms.scalability {
		configs = append(configs, c)
	}
	slices.SortFunc(configs, func(a, b [2]int) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	for _, cfg := range configs {
		c := ms.scalability[cfg]
		for i, l := range c.local {
			if inRange(l) {
				out = append(out, speedSample{nodes: cfg[0], gpus: cfg[1], local: l, step: c.step[i], packed: cfg[1] == 4*cfg[0]})
			}
		}
	}
	return out
}

// keyCounts returns the node and GPU counts of a placement key, and the
// most GPUs it puts on one node.
func keyCounts(key int64) (nodes, gpus, most int) {
	for ; key > 0; key /= 10 {
		d := int(key % 10)
		nodes, gpus, most = nodes+1, gpus+d, max(most, d)
	}
	return nodes, gpus, most
}

// Bounds of the log-parameters of the speed fit. Clamping keeps a
// parameter the data cannot see (say a sync term the overlap hides) at a
// fixed, printable value instead of drifting toward zero.
const (
	logLo = -25.0
	logHi = 5.0
)

func expClamped(x float64) float64 { return math.Exp(min(max(x, logLo), logHi)) }

// speedFromParams maps the fit's unconstrained parameters to the model.
func speedFromParams(x []float64) fittedSpeed {
	return fittedSpeed{
		ComputeBase:     expClamped(x[0]),
		ComputeScale:    expClamped(x[1]),
		ComputeExp:      0.25 + 1.75/(1+math.Exp(-x[2])), // 0.25..2
		MultiGPU:        expClamped(x[3]),
		LocalSyncBase:   expClamped(x[4]),
		LocalSyncPerGPU: expClamped(x[5]),
		NodeSyncBase:    expClamped(x[6]),
		NodeSyncPerGPU:  expClamped(x[7]),
		TwoNodes:        expClamped(x[8]),
		Gamma:           1 + 9/(1+math.Exp(-x[9])), // 1..10, as Pollux bounds it
	}
}

// fitSpeed fits the parametric step-time model to a profiled model's
// measurements by least squares on log step time, so every sample counts
// by its relative error. Packed placements (the ones a packing scheduler
// uses) carry as much total weight as all the others together.
func fitSpeed(samples []speedSample) (fittedSpeed, error) {
	if len(samples) == 0 {
		return fittedSpeed{}, fmt.Errorf("no measured step times within the local batch range")
	}
	packed := 0
	for _, s := range samples {
		if s.packed {
			packed++
		}
	}
	wPacked := 1.0
	if packed > 0 && packed < len(samples) {
		wPacked = math.Sqrt(float64(len(samples)-packed) / float64(packed))
	}
	resid := func(x, out []float64) {
		f := speedFromParams(x)
		for i, s := range samples {
			step, _ := f.timesAt(s.nodes, s.gpus, s.local)
			r := math.Log(step / s.step)
			if s.packed {
				r *= wPacked
			}
			out[i] = r
		}
	}
	res := make([]float64, len(samples))
	cost := func(x []float64) float64 {
		resid(x, res)
		return sumSq(res)
	}
	// Starting points: compute and sync on the scale of the smallest
	// measured step, little or much overlap. On the profiles, these two
	// reach the best of a wider grid of starts.
	scale := math.Inf(1)
	for _, s := range samples {
		scale = min(scale, s.step)
	}
	var best []float64
	bestCost := math.Inf(1)
	for _, gammaLogit := range []float64{-2, 2} {
		x0 := []float64{
			math.Log(scale / 2), math.Log(scale / 2 / samples[0].local), 0, 0,
			math.Log(scale), math.Log(scale / 10),
			math.Log(scale), math.Log(scale / 10),
			0, gammaLogit,
		}
		x := leastSquares(resid, len(samples), x0, 200)
		if c := cost(x); best == nil || c < bestCost {
			best, bestCost = x, c
		}
	}
	return speedFromParams(best), nil
}

// fitWork tabulates the exact work rule for the built-in catalog.
func fitWork(w *exactWork) fittedWork {
	f := fittedWork{m0: w.m0}
	for i, b := range w.batches {
		if i > 0 {
			mid := math.Sqrt(w.batches[i-1] * b)
			f.knots = append(f.knots, [2]float64{mid, w.steps(mid)})
		}
		f.knots = append(f.knots, [2]float64{b, w.steps(b)})
	}
	f.below[0], f.below[1] = w.asymptote(0)
	f.above[0], f.above[1] = w.asymptote(len(w.batches) - 1)
	return f
}
