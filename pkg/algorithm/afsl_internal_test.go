package algorithm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vodascheduler/voda/pkg/api"
)

// naiveAFSL replays the whole tournament for every grant: slow, obviously
// right, and the reference the fast tournament must agree with.
func naiveAFSL(s *Snapshot) api.Allocation {
	idx := order(s.Jobs, nil)
	st := make([]afsState, len(idx))
	for p, i := range idx {
		st[p] = afsState{job: &s.Jobs[i], active: true, rem: s.Jobs[i].remaining()}
		st[p].refresh()
	}
	free := s.GPUs
	for free > 0 {
		w := -1
		for p := range st {
			if st[p].active && (w < 0 || beats(&st[w], &st[p])) {
				w = p
			}
		}
		if w < 0 {
			break
		}
		a := &st[w]
		switch {
		case a.n > 0:
			a.n++
			free--
		case a.job.Min <= free:
			a.n = a.job.Min
			free -= a.job.Min
		default:
			a.active = false
		}
		if a.active && (a.n >= a.job.Max || !(a.job.S(a.n+1) > a.job.S(a.n))) {
			a.active = false
		}
		a.refresh()
	}
	out := api.Allocation{}
	for _, a := range st {
		out[a.job.ID] = a.n
	}
	return out
}

func TestAFSLTournamentMatchesNaiveReplay(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for iter := range 3000 {
		s := Snapshot{GPUs: r.IntN(80)}
		for i := range r.IntN(30) {
			lo := 1 + r.IntN(4)
			j := Job{
				ID: api.JobID(fmt.Sprintf("j%02d", i)), Min: lo, Max: lo + r.IntN(10),
				Submitted: time.Unix(int64(r.IntN(5)), 0),
				Remaining: float64(r.IntN(6)) * 1000, // many ties on purpose
			}
			switch r.IntN(4) {
			case 0:
				j.Remaining = math.Inf(1)
			case 1:
				f := r.Float64() * 0.4
				j.Speedup = func(n int) float64 { return float64(n) / (1 + f*float64(n-1)) }
			case 2:
				tab := []float64{1, 1 + r.Float64(), 1 + 2*r.Float64(), 2 + r.Float64()}
				j.Speedup = func(n int) float64 { return tab[min(n, len(tab))-1] }
			}
			s.Jobs = append(s.Jobs, j)
		}
		got, err := AFSL{}.Allocate(s)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(naiveAFSL(&s), got.Allocation); diff != "" {
			t.Fatalf("iteration %d (-naive,+fast):\n%s", iter, diff)
		}
	}
}
