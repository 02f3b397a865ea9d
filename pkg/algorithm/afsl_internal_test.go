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
			a.n = int32(a.job.Min)
			free -= a.job.Min
		default:
			a.active = false
		}
		if n := int(a.n); a.active && (n >= a.job.Max || !(a.job.S(n+1) > a.job.S(n))) {
			a.active = false
		}
		a.refresh()
	}
	out := api.Allocation{}
	for _, a := range st {
		out[a.job.ID] = int(a.n)
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
	return randomAFSLJobs(r, jobs, gpus, large)
}

// randomAFSLJobs is a snapshot of jobs jobs on gpus GPUs (see
// randomAFSLSnapshot).
func randomAFSLJobs(r *rand.Rand, jobs, gpus int, large bool) Snapshot {
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
	// Over several super-blocks of 64 blocks.
	for iter := range 4 {
		s := randomAFSLJobs(r, 4096+r.IntN(6000), 500+r.IntN(3000), true)
		got, err := AFSL{}.Allocate(s)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(naiveAFSL(&s), got.Allocation); diff != "" {
			t.Fatalf("%d jobs, iteration %d (-naive,+fast):\n%s", len(s.Jobs), iter, diff)
		}
	}
}

// A block's summary (and its mid's and super-block's) may be wider than its
// jobs, never narrower: after every grant it must cover each running job's
// key and flag each gap holding a waiting job, with no less remaining work
// than the summary's least; the running marks, gaps and tail must be those
// of the jobs' states, and the winner coming into each block that of a
// full replay.
func TestAFSLBlockSummariesCoverTheirJobs(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for iter := range 42 {
		s := randomAFSLSnapshot(r, true)
		if iter >= 40 { // several super-blocks
			s = randomAFSLJobs(r, 4096+r.IntN(5000), 500+r.IntN(1500), true)
		}
		tr := newTournament(&s, nil)
		var res Decision
		res.reset(len(s.Jobs))
		c := newCapacity(&s)
		for grant := 0; c.free > 0 && tr.grant(&c, &res); grant++ {
			// The winner coming into each block, as a full replay has it
			// after the last running job before the block (the waiting
			// jobs after that are played with the gap they end).
			w, wRun := -1, -1
			for p := range tr.st {
				if b := p / blockJobs; p%blockJobs == 0 {
					in := tr.in(b)
					if in != wRun {
						t.Fatalf("iteration %d, grant %d: block %d has %d coming in, want %d", iter, grant, b, in, wRun)
					}
				}
				if a := &tr.st[p]; a.active && (w < 0 || beats(&tr.st[w], a)) {
					w = p
				}
				if a := &tr.st[p]; a.active && a.n > 0 {
					wRun = w
				}
			}
			if tr.winner() != w {
				t.Fatalf("iteration %d, grant %d: winner %d, want %d", iter, grant, tr.winner(), w)
			}
			// The gaps by a walk over every position.
			prev, least := -1, -1
			for p := range tr.st {
				a := &tr.st[p]
				running := a.active && a.n > 0
				if running != tr.isRunning(p) {
					t.Fatalf("iteration %d, grant %d: position %d marked running %v, is %v", iter, grant, p, tr.isRunning(p), running)
				}
				if a.active && a.n == 0 && (least < 0 || a.rem < tr.st[least].rem) {
					least = p
				}
				if !running {
					continue
				}
				if got := tr.before(p); got != prev {
					t.Fatalf("iteration %d, grant %d: running job before %d is %d, want %d", iter, grant, p, got, prev)
				}
				if int(tr.gapMin[p]) != least {
					t.Fatalf("iteration %d, grant %d: gap before %d has least %d, want %d", iter, grant, p, tr.gapMin[p], least)
				}
				b := p / blockJobs
				y := tr.keys[p]
				finite := !math.IsInf(y.length, 1)
				for _, bl := range []*block{&tr.blocks[b], &tr.mids[b/midBlocks], &tr.supers[b/64]} {
					if y.length < bl.minLen || y.length > bl.maxLen || y.gCur > bl.maxGCur || y.gNew > bl.maxGNew ||
						finite && y.gCur > bl.maxGCurFinite || least >= 0 && (!bl.gaps || tr.st[least].rem < bl.minGapRem) {
						t.Fatalf("iteration %d, grant %d: block %d's summary (or its mid's or super's) %+v misses job %d (key %+v, gap %d)", iter, grant, b, *bl, p, y, least)
					}
				}
				prev, least = p, -1
			}
			if tr.tail != least {
				t.Fatalf("iteration %d, grant %d: the tail gap has least %d, want %d", iter, grant, tr.tail, least)
			}
		}
	}
}
