package algorithm

import (
	"math"
	"math/bits"
)

// tournament keeps AFS-L's left-to-right tournament cheap to replay. Only the
// winner's state changes after a grant, so the tournament is replayed from
// the winner onwards. Three things make the replay short:
//
//   - Jobs holding GPUs ("running") are replayed one by one; a bitmask per
//     block marks their positions and keys holds their comparison values by
//     position, so a job starting or leaving moves nothing.
//   - The waiting jobs (no GPUs) between two running jobs — a gap — are
//     decided in one step. If the incoming winner X runs, the gap's first
//     job challenges it with a relative gain of 1, and the same comparison
//     repeats for every job of the gap, so either X keeps the lead through
//     the gap or the first challenger takes it; from then on only waiting
//     jobs meet, and the one with the least remaining work wins. Either way
//     the gap's result is X or the gap's least-remaining job, which is
//     cached per gap (gapMin, at the running job after it) and refreshed
//     with a segment tree when a grant changes the gap.
//   - Positions are cut into blocks of blockJobs. Each block keeps the
//     winner coming into it (a replay starts at the winner's block) and a
//     summary of its running jobs — their least and greatest length and
//     relative gains — and of its gaps, from which a whole block is often
//     seen to be unable to take the lead, and is skipped. The lead changes
//     about twice per replay, so most blocks are skipped. Summaries of
//     midBlocks blocks (mids) and of 64 blocks (supers) skip them by the
//     eight and by the 64: at 100 000 jobs a replay walks about two
//     blocks, and checking every block of a walked super one by one cost
//     more than the walks.
//
// A replay therefore costs at most O(R) for R running jobs after the winner,
// however many jobs wait, and usually far less; an update O(blockJobs +
// blocks/64 + log N).
type tournament struct {
	idx     []int // idx[p]: the snapshot index of the job at position p
	st      []afsState
	running []uint64 // running[b]: bit i marks the active running job at position b·blockJobs+i
	busy    []uint64 // bit b: block b has an active running job
	keys    []afsKey // keys[p] compares the running job at position p
	gapMin  []int32  // gapMin[p]: least-remaining waiting job before running position p (after the running job before it), -1 for none
	tail    int      // the least-remaining waiting job after the last running one, -1 for none
	blocks  []block
	// supers summarise 64 blocks each, so a replay skips them 64 at a
	// time; uniform[s] says the replay last skipped super-block s whole,
	// so its blocks' winner coming in is supers[s].in, not their own.
	// mids and uniformMid do the same for midBlocks blocks, under the
	// super's flag (see in).
	supers     []block
	uniform    []bool
	mids       []block
	uniformMid []bool
	zeros      minTree
	final      int
}

// blockJobs is the number of positions a block covers, one bit each in a
// word: large enough that a block holds several running jobs, small enough
// that few are walked when one cannot be skipped.
const blockJobs = 64

// midBlocks is the number of blocks a mid summarises: a super (64 blocks)
// a replay cannot skip is looked at as 8 mids, and only the blocks of the
// mids it cannot skip one by one.
const midBlocks = 8

// midsPerSuper is the number of mids in a super-block of 64 blocks.
const midsPerSuper = 64 / midBlocks

// afsKey is what a running job brings to a comparison, kept in a dense slice
// so the replay loop stays in cache.
type afsKey struct{ length, gNew, gCur float64 }

func keyOf(a *afsState) afsKey { return afsKey{a.length, a.gNew, a.gCur} }

// block summarises the running jobs of blockJobs positions, and the gaps
// before them, enough to tell that none of them can take the lead from a
// given winner.
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

func newTournament(s *Snapshot, buf *orderBuf) *tournament {
	idx := arrivalOrder(s.Jobs, buf)
	n := len(idx)
	nb := (n + blockJobs - 1) / blockJobs
	t := &tournament{idx: idx, st: make([]afsState, n), running: make([]uint64, nb), busy: make([]uint64, (nb+63)/64),
		keys: make([]afsKey, n), gapMin: make([]int32, n), blocks: make([]block, nb)}
	for p, i := range idx {
		j := &s.Jobs[i]
		t.st[p] = afsState{job: j, active: true, rem: j.remaining()}
		t.st[p].refresh()
	}
	t.zeros = newMinTree(t.st)
	t.tail = t.zeros.argmin(0, n)
	for b := range t.blocks {
		t.summarise(b)
	}
	nm := (nb + midBlocks - 1) / midBlocks
	t.mids, t.uniformMid = make([]block, nm), make([]bool, nm)
	for m := range t.mids {
		t.summariseMid(m)
	}
	t.supers, t.uniform = make([]block, len(t.busy)), make([]bool, len(t.busy))
	for s := range t.supers {
		t.summariseSuper(s)
	}
	t.replay(0)
	return t
}

// summariseSuper recomputes super-block s's summary from its mids'.
func (t *tournament) summariseSuper(s int) {
	sp := &t.supers[s]
	sp.empty()
	for m := s * midsPerSuper; m < min((s+1)*midsPerSuper, len(t.mids)); m++ {
		sp.merge(&t.mids[m])
	}
}

// summariseMid recomputes mid m's summary from its blocks'.
func (t *tournament) summariseMid(m int) {
	md := &t.mids[m]
	md.empty()
	for b := m * midBlocks; b < min((m+1)*midBlocks, len(t.blocks)); b++ {
		md.merge(&t.blocks[b])
	}
}

// empty makes the summary cover nothing, ready to be widened.
func (bl *block) empty() {
	inf := math.Inf(1)
	bl.minLen, bl.maxLen, bl.maxGCur, bl.maxGNew, bl.maxGCurFinite = inf, -inf, -inf, -inf, -inf
	bl.gaps, bl.minGapRem = false, inf
}

// merge widens the summary to cover another's.
func (bl *block) merge(o *block) {
	bl.minLen, bl.maxLen = min(bl.minLen, o.minLen), max(bl.maxLen, o.maxLen)
	bl.maxGCur, bl.maxGNew = max(bl.maxGCur, o.maxGCur), max(bl.maxGNew, o.maxGNew)
	bl.maxGCurFinite = max(bl.maxGCurFinite, o.maxGCurFinite)
	bl.gaps, bl.minGapRem = bl.gaps || o.gaps, min(bl.minGapRem, o.minGapRem)
}

// widen widens block b's summary, and its mid's and super-block's, to
// cover key y.
func (t *tournament) widen(b int, y *afsKey) {
	t.blocks[b].widen(y)
	t.mids[b/midBlocks].widen(y)
	t.supers[b/64].widen(y)
}

// widenGap widens block b's summary, and its mid's and super-block's, to
// cover a gap whose least remaining work is rem.
func (t *tournament) widenGap(b int, rem float64) {
	t.blocks[b].widenGap(rem)
	t.mids[b/midBlocks].widenGap(rem)
	t.supers[b/64].widenGap(rem)
}

// in is the winner coming into block b (-1 for none): its super-block's
// if the last replay to reach it skipped the super-block whole, else its
// mid's if it skipped the mid whole, else the block's own.
func (t *tournament) in(b int) int {
	switch {
	case t.uniform[b/64]:
		return t.supers[b/64].in
	case t.uniformMid[b/midBlocks]:
		return t.mids[b/midBlocks].in
	}
	return t.blocks[b].in
}

// winner returns the position of the job that gets the next GPU, or -1.
func (t *tournament) winner() int { return t.final }

// isRunning reports whether position p holds an active running job.
func (t *tournament) isRunning(p int) bool { return t.running[p/blockJobs]>>(p%blockJobs)&1 == 1 }

func (t *tournament) mark(p int, on bool) {
	b, bit := p/blockJobs, uint64(1)<<(p%blockJobs)
	if on {
		t.running[b] |= bit
	} else {
		t.running[b] &^= bit
	}
	if t.running[b] != 0 {
		t.busy[b/64] |= 1 << (b % 64)
	} else {
		t.busy[b/64] &^= 1 << (b % 64)
	}
}

// before is the last running position before p (p may be the end), or
// -1.
func (t *tournament) before(p int) int {
	b := p / blockJobs
	if b >= len(t.running) {
		b = len(t.running)
	} else if m := t.running[b] & (1<<(p%blockJobs) - 1); m != 0 {
		return b*blockJobs + 63 - bits.LeadingZeros64(m)
	}
	// The last busy block before b.
	w, m := b/64, uint64(0)
	if w < len(t.busy) {
		m = t.busy[w] & (1<<(b%64) - 1)
	}
	for m == 0 {
		if w--; w < 0 {
			return -1
		}
		m = t.busy[w]
	}
	b = w*64 + 63 - bits.LeadingZeros64(m)
	return b*blockJobs + 63 - bits.LeadingZeros64(t.running[b])
}

// after is the first running position after p, or -1.
func (t *tournament) after(p int) int {
	b, off := p/blockJobs, p%blockJobs+1
	if off < 64 {
		if m := t.running[b] >> off << off; m != 0 {
			return b*blockJobs + bits.TrailingZeros64(m)
		}
	}
	b++
	w := b / 64
	if w >= len(t.busy) {
		return -1
	}
	m := t.busy[w] >> (b % 64) << (b % 64)
	for m == 0 {
		if w++; w >= len(t.busy) {
			return -1
		}
		m = t.busy[w]
	}
	b = w*64 + bits.TrailingZeros64(m)
	return b*blockJobs + bits.TrailingZeros64(t.running[b])
}

// refreshGap recomputes the gap before running position p (-1: the tail)
// and returns its least-remaining waiting job.
func (t *tournament) refreshGap(p int) int {
	if p < 0 {
		t.tail = t.zeros.argmin(t.before(len(t.st))+1, len(t.st))
		return t.tail
	}
	z := t.zeros.argmin(t.before(p)+1, p)
	t.gapMin[p] = int32(z)
	return z
}

// update records that the job at position w changed (it was waiting before
// the grant if wasZero) and replays the tournament from its block.
func (t *tournament) update(w int, wasZero bool) {
	a := &t.st[w]
	b := w / blockJobs
	found := t.isRunning(w)
	if wasZero {
		t.zeros.clear(w)
	}
	switch {
	case a.active && a.n > 0 && !found: // started: its gap splits in two
		t.mark(w, true)
		t.keys[w] = keyOf(a)
		t.widen(b, &t.keys[w])
		if z := t.refreshGap(w); z >= 0 {
			t.widenGap(b, t.st[z].rem)
		}
		t.refreshGap(t.after(w)) // only shrinks: its summary still covers it
	case a.active && found: // grew
		t.keys[w] = keyOf(a)
		t.widen(b, &t.keys[w])
	case found: // left the tournament while running: two gaps merge
		t.mark(w, false)
		next := t.after(w)
		if z := t.refreshGap(next); next >= 0 && z >= 0 {
			t.widenGap(next/blockJobs, t.st[z].rem)
		}
	default: // left the tournament while waiting: its gap shrinks
		t.refreshGap(t.after(w))
	}
	t.replay(b)
}

// summarise recomputes block b's summary of its running jobs and gaps.
func (t *tournament) summarise(b int) {
	bl := &t.blocks[b]
	bl.empty()
	for m := t.running[b]; m != 0; m &= m - 1 {
		p := b*blockJobs + bits.TrailingZeros64(m)
		bl.widen(&t.keys[p])
		if z := t.gapMin[p]; z >= 0 {
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
	if b > 0 && b < len(t.blocks) {
		x = t.in(b)
		// The replay walks b's super-block and mid from b on: their
		// blocks before b keep the winner coming in they had.
		sup, mid := b/64, b/midBlocks
		if t.uniform[sup] {
			for m := sup * midsPerSuper; m < mid; m++ {
				t.mids[m].in, t.uniformMid[m] = x, true
			}
		}
		if t.uniform[sup] || t.uniformMid[mid] {
			for i := mid * midBlocks; i < b; i++ {
				t.blocks[i].in = x
			}
		}
	}
	if x >= 0 {
		xk, xWaits = keyOf(&t.st[x]), t.st[x].n == 0
	}
	for b < len(t.blocks) {
		sup := b / 64
		if b%64 == 0 {
			sp := &t.supers[sup]
			sp.in = x
			if t.busy[sup] == 0 || x >= 0 && sp.quiet(xk, xWaits, t.st[x].rem) {
				t.uniform[sup] = true
				b += 64
				continue
			}
		}
		t.uniform[sup] = false
		x0 := x
		end := min((sup+1)*64, len(t.blocks))
		for b < end {
			x, xk, xWaits, b = t.playMid(b, x, xk, xWaits)
		}
		// As for blocks (playBlock), a super-block walked for nothing
		// has its summary recomputed from its mids'.
		if sp := &t.supers[sup]; x == x0 && x0 >= 0 {
			if sp.idle++; sp.idle == tightenAfter {
				sp.idle = 0
				t.summariseSuper(sup)
			}
		}
	}
	if t.tail >= 0 {
		x, _, _ = t.meetGap(t.tail, x, xk, xWaits)
	}
	t.final = x
}

// playMid plays the blocks of b's mid from b on against the winner x
// coming in, skipping the mid whole when b is its first block and none of
// its jobs can take the lead; it returns the winner going out and the
// block after the mid.
func (t *tournament) playMid(b, x int, xk afsKey, xWaits bool) (int, afsKey, bool, int) {
	mid := b / midBlocks
	md := &t.mids[mid]
	end := min((mid+1)*midBlocks, len(t.blocks))
	if b%midBlocks == 0 {
		md.in = x
		// Blocks without running jobs hold no gaps either: nothing to
		// play.
		if t.busy[b/64]>>(b%64)&(1<<midBlocks-1) == 0 || x >= 0 && md.quiet(xk, xWaits, t.st[x].rem) {
			t.uniformMid[mid] = true
			return x, xk, xWaits, end
		}
	}
	t.uniformMid[mid] = false
	x0 := x
	for ; b < end; b++ {
		x, xk, xWaits = t.playBlock(b, x, xk, xWaits)
	}
	if x == x0 && x0 >= 0 {
		if md.idle++; md.idle == tightenAfter {
			md.idle = 0
			t.summariseMid(mid)
		}
	}
	return x, xk, xWaits, end
}

// playBlock plays block b against the winner x coming in and returns the
// winner going out.
func (t *tournament) playBlock(b, x int, xk afsKey, xWaits bool) (int, afsKey, bool) {
	bl := &t.blocks[b]
	bl.in = x
	if t.running[b] == 0 || x >= 0 && bl.quiet(xk, xWaits, t.st[x].rem) {
		return x, xk, xWaits
	}
	x0 := x
	for m := t.running[b]; m != 0; m &= m - 1 {
		i := b*blockJobs + bits.TrailingZeros64(m)
		if z := t.gapMin[i]; z >= 0 {
			x, xk, xWaits = t.meetGap(int(z), x, xk, xWaits)
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
			x, xk, xWaits = i, y, false
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
	return x, xk, xWaits
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
