package algorithm

import (
	"math"
	"slices"
)

// tournament keeps AFS-L's left-to-right tournament cheap to replay. Only the
// winner's state changes after a grant, so the tournament is replayed from
// the winner's position onwards. Two facts make the replay short:
//
//   - Jobs holding GPUs ("running") are replayed one by one; nz lists their
//     positions, keys their comparison values in a dense slice, and
//     winnerAt[i] (kept at checkpoints) is the winner over positions ≤ nz[i].
//   - The waiting jobs (no GPUs) between two running jobs — a gap — are
//     decided in one step. If the incoming winner X runs, the gap's first
//     job challenges it with a relative gain of 1, and the same comparison
//     repeats for every job of the gap, so either X keeps the lead through
//     the gap or the first challenger takes it; from then on only waiting
//     jobs meet, and the one with the least remaining work wins. Either way
//     the gap's result is X or the gap's least-remaining job, which is
//     cached per gap (gapMin) and refreshed with a segment tree when a
//     grant changes the gap.
//
// A replay therefore costs O(R) for R running jobs after the winner, however
// many jobs wait, and an update O(R + log N).
type tournament struct {
	st       []afsState
	nz       []int    // positions of active running jobs, ascending
	keys     []afsKey // keys[i] compares the job at nz[i]
	winnerAt []int    // winnerAt[i]: tournament winner over positions ≤ nz[i], at checkpoints
	gapMin   []int    // gapMin[i]: least-remaining waiting job before nz[i] (after nz[i-1]); one extra for the tail
	zeros    minTree
	final    int
}

// afsKey is what a running job brings to a comparison, kept in a dense slice
// so the replay loop stays in cache.
type afsKey struct{ length, gNew, gCur float64 }

func keyOf(a *afsState) afsKey { return afsKey{a.length, a.gNew, a.gCur} }

func newTournament(s *Snapshot) *tournament {
	idx := orderByKeys(s.Jobs, noKey)
	t := &tournament{st: make([]afsState, len(idx))}
	for p, i := range idx {
		j := &s.Jobs[i]
		t.st[p] = afsState{job: j, active: true, rem: j.remaining()}
		t.st[p].refresh()
	}
	t.zeros = newMinTree(t.st)
	t.gapMin = []int{t.zeros.argmin(0, len(t.st))}
	t.replay(0)
	return t
}

// winner returns the position of the job that gets the next GPU, or -1.
func (t *tournament) winner() int { return t.final }

// gap returns the positions [lo, hi) of gap i.
func (t *tournament) gap(i int) (int, int) {
	lo, hi := 0, len(t.st)
	if i > 0 {
		lo = t.nz[i-1] + 1
	}
	if i < len(t.nz) {
		hi = t.nz[i]
	}
	return lo, hi
}

func (t *tournament) refreshGap(i int) {
	lo, hi := t.gap(i)
	t.gapMin[i] = t.zeros.argmin(lo, hi)
}

// update records that the job at position w changed (it was waiting before
// the grant if wasZero) and replays the tournament from it.
func (t *tournament) update(w int, wasZero bool) {
	a := &t.st[w]
	k, found := slices.BinarySearch(t.nz, w)
	if wasZero {
		t.zeros.clear(w)
	}
	switch {
	case a.active && a.n > 0 && !found: // started: its gap splits in two
		t.nz = slices.Insert(t.nz, k, w)
		t.keys = slices.Insert(t.keys, k, keyOf(a))
		t.winnerAt = slices.Insert(t.winnerAt, k, -1)
		t.gapMin = slices.Insert(t.gapMin, k+1, -1)
		t.refreshGap(k)
		t.refreshGap(k + 1)
	case a.active && found: // grew
		t.keys[k] = keyOf(a)
	case found: // left the tournament while running: two gaps merge
		t.nz = slices.Delete(t.nz, k, k+1)
		t.keys = slices.Delete(t.keys, k, k+1)
		t.winnerAt = slices.Delete(t.winnerAt, k, k+1)
		t.gapMin = slices.Delete(t.gapMin, k+1, k+2)
		t.refreshGap(k)
	default: // left the tournament while waiting
		t.refreshGap(k)
	}
	t.replay(k)
}

// checkpoint: winnerAt is kept only for every checkpoint-th running job
// (indices i with i%checkpoint == checkpoint-1); a replay starts at the
// checkpoint before k. Storing every entry cost more than the few extra
// comparisons.
const checkpoint = 8

// replay recomputes the winners from index k of nz (rounded down to a
// checkpoint), and the final winner.
func (t *tournament) replay(k int) {
	k -= k % checkpoint
	x, xWaits := -1, false
	var xk afsKey // x's key while x runs
	if k > 0 {
		x = t.winnerAt[k-1]
		xk, xWaits = keyOf(&t.st[x]), t.st[x].n == 0
	}
	for i := k; ; i++ {
		if z := t.gapMin[i]; z >= 0 {
			switch {
			case x < 0:
				x, xWaits = z, true
			case xWaits:
				if t.st[z].rem < t.st[x].rem {
					x = z
				}
			case xk.gCur < 1: // the gap's first job takes the lead
				x, xWaits = z, true
			}
		}
		if i == len(t.nz) {
			break
		}
		y := t.keys[i]
		var yWins bool
		switch {
		case x < 0:
			yWins = true
		case xWaits:
			// x's length is infinite. A finite y is the shorter job A and
			// x, with relative gain 1, is B; an infinite y ties, so x stays
			// A with an infinite gain y cannot beat.
			yWins = !math.IsInf(y.length, 1) && y.gCur >= 1
		default:
			// Gains are never NaN, so !(a > b) is a <= b. If y is the
			// shorter job (A), x (B) keeps the lead only with a larger
			// relative gain; otherwise y (B) needs the larger one.
			// Computed without branches: which case applies is close to
			// random, and mispredicted branches dominated this loop.
			shorter := b2i(y.length < xk.length)
			yWins = shorter&b2i(xk.gNew <= y.gCur)|(1-shorter)&b2i(y.gNew > xk.gCur) != 0
		}
		if yWins {
			x, xk, xWaits = t.nz[i], y, false
		}
		if i%checkpoint == checkpoint-1 {
			t.winnerAt[i] = x
		}
	}
	t.final = x
}

// minTree is a segment tree over positions answering "which active waiting
// job in [lo, hi) has the least remaining work" (ties to the lowest
// position).
type minTree struct {
	size int
	node []int32 // position, or -1
	st   []afsState
}

func newMinTree(st []afsState) minTree {
	size := 1
	for size < len(st) {
		size *= 2
	}
	m := minTree{size: size, node: make([]int32, 2*size), st: st}
	for i := range m.node {
		m.node[i] = -1
	}
	for p := range st {
		if st[p].active && st[p].n == 0 {
			m.node[size+p] = int32(p)
		}
	}
	for i := size - 1; i >= 1; i-- {
		m.node[i] = m.better(m.node[2*i], m.node[2*i+1])
	}
	return m
}

func (m *minTree) better(a, b int32) int32 {
	switch {
	case a < 0:
		return b
	case b < 0:
		return a
	case m.st[b].rem < m.st[a].rem || (m.st[b].rem == m.st[a].rem && b < a):
		return b
	}
	return a
}

// clear removes position p.
func (m *minTree) clear(p int) {
	i := m.size + p
	m.node[i] = -1
	for i /= 2; i >= 1; i /= 2 {
		m.node[i] = m.better(m.node[2*i], m.node[2*i+1])
	}
}

// argmin returns the best position in [lo, hi), or -1.
func (m *minTree) argmin(lo, hi int) int {
	best := int32(-1)
	for l, r := lo+m.size, hi+m.size; l < r; l, r = l/2, r/2 {
		if l&1 == 1 {
			best = m.better(best, m.node[l])
			l++
		}
		if r&1 == 1 {
			r--
			best = m.better(best, m.node[r])
		}
	}
	return int(best)
}

// b2i is 1 for true and 0 for false; the compiler emits a flag move, not a
// branch.
func b2i(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}
