package model_test

import (
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vodascheduler/voda/pkg/model"
)

// packed returns n GPUs filling 4-GPU nodes, the last one partly.
func packed(n int) []int {
	var shape []int
	for ; n > 4; n -= 4 {
		shape = append(shape, 4)
	}
	return append(shape, n)
}

// packedSizes are the GPU counts with a measured packed placement: every
// count up to 16 (placements.csv) and 6, 8, 12 and 16 full nodes
// (scalability.csv).
var packedSizes = []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 24, 32, 48, 64}

func TestBuiltinNeedsNoFiles(t *testing.T) {
	c := model.Builtin()
	if diff := cmp.Diff(model.KnownModels(), c.Names()); diff != "" {
		t.Errorf("Names (-want,+got):\n%s", diff)
	}
	if model.Builtin() != c {
		t.Errorf("Builtin returned a new catalog on the second call; want the shared one")
	}
	for _, name := range c.Names() {
		m := mustModel(t, c, name)
		for _, b := range m.Batches {
			for _, n := range packedSizes {
				if got := m.StepSeconds(packed(n), b); !(got > 0 && got < 100) {
					t.Errorf("%s: StepSeconds(%v, %d) = %v, want a positive step time", name, packed(n), b, got)
				}
			}
			if got := m.Steps(b); !(got > 0 && !math.IsInf(got, 0)) {
				t.Errorf("%s: Steps(%d) = %v, want a positive step count", name, b, got)
			}
		}
		if got := m.StepSeconds(nil, 128); !math.IsInf(got, 1) {
			t.Errorf("%s: StepSeconds(no GPUs) = %v, want +Inf", name, got)
		}
	}
}

// TestBuiltinStepSecondsOnPackedPlacements compares the two catalogs the
// way the simulator uses them: packed placements at every traced batch,
// for GPU counts up to MaxWorkers, accumulation included.
func TestBuiltinStepSecondsOnPackedPlacements(t *testing.T) {
	profiles := model.LoadTestProfiles(t)
	var all []float64
	for _, name := range profiles.Names() {
		measured, fitted := mustModel(t, profiles, name), mustModel(t, model.Builtin(), name)
		var errs []float64
		for _, b := range measured.Batches {
			for _, n := range packedSizes {
				if n > measured.MaxWorkers(b) && n > 1 {
					continue
				}
				want, got := measured.StepSeconds(packed(n), b), fitted.StepSeconds(packed(n), b)
				errs = append(errs, math.Abs(got/want-1))
			}
		}
		slices.Sort(errs)
		med, p90 := errs[len(errs)/2], errs[len(errs)*9/10]
		t.Logf("%-11s median %.1f%% p90 %.1f%% over %d (GPUs, batch) pairs", name, 100*med, 100*p90, len(errs))
		if med > model.MaxMedianErr || p90 > model.MaxP90Err {
			t.Errorf("%s: built-in StepSeconds off by a median %.1f%%, p90 %.1f%%; want at most %.0f%% and %.0f%%",
				name, 100*med, 100*p90, 100*model.MaxMedianErr, 100*model.MaxP90Err)
		}
		all = append(all, errs...)
	}
	slices.Sort(all)
	t.Logf("every model: median %.1f%% p90 %.1f%% over %d pairs", 100*all[len(all)/2], 100*all[len(all)*9/10], len(all))
}

func TestModelsAreSafeForConcurrentUse(t *testing.T) {
	catalogs := model.CatalogsForTest(t)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for _, c := range catalogs {
				for _, name := range c.Names() {
					m, _ := c.Model(name)
					for n := 1; n <= 64; n += 1 + g {
						_ = m.StepSeconds(packed(n), m.Batches[len(m.Batches)-1])
						_ = m.Steps(m.Batches[0] * n)
						_ = m.MaxWorkers(m.Batches[0] * n)
					}
				}
			}
		})
	}
	wg.Wait()
}
