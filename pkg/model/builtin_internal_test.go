package model

import (
	"bytes"
	"go/format"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBuiltinStepTimesFitTheMeasuredProfiles(t *testing.T) {
	profiles := LoadTestProfiles(t)
	var packedAll, allAll []float64
	for _, name := range profiles.Names() {
		m := profiles.models[name]
		samples := speedSamples(m, m.speed.(*measuredSpeed))
		fit := Builtin().models[name].speed.(*fittedSpeed)
		packed, all := fitErrors(fit, samples)
		packedAll = append(packedAll, packed...)
		allAll = append(allAll, all...)
		t.Logf("%-11s packed: median %s p90 %s (%d); all: median %s p90 %s (%d)", name,
			percent(quantile(packed, 0.5)), percent(quantile(packed, 0.9)), len(packed),
			percent(quantile(all, 0.5)), percent(quantile(all, 0.9)), len(all))
		for kind, errs := range map[string][]float64{"packed": packed, "all": all} {
			if med, p90 := quantile(errs, 0.5), quantile(errs, 0.9); med > MaxMedianErr || p90 > MaxP90Err {
				t.Errorf("%s, %s placements: median error %s, p90 %s; want at most %s and %s",
					name, kind, percent(med), percent(p90), percent(MaxMedianErr), percent(MaxP90Err))
			}
		}
	}
	t.Logf("every model: packed median %s p90 %s (%d); all median %s p90 %s (%d)",
		percent(quantile(packedAll, 0.5)), percent(quantile(packedAll, 0.9)), len(packedAll),
		percent(quantile(allAll, 0.5)), percent(quantile(allAll, 0.9)), len(allAll))
}

func TestBuiltinStepsMatchTheExactRule(t *testing.T) {
	profiles := LoadTestProfiles(t)
	for _, name := range profiles.Names() {
		exact := profiles.models[name]
		fitted := Builtin().models[name]
		// Every batch from an eighth of M0 to 8x the largest traced one:
		// exact (up to rounding) at the knots and outside them, within
		// 0.5% between knots.
		worst, at := 0.0, 0
		for b := max(exact.Batches[0]/8, 1); b <= 8*exact.Batches[len(exact.Batches)-1]; b = b*33/32 + 1 {
			if e := abs(fitted.Steps(b)/exact.Steps(b) - 1); e > worst {
				worst, at = e, b
			}
		}
		t.Logf("%-11s Steps: largest relative error %.3f%% at batch %d", name, 100*worst, at)
		if worst > 0.005 {
			t.Errorf("%s: built-in Steps(%d) is off by %.2f%%, want at most 0.5%%", name, at, 100*worst)
		}
		for _, b := range exact.Batches {
			if e := abs(fitted.Steps(b)/exact.Steps(b) - 1); e > 1e-5 {
				t.Errorf("%s: built-in Steps(%d) = %v, want %v (a knot)", name, b, fitted.Steps(b), exact.Steps(b))
			}
		}
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func TestBuiltinGenIsUpToDate(t *testing.T) {
	profiles := LoadTestProfiles(t)
	want, err := GenerateBuiltin(profiles)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("builtin_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("builtin_gen.go is stale; run `go run ./hack/fitcatalog` (-want,+got):\n%s",
			cmp.Diff(strings.Split(string(want), "\n"), strings.Split(string(got), "\n")))
	}
	if formatted, err := format.Source(got); err != nil || !bytes.Equal(formatted, got) {
		t.Errorf("builtin_gen.go is not gofmt-ed (err %v)", err)
	}
}
