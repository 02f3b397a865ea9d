package algorithm

import (
	"math"
	"slices"
)

// tournament keeps AFS-L's left-to-right tournament cheap to replay. Only the
// winner's state changes after a grant, so the tournament is replayed from
// the winner onwards. Three things make the replay short:
//
//   - Jobs holding GPUs ("running") are replayed one by one; nz lists their
//     positions and keys their comparison values in a dense slice.
//   - The waiting jobs (no GPUs) between two running jobs — a gap — are
//     decided in one step. If the incoming winner X runs, the gap's first
//     job challenges it with a relative gain of 1, and the same comparison
//     repeats for every job of the gap, so either X keeps the lead through
//     the gap or the first challenger takes it; from then on only waiting
//     jobs meet, and the one with the least remaining work wins. Either way
//     the gap's result is X or the gap's least-remaining job, which is
//     cached per gap (gapMin) and refreshed with a segment tree when a
//     grant changes the gap.
//   - Positions are cut into blocks of blockJobs. Each block keeps the
//     winner coming into it (a replay starts at the winner's block) and a
//     summary of its running jobs — their least and greatest length and
//     relative gains — from which a whole block is often seen to be unable
//     to take the lead, and is skipped. The lead changes about twice per
//     replay, so most blocks are skipped. Blocks are cut by position, not by
//     index in nz, so a job starting or leaving touches one summary.
//
// A replay therefore costs at most O(R) for R running jobs after the winner,
// however many jobs wait, and usually far less; an update O(blockJobs +
// blocks + log N).
type tournament struct {
	st         []afsState
	nz         []int    // positions of active running jobs, ascending
	keys       []afsKey // keys[i] compares the job at nz[i]
	gapMin     []int    // gapMin[i]: least-remaining waiting job before nz[i] (after nz[i-1]); one extra for the tail
	blockStart []int    // blockStart[b]: index in nz of the first job at a position ≥ b·blockJobs; one extra for the end
	blocks     []block
	zeros      minTree
	final      int
}

// blockJobs is the number of positions a block covers: large enough that a
// block holds several running jobs, small enough that few are walked when
// one cannot be skipped.
const blockJobs = 64

// afsKey is what a running job brings to a comparison, kept in a dense slice
// so the replay loop stays in cache.
type afsKey struct{ length, gNew, gCur float64 }

func keyOf(a *afsState) afsKey { return afsKey{a.length, a.gNew, a.gCur} }

// block summarises the running jobs of blockJobs positions, enough to tell
// that none of them can take the lead from a given winner.
type block struct {
	in               int     // the tournament's winner coming into the block, -1 for none
	gaps             bool    // a gap before one of them holds a waiting job
	minGapRem        float64 // the least remaining work of a waiting job in those gaps
	minLen, maxLen   float64 // their lengths
	maxGCur, maxGNew float64 // their relative gains
	maxGCurFinite    float64 // the largest gCur among those of finite length
	idle             int     // walks that found no new leader since the summary was last recomputed
}

// tightenAfter is how many walks of a block that find no new leader make
// its summary recomputed.
const tightenAfter = 4

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
	n := (len(t.st) + blockJobs - 1) / blockJobs
	t.blockStart = make([]int, n+1)
	t.blocks = make([]block, n)
	for b := range t.blocks {
		t.summarise(b)
	}
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
// the grant if wasZero) and replays the tournament from its block.
func (t *tournament) update(w int, wasZero bool) {
	a := &t.st[w]
	b := w / blockJobs
	k, found := slices.BinarySearch(t.nz[t.blockStart[b]:t.blockStart[b+1]], w)
	k += t.blockStart[b]
	if wasZero {
		t.zeros.clear(w)
	}
	switch {
	case a.active && a.n > 0 && !found: // started: its gap splits in two
		t.nz = slices.Insert(t.nz, k, w)
		t.keys = slices.Insert(t.keys, k, keyOf(a))
		t.gapMin = slices.Insert(t.gapMin, k+1, -1)
		t.refreshGap(k)
		t.refreshGap(k + 1)
		t.shift(b, 1)
		t.blocks[b].widen(&t.keys[k])
		if z := t.gapMin[k]; z >= 0 {
			t.blocks[b].widenGap(t.st[z].rem)
		}
	case a.active && found: // grew
		t.keys[k] = keyOf(a)
		t.blocks[b].widen(&t.keys[k])
	case found: // left the tournament while running: two gaps merge
		t.nz = slices.Delete(t.nz, k, k+1)
		t.keys = slices.Delete(t.keys, k, k+1)
		t.gapMin = slices.Delete(t.gapMin, k+1, k+2)
		t.refreshGap(k)
		t.shift(b, -1)
		if z := t.gapMin[k]; k < len(t.nz) && z >= 0 {
			t.blocks[t.nz[k]/blockJobs].widenGap(t.st[z].rem)
		}
	default: // left the tournament while waiting: its gap shrinks
		t.refreshGap(k)
	}
	t.replay(b)
}

// shift moves the starts of the blocks after b by d after a running job of
// block b was inserted or deleted.
func (t *tournament) shift(b, d int) {
	for i := b + 1; i < len(t.blockStart); i++ {
		t.blockStart[i] += d
	}
}

// summarise recomputes block b's summary of its running jobs and gaps.
func (t *tournament) summarise(b int) {
	inf := math.Inf(1)
	bl := &t.blocks[b]
	bl.minLen, bl.maxLen, bl.maxGCur, bl.maxGNew, bl.maxGCurFinite = inf, -inf, -inf, -inf, -inf
	lo, hi := t.blockStart[b], t.blockStart[b+1]
	for i := lo; i < hi; i++ {
		bl.widen(&t.keys[i])
	}
	bl.gaps, bl.minGapRem = false, inf
	for _, z := range t.gapMin[lo:hi] {
		if z >= 0 {
			bl.widenGap(t.st[z].rem)
		}
	}
}

// widenGap extends the summary to cover a gap whose least remaining work
// is rem.
func (bl *block) widenGap(rem float64) {
	bl.gaps = true
	bl.minGapRem = min(bl.minGapRem, rem)
}

// widen extends the summary to cover key y. Summaries are only ever
// widened as jobs grow, start and leave (a gap that loses a job keeps the
// summary's least remaining work) — a wider summary still proves what it
// proves, it just skips less — and are recomputed when a block is walked
// for nothing too often.
func (bl *block) widen(y *afsKey) {
	if y.length < bl.minLen {
		bl.minLen = y.length
	}
	if y.length > bl.maxLen {
		bl.maxLen = y.length
	}
	if y.gCur > bl.maxGCur {
		bl.maxGCur = y.gCur
	}
	if y.gNew > bl.maxGNew {
		bl.maxGNew = y.gNew
	}
	if y.gCur > bl.maxGCurFinite && !math.IsInf(y.length, 1) {
		bl.maxGCurFinite = y.gCur
	}
}

// quiet reports whether no job or gap of the block can take the lead from x
// (key xk, waiting if xWaits, of remaining work xRem), so the block can be
// skipped. It may say no when none would: the block is then played job by
// job. A gap takes the lead from a waiting x with less remaining work, and
// from a running x whose relative gain is below a waiting job's 1 (see
// meetGap).
func (bl *block) quiet(xk afsKey, xWaits bool, xRem float64) bool {
	if xWaits {
		return !(bl.maxGCurFinite >= 1) && !(bl.minGapRem < xRem)
	}
	if bl.gaps && xk.gCur < 1 {
		return false
	}
	shorterWins := bl.minLen < xk.length && bl.maxGCur >= xk.gNew
	longerWins := bl.maxLen >= xk.length && bl.maxGNew > xk.gCur
	return !shorterWins && !longerWins
}

// replay recomputes the winners from block b on, and the final winner.
func (t *tournament) replay(b int) {
	x, xWaits := -1, false
	var xk afsKey // x's key while x runs
	if b > 0 {
		if x = t.blocks[b].in; x >= 0 {
			xk, xWaits = keyOf(&t.st[x]), t.st[x].n == 0
		}
	}
	for ; b < len(t.blocks); b++ {
		bl := &t.blocks[b]
		bl.in = x
		lo, hi := t.blockStart[b], t.blockStart[b+1]
		if lo == hi || x >= 0 && bl.quiet(xk, xWaits, t.st[x].rem) {
			continue
		}
		x0 := x
		for i := lo; i < hi; i++ {
			if z := t.gapMin[i]; z >= 0 {
				x, xk, xWaits = t.meetGap(z, x, xk, xWaits)
			}
			y := t.keys[i]
			var yWins bool
			switch {
			case x < 0:
				yWins = true
			case xWaits:
				// x's length is infinite. A finite y is the shorter job A
				// and x, with relative gain 1, is B; an infinite y ties, so
				// x stays A with an infinite gain y cannot beat.
				yWins = !math.IsInf(y.length, 1) && y.gCur >= 1
			default:
				// Gains are never NaN, so !(a > b) is a <= b. If y is the
				// shorter job (A), x (B) keeps the lead only with a larger
				// relative gain; otherwise y (B) needs the larger one.
				// Computed without branches: which case applies is close
				// to random, and mispredicted branches dominated this loop.
				shorter := b2i(y.length < xk.length)
				yWins = shorter&b2i(xk.gNew <= y.gCur)|(1-shorter)&b2i(y.gNew > xk.gCur) != 0
			}
			if yWins {
				x, xk, xWaits = t.nz[i], y, false
			}
		}
		// Walked for nothing: the summary has grown loose. Tightening it
		// costs a second pass, so it waits for the fourth such walk; at
		// 1 000 jobs, tightening after every one measured 8% slower
		// overall and never tightening 50% slower.
		if x == x0 {
			if bl.idle++; bl.idle == tightenAfter {
				bl.idle = 0
				t.summarise(b)
			}
		}
	}
	if z := t.gapMin[len(t.nz)]; z >= 0 { // the tail gap
		x, _, _ = t.meetGap(z, x, xk, xWaits)
	}
	t.final = x
}

// meetGap plays gap with least-remaining job z against the winner x.
func (t *tournament) meetGap(z, x int, xk afsKey, xWaits bool) (int, afsKey, bool) {
	switch {
	case x < 0:
		return z, xk, true
	case xWaits:
		if t.st[z].rem < t.st[x].rem {
			x = z
		}
	case xk.gCur < 1: // the gap's first job takes the lead
		return z, xk, true
	}
	return x, xk, xWaits
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
