package simulator_test

import (
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/simulator"
)

var gavelCluster = []simulator.TypeNodes{{Name: "v100", Nodes: 2, GPUsPerNode: 4}, {Name: "p100", Nodes: 4, GPUsPerNode: 4}, {Name: "k80", Nodes: 6, GPUsPerNode: 4}}

func heteroConfig(policy, choice string) simulator.HeteroConfig {
	return simulator.HeteroConfig{Policy: policy, Types: gavelCluster, RestartDelay: 30 * time.Second, RateLimit: 30 * time.Second,
		Tiresias: algorithm.DefaultTiresias(), Choice: choice, Seed: 1}
}

// TestHeteroRunsEveryJob checks a heterogeneous run's invariants for every
// way of choosing types: every job finishes, no sooner than it could alone
// on its fastest type at its best size; pinned jobs never move; a job's
// types are ones it runs on and its moves are counted; runs repeat
// exactly.
func TestHeteroRunsEveryJob(t *testing.T) {
	table := needGavel(t)
	w, err := simulator.GenerateGavel(table, 120, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, policy := range []string{algorithm.NameFIFO, algorithm.NameElasticTiresias, algorithm.NameHeSRPT} {
		for _, choice := range simulator.Choices {
			res, err := simulator.RunHetero(heteroConfig(policy, choice), w, table)
			if err != nil {
				t.Fatalf("%s/%s: %v", policy, choice, err)
			}
			if len(res.Jobs) != len(w.Jobs) {
				t.Fatalf("%s/%s: %d results for %d jobs", policy, choice, len(res.Jobs), len(w.Jobs))
			}
			if !(res.LowerBound > 0) || res.LowerBound > res.MeanJCT() {
				t.Errorf("%s/%s: lower bound %.0fs against an average JCT of %.0fs", policy, choice, res.LowerBound, res.MeanJCT())
			}
			busy := 0.0
			for _, v := range res.Busy {
				busy += v
			}
			if busy <= 0 {
				t.Errorf("%s/%s: no GPU was ever busy", policy, choice)
			}
			for i, j := range res.Jobs {
				wj := w.Jobs[i]
				best := 0.0
				for _, ty := range gavelCluster {
					for n := 1; n <= 8; n++ {
						if v, ok := table.StepsPerSecond(ty.Name, wj.JobType, n); ok {
							best = max(best, v)
						}
					}
				}
				if floor := wj.Steps / best; j.JCT < floor*(1-1e-9) || math.IsNaN(j.JCT) {
					t.Fatalf("%s/%s: %s done in %.0fs, faster than alone on its best type (%.0fs)", policy, choice, j.Name, j.JCT, floor)
				}
				if j.Moves != len(j.Types)-1 || len(j.Types) == 0 {
					t.Fatalf("%s/%s: %s on %v with %d moves", policy, choice, j.Name, j.Types, j.Moves)
				}
				if choice != simulator.ChoiceVoda && j.Moves > 0 {
					t.Fatalf("%s/%s: pinned job %s moved: %v", policy, choice, j.Name, j.Types)
				}
				for _, ty := range j.Types {
					if _, ok := table.StepsPerSecond(ty, wj.JobType, 1); !ok {
						t.Fatalf("%s/%s: %s put on %s, where it does not run", policy, choice, j.Name, ty)
					}
				}
				if choice == simulator.ChoiceFastest && j.Types[0] != fastestOf(table, wj) {
					t.Fatalf("%s: %s pinned to %s, not its fastest type", policy, j.Name, j.Types[0])
				}
			}
			again, err := simulator.RunHetero(heteroConfig(policy, choice), w, table)
			if err != nil {
				t.Fatal(err)
			}
			again.WallSeconds = res.WallSeconds
			if !reflect.DeepEqual(res, again) {
				t.Errorf("%s/%s: two runs differ", policy, choice)
			}
		}
	}
}

// A job alone is bounded by exactly one restart delay plus its best time
// over the types (elastic) or at its scale factor (rigid), and a policy
// of either class running it alone meets that bound.
func TestHeteroBoundOfAJobAlone(t *testing.T) {
	table := needGavel(t)
	w, err := simulator.GenerateGavel(table, 20, 1, 5)
	if err != nil {
		t.Fatal(err)
	}
	var j simulator.HeteroJob
	for _, c := range w.Jobs {
		if c.Scale > 1 {
			j = c
			break
		}
	}
	if j.Scale < 2 {
		t.Fatal("no job of several GPUs in the workload")
	}
	j.Submit = 0
	alone := simulator.HeteroWorkload{Name: "alone", Jobs: []simulator.HeteroJob{j}}
	for policy, top := range map[string]int{algorithm.NameFIFO: j.Scale, algorithm.NameElasticFIFO: 8} {
		best := 0.0
		for _, ty := range gavelCluster {
			for n := 1; n <= top; n++ {
				if v, ok := table.StepsPerSecond(ty.Name, j.JobType, n); ok {
					best = max(best, v)
				}
			}
		}
		res, err := simulator.RunHetero(heteroConfig(policy, simulator.ChoiceFastest), alone, table)
		if err != nil {
			t.Fatal(err)
		}
		if want := 30 + j.Steps/best; math.Abs(res.LowerBound-want) > 1e-6*want {
			t.Errorf("%s: bound %.1fs, want %.1fs", policy, res.LowerBound, want)
		}
		if res.MeanJCT() < res.LowerBound*(1-1e-9) {
			t.Errorf("%s: JCT %.1fs under the bound %.1fs", policy, res.MeanJCT(), res.LowerBound)
		}
	}
}

// fastestOf is the type where a job runs its scale fastest, as the
// simulator's "fastest" choice reads the table (monotone in GPUs).
func fastestOf(table *simulator.GavelTable, j simulator.HeteroJob) string {
	best, bestV := "", 0.0
	for _, ty := range gavelCluster {
		v := 0.0
		for n := 1; n <= min(j.Scale, 8); n++ {
			if x, ok := table.StepsPerSecond(ty.Name, j.JobType, n); ok {
				v = max(v, x)
			}
		}
		if v > bestV {
			best, bestV = ty.Name, v
		}
	}
	return best
}

// TestHeteroVodaChoiceWins is the evaluation's claim on a small workload:
// Voda's choice of type beats random and fastest pinning on average JCT.
func TestHeteroVodaChoiceWins(t *testing.T) {
	table := needGavel(t)
	w, err := simulator.GenerateGavel(table, 150, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, policy := range []string{algorithm.NameFIFO, algorithm.NameSRJF, algorithm.NameHeSRPT} {
		mean := map[string]float64{}
		for _, choice := range simulator.Choices {
			res, err := simulator.RunHetero(heteroConfig(policy, choice), w, table)
			if err != nil {
				t.Fatal(err)
			}
			mean[choice] = res.MeanJCT()
		}
		if mean["voda"] >= mean["random"] || mean["voda"] >= mean["fastest"] {
			t.Errorf("%s: average JCT voda %.0fs, random %.0fs, fastest %.0fs", policy, mean["voda"], mean["random"], mean["fastest"])
		}
	}
}

func TestHeteroConfigErrors(t *testing.T) {
	ok := heteroConfig("FIFO", "voda")
	for name, edit := range map[string]func(*simulator.HeteroConfig){
		"no GPU types": func(c *simulator.HeteroConfig) { c.Types = nil },
		"given twice":  func(c *simulator.HeteroConfig) { c.Types = append(c.Types, c.Types[0]) },
		"want 1–100000": func(c *simulator.HeteroConfig) {
			c.Types = []simulator.TypeNodes{{Name: "v100", Nodes: 0, GPUsPerNode: 4}}
		},
		`type choice "best"`: func(c *simulator.HeteroConfig) { c.Choice = "best" },
		"unknown policy":     func(c *simulator.HeteroConfig) { c.Policy = "LIFO" },
	} {
		c := ok
		c.Types = slices.Clone(ok.Types)
		edit(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
}
