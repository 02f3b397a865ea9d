package simulator_test

import (
	"testing"
	"time"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/model"
	"github.com/vodascheduler/voda/pkg/simulator"
)

func benchSimulate(b *testing.B, jobs, nodes int, load float64) {
	cat := model.Builtin()
	sc := simulator.ModelCatalog(cat)
	w, err := simulator.Generate(simulator.GenConfig{Jobs: jobs, Load: load, Seed: 1, GPUsPerNode: 4, MaxGPUs: nodes * 4}, sc, simulator.Batches(cat))
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range algorithm.Names() {
		b.Run(p, func(b *testing.B) {
			cfg := simulator.Config{Policy: p, Nodes: nodes, GPUsPerNode: 4, RestartDelay: 30 * time.Second,
				RateLimit: 30 * time.Second, Tiresias: algorithm.DefaultTiresias()}
			for b.Loop() {
				if _, err := simulator.Run(cfg, w, sc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSimulate160 is one Pollux-sized workload: 160 jobs on 64 GPUs.
func BenchmarkSimulate160(b *testing.B) { benchSimulate(b, 160, 16, 1) }

// BenchmarkSimulate10000 is 10 000 jobs on 512 GPUs. Arrivals run at 6× the
// base rate: the cluster has 8× the GPUs, and synthetic jobs ask for about
// 40% more GPU time than the Pollux workloads', so this is about their 1.0×
// load per GPU.
func BenchmarkSimulate10000(b *testing.B) {
	if testing.Short() {
		b.Skip("long")
	}
	benchSimulate(b, 10000, 128, 6)
}
