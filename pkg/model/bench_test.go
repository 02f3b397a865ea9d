package model_test

import (
	"testing"

	"github.com/vodascheduler/voda/pkg/model"
)

// benchShapes are the placements a 16 x 4 simulation asks about: packed
// ones of every size, a few spread ones, and unmeasured ones that take the
// fallback.
var benchShapes = [][]int{
	{1}, {2}, {4}, {4, 4}, {1, 4, 4, 4}, {4, 4, 4, 4}, {2, 1, 3}, {1, 1, 1, 1},
	packed(24), packed(32), packed(64), packed(20), packed(44), {8, 8},
}

func benchmarkStepSeconds(b *testing.B, c *model.Catalog) {
	m := mustModel(b, c, "cifar10")
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		s := benchShapes[i%len(benchShapes)]
		_ = m.StepSeconds(s, 2048)
	}
}

func BenchmarkStepSeconds(b *testing.B) {
	b.Run("profiles", func(b *testing.B) { benchmarkStepSeconds(b, model.LoadTestProfiles(b)) })
	b.Run("builtin", func(b *testing.B) { benchmarkStepSeconds(b, model.Builtin()) })
}

func BenchmarkStepSecondsParallel(b *testing.B) {
	m := mustModel(b, model.Builtin(), "cifar10")
	b.RunParallel(func(pb *testing.PB) {
		for i := 0; pb.Next(); i++ {
			_ = m.StepSeconds(benchShapes[i%len(benchShapes)], 2048)
		}
	})
}

func BenchmarkSteps(b *testing.B) {
	b.Run("profiles", func(b *testing.B) {
		m := mustModel(b, model.LoadTestProfiles(b), "cifar10")
		for b.Loop() {
			_ = m.Steps(3000)
		}
	})
	b.Run("builtin", func(b *testing.B) {
		m := mustModel(b, model.Builtin(), "cifar10")
		for b.Loop() {
			_ = m.Steps(3000)
		}
	})
}

func BenchmarkLoadProfiles(b *testing.B) {
	model.LoadTestProfiles(b)
	for b.Loop() {
		if _, err := model.LoadProfiles(model.ProfilesDir); err != nil {
			b.Fatal(err)
		}
	}
}
