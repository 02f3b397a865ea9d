package estimator

import (
	"math"
	"math/rand/v2"
	"testing"
)

// bestByGrid is Best trying every point of its grid.
func (f Fit) bestByGrid(r BatchRange, n, gpus int, noise float64) (b Batch, rel float64, ok bool) {
	total := n * gpus
	lo, hi := r.Initial, max(r.Max, r.Initial)
	try := func(target int) {
		c, fits := split(target, total, r.PerGPUMax, r.PerGPUMin, hi)
		if !fits {
			return
		}
		c.Efficiency = Efficiency(noise, r.Initial, c.Global)
		if g := c.Efficiency / BatchTime(n, r.Initial, c.Global); !ok || g > rel || (g == rel && c.Global < b.Global) {
			b, rel, ok = c, g, true
		}
	}
	try(lo)
	for i := 1; ; i++ {
		t := int(math.Round(float64(lo) * math.Exp2(float64(i)/batchSteps)))
		if t > hi {
			break
		}
		try(t)
	}
	try(hi)
	return b, rel, ok
}

// Best tries the grid's two points around the optimum only: its goodput
// is the whole grid's, to rounding, on random ranges, counts and noise.
func TestBestMatchesTheGrid(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	f := Fit{OneWorker: 1, Shape: DefaultShape}
	for range 20_000 {
		lo := 1 + r.IntN(512)
		rng := BatchRange{Initial: lo, Max: lo * (1 + r.IntN(256))}
		if r.IntN(3) == 0 {
			rng.PerGPUMax = 1 + r.IntN(256)
		}
		if r.IntN(3) == 0 {
			rng.PerGPUMin = 1 + r.IntN(16)
		}
		n, gpus := 1+r.IntN(64), 1+r.IntN(8)
		noise := -1.0
		if r.IntN(5) > 0 {
			noise = math.Pow(10, 6*r.Float64())
		}
		b, g, ok := f.Best(rng, n, gpus, noise)
		wb, wg, wok := f.bestByGrid(rng, n, gpus, noise)
		if ok != wok || ok && g < wg*(1-1e-3) {
			t.Fatalf("%+v at %d×%d, noise %.0f: %+v (%v, %v), the grid's %+v (%v, %v)", rng, n, gpus, noise, b, g, ok, wb, wg, wok)
		}
	}
}
