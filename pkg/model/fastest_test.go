package model_test

import (
	"math"
	"os"
	"testing"

	"github.com/vodascheduler/voda/pkg/model"
)

// compositions calls f with every ordered split of n into parts of at most
// most, at most nodes parts.
func compositions(n, most, nodes int, cur []int, f func([]int)) {
	if n == 0 {
		f(cur)
		return
	}
	if len(cur) == nodes {
		return
	}
	for k := 1; k <= min(n, most); k++ {
		compositions(n-k, most, nodes, append(cur, k), f)
	}
}

func TestFastestStepSecondsBoundsEveryPlacement(t *testing.T) {
	cats := map[string]*model.Catalog{"builtin": model.Builtin()}
	if _, err := os.Stat(model.ProfilesDir); err == nil {
		c, err := model.LoadProfiles(model.ProfilesDir)
		if err != nil {
			t.Fatal(err)
		}
		cats["profiles"] = c
	}
	for cname, c := range cats {
		for _, name := range c.Names() {
			m, _ := c.Model(name)
			for _, batch := range []int{m.Batches[0], m.Batches[len(m.Batches)-1]} {
				for n := 1; n <= 10; n++ {
					fastest := m.FastestStepSeconds(n, 4, 16, batch)
					if math.IsInf(fastest, 0) || !(fastest > 0) {
						t.Fatalf("%s %s batch %d on %d GPUs: %v", cname, name, batch, n, fastest)
					}
					compositions(n, 4, 16, nil, func(shape []int) {
						if s := m.StepSeconds(shape, batch); s < fastest*(1-1e-12) {
							t.Errorf("%s %s batch %d: %v takes %v s, under the fastest %v s", cname, name, batch, shape, s, fastest)
						}
					})
				}
			}
			if got := m.FastestStepSeconds(9, 4, 2, m.Batches[0]); !math.IsInf(got, 1) {
				t.Errorf("%s %s: 9 GPUs on two 4-GPU nodes: %v, want +Inf", cname, name, got)
			}
		}
	}
}
