package algorithm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
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

// randomAFSLSnapshot mixes unknown and tied remaining times with linear,
// Amdahl, plateau and dipping curves, so the tournament meets every kind of
// comparison. Large snapshots span many blocks of positions.
func randomAFSLSnapshot(r *rand.Rand, large bool) Snapshot {
	jobs, gpus := r.IntN(30), r.IntN(80)
	if large {
		jobs, gpus = 64+r.IntN(400), r.IntN(1200)
	}
	s := Snapshot{GPUs: gpus}
	for i := range jobs {
		lo := 1 + r.IntN(4)
		j := Job{
			ID: api.JobID(fmt.Sprintf("j%03d", i)), Min: lo, Max: lo + r.IntN(10),
			Submitted: time.Unix(int64(r.IntN(5)), 0),
			Remaining: float64(r.IntN(6)) * 1000, // many ties on purpose
		}
		if large && r.IntN(2) == 0 {
			j.Remaining = r.Float64() * 1e5
		}
		switch r.IntN(5) {
		case 0:
			j.Remaining = math.Inf(1)
		case 1:
			f := r.Float64() * 0.4
			j.Speedup = func(n int) float64 { return float64(n) / (1 + f*float64(n-1)) }
		case 2:
			tab := []float64{1, 1 + r.Float64(), 1 + 2*r.Float64(), 2 + r.Float64()}
			j.Speedup = func(n int) float64 { return tab[min(n, len(tab))-1] }
		case 3: // slows down past a node, then recovers: gains rise again
			node, dip := 1+r.IntN(4), r.Float64()
			j.Speedup = func(n int) float64 {
				if n <= node {
					return float64(n)
				}
				return float64(node) - dip + 1.5*float64(n-node)
			}
		}
		s.Jobs = append(s.Jobs, j)
	}
	return s
}

func TestAFSLTournamentMatchesNaiveReplay(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for iter := range 3060 {
		s := randomAFSLSnapshot(r, iter >= 3000)
		got, err := AFSL{}.Allocate(s)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(naiveAFSL(&s), got.Allocation); diff != "" {
			t.Fatalf("iteration %d (-naive,+fast):\n%s", iter, diff)
		}
	}
}

// A block's summary may be wider than its jobs, never narrower: after every
// grant it must cover each running job's key and flag each gap holding a
// waiting job, with no less remaining work than the summary's least, and
// its start must be the first running job at or past it.
func TestAFSLBlockSummariesCoverTheirJobs(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for iter := range 40 {
		s := randomAFSLSnapshot(r, true)
		tr := newTournament(&s)
		res := newResult(len(s.Jobs))
		c := newCapacity(&s)
		for grant := 0; c.free > 0 && tr.grant(&c, &res); grant++ {
			for b := range tr.blocks {
				bl := &tr.blocks[b]
				lo, hi := tr.blockStart[b], tr.blockStart[b+1]
				if want, _ := slices.BinarySearch(tr.nz, b*blockJobs); lo != want {
					t.Fatalf("iteration %d, grant %d: block %d starts at %d, want %d", iter, grant, b, lo, want)
				}
				for i := lo; i < hi; i++ {
					y := tr.keys[i]
					finite := !math.IsInf(y.length, 1)
					if y.length < bl.minLen || y.length > bl.maxLen || y.gCur > bl.maxGCur || y.gNew > bl.maxGNew ||
						finite && y.gCur > bl.maxGCurFinite || tr.gapMin[i] >= 0 && (!bl.gaps || tr.st[tr.gapMin[i]].rem < bl.minGapRem) {
						t.Fatalf("iteration %d, grant %d: block %d's summary %+v misses job %d (key %+v, gap %d)", iter, grant, b, *bl, tr.nz[i], y, tr.gapMin[i])
					}
				}
			}
		}
	}
}
