package estimator_test

import (
	"testing"

	"github.com/vodascheduler/voda/pkg/estimator"
)

func TestEfficiency(t *testing.T) {
	if got := estimator.Efficiency(0, 64, 256); got != 0.25 {
		t.Errorf("no noise: an epoch at 4× the batch is worth %v, want 1/4", got)
	}
	if got := estimator.Efficiency(-1, 64, 256); got != 0.25 {
		t.Errorf("unknown noise counts as none: %v, want 1/4", got)
	}
	if got := estimator.Efficiency(1e9, 64, 256); !near(got, 1, 1e-6) {
		t.Errorf("all noise: %v, want 1", got)
	}
	// B = M0: (64+64)/(64+256).
	if got := estimator.Efficiency(64, 64, 256); !near(got, 0.4, 1e-12) {
		t.Errorf("noise scale 64: %v, want 0.4", got)
	}
}

func TestBatchTime(t *testing.T) {
	if got := estimator.BatchTime(4, 64, 64); got != 1 {
		t.Errorf("the initial batch: %v, want 1", got)
	}
	// The default shape's shares scaled by PerStepShare, whatever the
	// fit's: at 4 workers per step ¼·(0.05 + 0.015), per sample
	// (1 − 0.0125)/4; at 4× the batch the per-step part is paid a quarter
	// as often.
	p, q := (1-0.0125)/4, 0.065/4
	want := (p + q/4) / (p + q)
	if got := estimator.BatchTime(4, 64, 256); !near(got, want, 1e-12) {
		t.Errorf("4× the batch at 4 workers: %v, want %v", got, want)
	}
}

func TestBestBatch(t *testing.T) {
	r := estimator.BatchRange{Initial: 64, Max: 4096}
	b, rel, ok := truth.Best(r, 4, 1, -1)
	if !ok || b.Global != 64 || b.Local != 16 || b.Accumulation != 1 || rel != 1 || b.Efficiency != 1 {
		t.Errorf("unknown noise: %+v (goodput %v), want the initial batch, 16 per GPU", b, rel)
	}
	b, rel, ok = truth.Best(r, 4, 1, 1e8)
	if !ok || b.Global != 4096 || !(rel > 1) {
		t.Errorf("much noise: %+v (goodput %v), want the largest batch, more goodput", b, rel)
	}
	// A noise scale between: neither end (the optimum is √(B·q·M0/p),
	// about 355 here).
	b, _, _ = truth.Best(r, 4, 1, 30_000)
	if b.Global <= 256 || b.Global >= 512 {
		t.Errorf("noise scale 30 000: batch %d, want one near 355", b.Global)
	}
	// Per-GPU limit: accumulation, at most MaxAccumulation steps.
	r = estimator.BatchRange{Initial: 64, Max: 4096, PerGPUMax: 32}
	b, _, ok = truth.Best(r, 2, 1, 1e8)
	if !ok || b.Local > 32 || b.Global != b.Local*2*b.Accumulation || b.Accumulation > estimator.MaxAccumulation || b.Global != 512 {
		t.Errorf("2 GPUs of 32 samples: %+v, want 512 in 8 micro-steps of 32", b)
	}
	// The global batch never exceeds the range, and splits evenly.
	for n := 1; n <= 12; n++ {
		for _, noise := range []float64{-1, 50, 1e6} {
			b, _, ok := truth.Best(estimator.BatchRange{Initial: 100, Max: 1000}, n, 3, noise)
			if !ok || b.Global > 1000 || b.Global != b.Local*n*3*b.Accumulation {
				t.Errorf("%d workers of 3 GPUs, noise %v: %+v", n, noise, b)
			}
		}
	}
	if _, _, ok := truth.Best(estimator.BatchRange{Initial: 4, Max: 4}, 8, 1, -1); ok {
		t.Error("8 GPUs split a batch of 4")
	}
}

func TestAdaptiveSpeedup(t *testing.T) {
	r := estimator.BatchRange{Initial: 64, Max: 4096}
	still := truth.Adapt(r, 1, 8, -1)
	noisy := truth.Adapt(r, 1, 8, 20_000)
	for n := 1; n <= 8; n++ {
		// The fit's, but for the initial batch rounded to a multiple of
		// the GPUs (64 over 3 is 63, over 6 is 66).
		if got := still.Speedup(n); !near(got, truth.Speedup(n), 0.03) {
			t.Errorf("unknown noise, %d workers: speedup %v, want about the fit's %v", n, got, truth.Speedup(n))
		}
		if n > 1 && !(noisy.Speedup(n) > truth.Speedup(n)) {
			t.Errorf("much noise, %d workers: speedup %v, want above the fixed batch's %v", n, noisy.Speedup(n), truth.Speedup(n))
		}
	}
	if got := still.Remaining(10); got != 20 {
		t.Errorf("10 epochs at 2 s: %v s, want 20", got)
	}
	if !(noisy.Remaining(10) < 20) {
		t.Errorf("much noise: %v s for 10 epochs, want less than at the initial batch", noisy.Remaining(10))
	}
	if noisy.Speedup(1) != 1 || noisy.Speedup(9) != 0 || noisy.Batch(9).Global != 0 {
		t.Error("the curve is relative to one worker and 0 past the most")
	}
	if got := (estimator.Fit{}).Adapt(r, 1, 4, 100).Remaining(3); got >= 0 {
		t.Errorf("no fit: remaining %v, want unknown", got)
	}
}
