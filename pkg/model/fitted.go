package model

import (
	"math"
)

// fittedSpeed is the built-in catalog's parametric step-time model, in the
// spirit of Pollux's throughput model (Qiao et al., OSDI'21, §3.2: compute
// time linear in the per-GPU batch, synchronisation time linear in the GPU
// count with separate constants for one node and several, the two
// overlapping as (compute^γ + sync^γ)^(1/γ)). Three changes fit the
// measured profiles better: compute grows as a power of the local batch,
// compute on two or more GPUs is scaled by MultiGPU, and synchronisation
// across exactly two nodes is scaled by TwoNodes (the testbed's two-node
// configurations are slower than its three-node ones for most models).
type fittedSpeed struct {
	ComputeBase, ComputeScale, ComputeExp float64 // one GPU: Base + Scale*local^Exp seconds
	MultiGPU                              float64 // compute factor with 2 or more GPUs
	LocalSyncBase, LocalSyncPerGPU        float64 // one node, n >= 2 GPUs: Base + PerGPU*(n-2)
	NodeSyncBase, NodeSyncPerGPU          float64 // several nodes: Base + PerGPU*(n-2)
	TwoNodes                              float64 // sync factor on exactly two nodes
	Gamma                                 float64 // overlap exponent, 1 (none) to 10 (nearly full)
}

func (f *fittedSpeed) times(s shape, local int) (step, sync float64) {
	return f.timesAt(s.nodes, s.gpus, float64(local))
}

// timesAt returns step and sync seconds for one micro-batch of local
// samples per GPU on gpus GPUs over nodes nodes. An accumulation micro-batch
// costs step - sync, the compute time.
func (f *fittedSpeed) timesAt(nodes, gpus int, local float64) (step, sync float64) {
	compute := f.ComputeBase + f.ComputeScale*math.Pow(local, f.ComputeExp)
	if gpus <= 1 {
		return compute, 0
	}
	compute *= f.MultiGPU
	var s float64
	if nodes == 1 {
		s = f.LocalSyncBase + f.LocalSyncPerGPU*float64(gpus-2)
	} else {
		s = f.NodeSyncBase + f.NodeSyncPerGPU*float64(gpus-2)
		if nodes == 2 {
			s *= f.TwoNodes
		}
	}
	if s <= 0 {
		return compute, 0
	}
	// (c^γ + s^γ)^(1/γ) computed as m*(1 + (r)^γ)^(1/γ), r <= 1, so large γ
	// cannot overflow.
	hi, lo := max(compute, s), min(compute, s)
	step = hi * math.Pow(1+math.Pow(lo/hi, f.Gamma), 1/f.Gamma)
	return step, step - compute
}

// fittedWork is the built-in catalog's work model: Steps through knots
// (global batch, steps) computed with the exact rule at every traced batch
// and the geometric midpoint of each pair of neighbours, interpolated
// linearly in log-batch and log-steps. Outside the knots the exact rule has
// a closed form, because the gradient statistics are clamped to the end
// batch's: steps = A + B*M0/batch, with (A, B) stored per side.
type fittedWork struct {
	m0           float64
	knots        [][2]float64 // (batch, steps), batch ascending
	below, above [2]float64   // (A, B) below the first and above the last knot
	logB, logS   []float64    // knots in logs, filled by prepare
	// noise summarises the gradient statistics for jobs that adapt their
	// batch (goodput.go); epochs and logBatches (the traced batches in
	// logs) are filled from the model.
	noise      fittedNoise
	epochs     int
	logBatches []float64
}

func (w *fittedWork) prepare() {
	w.logB = make([]float64, len(w.knots))
	w.logS = make([]float64, len(w.knots))
	for i, k := range w.knots {
		w.logB[i], w.logS[i] = math.Log(k[0]), math.Log(k[1])
	}
}

func (w *fittedWork) steps(batch float64) float64 {
	switch n := len(w.knots); {
	case batch <= w.knots[0][0]:
		return w.below[0] + w.below[1]*w.m0/batch
	case batch >= w.knots[n-1][0]:
		return w.above[0] + w.above[1]*w.m0/batch
	}
	i, j, t := bracket(w.logB, math.Log(batch))
	return math.Exp(lerp(w.logS[i], w.logS[j], t))
}
