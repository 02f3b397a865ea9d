package algorithm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vodascheduler/voda/pkg/api"
)

// The radix sort of the greedy's segments gives the order of before,
// with values that tie often (so job IDs decide, in an order unlike the
// jobs' indexes), negative values, zeros and infinities among them.
func TestHeSRPTSegmentSort(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	values := []float64{0, 1, 1.5, 2, 1e-300, 7e12, math.Inf(1), -1, -2.5, math.Copysign(0, -1)}
	for iter := range 300 {
		n := 1 + r.IntN(60)
		jobs := make([]Job, n)
		st := make([]hsJob, n)
		for i := range jobs {
			jobs[i].ID = api.JobID(fmt.Sprintf("j%03d", r.IntN(1000)*n+i))
			st[i].i = int32(i)
		}
		hs := hsState{jobs: jobs, st: st}
		segs := make([]hsSeg, 1+r.IntN(300))
		for i := range segs {
			v := values[r.IntN(len(values))]
			if r.IntN(2) == 0 {
				v = r.NormFloat64() * 1e3
			}
			segs[i] = hsSeg{value: v, job: int32(r.IntN(n)), to: int32(i), gpus: 1}
		}
		want := slices.Clone(segs)
		slices.SortFunc(want, func(x, y hsSeg) int {
			if hs.before(&x, &y) {
				return -1
			}
			return 1
		})
		hs.sort(segs)
		if d := cmp.Diff(want, segs, cmp.AllowUnexported(hsSeg{}), cmp.Comparer(func(a, b float64) bool {
			return math.Float64bits(a) == math.Float64bits(b)
		})); d != "" {
			t.Fatalf("iteration %d: (-want,+got)\n%s", iter, d)
		}
	}
}
