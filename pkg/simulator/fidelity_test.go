package simulator_test

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/model"
	"github.com/vodascheduler/voda/pkg/simulator"
)

// traces is the Pollux artifact data, beside the repository.
var traces = filepath.Join("..", "..", "..", "shared", "traces", "pollux-adaptdl")

func needTraces(t *testing.T) simulator.Catalog {
	t.Helper()
	if _, err := os.Stat(filepath.Join(traces, "profiles")); err != nil {
		t.Skipf("Pollux artifact data not found at %s (it sits in ../shared/traces beside the repository): %v", traces, err)
	}
	cat, err := model.LoadProfiles(filepath.Join(traces, "profiles"))
	if err != nil {
		t.Fatal(err)
	}
	return simulator.ModelCatalog(cat)
}

func meanAvgJCT(t *testing.T, cat simulator.Catalog, dir string, cfg simulator.Config) float64 {
	t.Helper()
	ws, err := simulator.ReadWorkloads(filepath.Join(traces, dir), cat)
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, w := range ws {
		r, err := simulator.Run(cfg, w, cat)
		if err != nil {
			t.Fatal(err)
		}
		total += simulator.Summarise(r).AvgJCT
	}
	return total / float64(len(ws))
}

// TestFidelityTiresiasPolluxArtifact checks the simulator against the
// published Pollux-artifact Tiresias results: within ±10% of 4038 s at
// 1.0× load, and rising with load as published (2091, 4038, 6182, 10040 s).
func TestFidelityTiresiasPolluxArtifact(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 32 simulations")
	}
	cat := needTraces(t)
	cfg := simulator.Config{Policy: algorithm.NameTiresias, Nodes: 16, GPUsPerNode: 4,
		RestartDelay: 30 * time.Second, Interval: time.Minute, Tiresias: algorithm.PolluxArtifactTiresias()}
	prev := 0.0
	for _, l := range []struct {
		dir       string
		published float64
	}{{"workloads-0.5", 2091}, {"workloads", 4038}, {"workloads-1.5", 6182}, {"workloads-2.0", 10040}} {
		got := meanAvgJCT(t, cat, l.dir, cfg)
		t.Logf("%s: mean average JCT %.0f s, published %.0f s (%+.1f%%)", l.dir, got, l.published, 100*(got-l.published)/l.published)
		if l.dir == "workloads" && math.Abs(got-l.published)/l.published > 0.10 {
			t.Errorf("1.0× load: %.0f s is more than 10%% from the published %.0f s", got, l.published)
		}
		if got <= prev {
			t.Errorf("%s: %.0f s does not rise above the lighter load's %.0f s", l.dir, got, prev)
		}
		prev = got
	}
}
