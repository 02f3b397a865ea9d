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

// The greedy's first phase lists only the segments of the leading bands
// (contenders; here whatever the number of segments, else from
// bandsFrom); the segments it grants are those it grants from the list
// of every segment: with values that tie, zeros of both signs, negative
// and infinite values, and now and then a NaN (then every segment is
// listed, in the order of old).
func TestHeSRPTContenders(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	weights := []float64{1, 1, 2, 0.75, 1e-300, 3e9, math.Inf(1), -1, 0, math.Copysign(0, -1)}
	defer func(n int) { bandsFrom = n }(bandsFrom)
	filtered := 0
	for iter := range 500 {
		n := 1 + r.IntN(80)
		jobs := make([]Job, n)
		hs := hsState{jobs: jobs, st: make([]hsJob, n)}
		for i := range jobs {
			jobs[i].ID = api.JobID(fmt.Sprintf("j%03d", r.IntN(1000)*n+i))
			a := &hs.st[i]
			a.i, a.k, a.next, a.last = int32(i), int32(1+r.IntN(2)), 1, math.Inf(1)
			a.w = weights[r.IntN(len(weights))]
			if r.IntN(3) == 0 {
				a.w = r.ExpFloat64()
			}
			if iter%50 == 7 && i == 0 {
				a.w = math.NaN()
			}
			a.lo = int32(len(hs.hx))
			hs.hx, hs.hy = append(hs.hx, 0), append(hs.hy, 0)
			x, y := 0, 0.0
			for range 1 + r.IntN(6) {
				step := 1 + r.IntN(4)
				x, y = x+step, y+float64(step)*float64(1+r.IntN(3))
				hs.hx, hs.hy = append(hs.hx, int32(x)), append(hs.hy, y)
			}
			a.hi = int32(len(hs.hx))
			if r.IntN(4) == 0 {
				a.n = r.IntN(2) // inside its first segment
			}
		}
		var all []hsSeg
		hs.eachSegment(0.2, func(i int, to int32, val float64, gpus int) bool {
			all = append(all, hsSeg{val, int32(i), to, gpus})
			return true
		})
		free := r.IntN(1 + 2*len(all))
		bandsFrom = 0
		if iter%10 == 3 {
			bandsFrom = len(all) // listed whole, without bands
		}
		cands := hs.contenders(nil, 0.2, free)
		if len(cands) < len(all) {
			filtered++
		}
		key := func(g hsSeg) [2]int32 { return [2]int32{g.job, g.to} }
		lead := func(segs []hsSeg) [][2]int32 {
			segs = slices.Clone(segs)
			var out [][2]int32
			for _, g := range segs[:hs.leading(segs, free)] {
				out = append(out, key(g))
			}
			slices.SortFunc(out, func(x, y [2]int32) int {
				if x[0] != y[0] {
					return int(x[0] - y[0])
				}
				return int(x[1] - y[1])
			})
			return out
		}
		if want, got := lead(all), lead(cands); !slices.Equal(want, got) {
			t.Fatalf("iteration %d (%d segments, %d listed, %d free): leading %v, from every segment %v", iter, len(all), len(cands), free, got, want)
		}
	}
	if filtered < 100 {
		t.Errorf("only %d of 500 lists left segments out: the bands were not tried", filtered)
	}
}
