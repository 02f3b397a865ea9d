package model

import (
	"cmp"
	"slices"
)

// curve is step and sync time as functions of the per-GPU batch: linear
// between measured local batches and flat beyond the measured ends, as the
// Pollux simulator interpolates (README: "linearly interpolated in
// local_bsz").
type curve struct {
	local, step, sync []float64 // local ascending, no repeats
}

// newCurve builds a curve from timings of one configuration, averaging
// timings measured at the same local batch.
func newCurve(ts []timing) *curve {
	ts = slices.Clone(ts)
	slices.SortStableFunc(ts, func(a, b timing) int { return cmp.Compare(a.local, b.local) })
	c := &curve{}
	for i := 0; i < len(ts); {
		j, step, sync := i, 0.0, 0.0
		for ; j < len(ts) && ts[j].local == ts[i].local; j++ {
			step += ts[j].step
			sync += ts[j].sync
		}
		n := float64(j - i)
		c.local = append(c.local, float64(ts[i].local))
		c.step = append(c.step, step/n)
		c.sync = append(c.sync, sync/n)
		i = j
	}
	return c
}

// at returns step and sync time at per-GPU batch local.
func (c *curve) at(local float64) (step, sync float64) {
	i, j, t := bracket(c.local, local)
	return lerp(c.step[i], c.step[j], t), lerp(c.sync[i], c.sync[j], t)
}

// bracket finds xs[i] <= x <= xs[j] with j = i or i+1 and the weight t of
// xs[j], clamping x to the ends of xs. xs is ascending and not empty.
func bracket(xs []float64, x float64) (i, j int, t float64) {
	n := len(xs)
	if x <= xs[0] {
		return 0, 0, 0
	}
	if x >= xs[n-1] {
		return n - 1, n - 1, 0
	}
	j, found := slices.BinarySearch(xs, x)
	if found {
		return j, j, 0
	}
	i = j - 1
	return i, j, (x - xs[i]) / (xs[j] - xs[i])
}

func lerp(a, b, t float64) float64 { return a + t*(b-a) }
