package model

import (
	"fmt"
	"math"
	"slices"
)

// workModel gives the optimizer steps a job needs to finish training at a
// fixed global batch.
type workModel interface {
	steps(batch float64) float64
}

// exactWork applies the Pollux simulator's statistical-progress rule to the
// validation traces (README, "How the Pollux simulator turns these into job
// progress"): epoch e ends when the progress, in steps at the smallest
// traced batch M0, reaches target_e, the smallest progress any traced batch
// reached by the end of epoch e; a step at batch M makes gain_e(M) progress.
type exactWork struct {
	m0      float64
	batches []float64   // traced batches, ascending
	dTarget []float64   // target_e - target_{e-1} per epoch
	cum     []float64   // target_e: the progress at the end of epoch e
	sqr     [][]float64 // grad_sqr by batch index, then epoch
	vr      [][]float64 // grad_var by batch index, then epoch
}

// newExactWork builds the rule from the validation rows of each traced
// batch, using the first epochs rows of each.
func newExactWork(byBatch map[int][]epochRow, epochs int) (*exactWork, error) {
	w := &exactWork{}
	batches := make([]int, 0, len(byBatch))
	for b, rows := range byBatch {
		if len(rows) < epochs {
			return nil, fmt.Errorf("validation-%d.csv: %d epochs, want at least %d", b, len(rows), epochs)
		}
		batches = append(batches, b)
	}
	if len(batches) == 0 {
		return nil, fmt.Errorf("no validation-<batch>.csv files")
	}
	slices.Sort(batches)
	w.m0 = float64(batches[0])
	prev := 0.0
	for e := range epochs {
		target := math.Inf(1)
		for _, b := range batches {
			target = min(target, byBatch[b][e].progress)
		}
		w.dTarget = append(w.dTarget, target-prev)
		w.cum = append(w.cum, target)
		prev = target
	}
	for _, b := range batches {
		w.batches = append(w.batches, float64(b))
		sqr, vr := make([]float64, epochs), make([]float64, epochs)
		for e, r := range byBatch[b][:epochs] {
			sqr[e], vr[e] = r.gradSqr, r.gradVar
		}
		w.sqr = append(w.sqr, sqr)
		w.vr = append(w.vr, vr)
	}
	return w, nil
}

func (w *exactWork) steps(batch float64) float64 {
	i, j, t := bracket(w.batches, batch)
	scale := batch / w.m0
	total := 0.0
	for e, dt := range w.dTarget {
		total += dt / gain(lerp(w.sqr[i][e], w.sqr[j][e], t), lerp(w.vr[i][e], w.vr[j][e], t), scale)
	}
	return total
}

// gain is the statistical efficiency of a step at scale = M/M0 times the
// smallest traced batch, in steps at M0: (var + sqr) / (var/scale + sqr),
// the Pollux simulator's rule (README). With no gradient statistics at all
// it counts a step as one step at M0.
func gain(sqr, vr, scale float64) float64 {
	if sqr+vr <= 0 {
		return 1
	}
	return (vr + sqr) / (vr/scale + sqr)
}

// asymptote returns (A, B) with steps(batch) = A + B*M0/batch for every
// batch at which the gradient statistics are those of traced batch index i
// (below the smallest or above the largest traced batch): per epoch,
// dt/gain = dt*(var*M0/batch + sqr)/(var + sqr).
func (w *exactWork) asymptote(i int) (a, b float64) {
	for e, dt := range w.dTarget {
		s, v := w.sqr[i][e], w.vr[i][e]
		if s+v <= 0 {
			a += dt
			continue
		}
		a += dt * s / (s + v)
		b += dt * v / (s + v)
	}
	return a, b
}
