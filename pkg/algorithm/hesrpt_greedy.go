package algorithm

import (
	"math"
	"math/bits"
	"slices"
)

// HeSRPT's greedy hands out GPUs a hull segment at a time, to the largest
// weighted gain per GPU. Every job's segments come in non-increasing value
// (its hull is concave, and the hysteresis raises only a prefix of it), so
// the greedy visits all the segments of all the jobs in one order: value,
// then job ID, then position in the hull. It runs in two phases.
//
//   - Leading segments. Until the first segment that does not fit whole,
//     every segment is granted whole. Which segments those are is found by
//     a weighted selection in linear time, without ordering them; they are
//     ordered only when the nodes' free GPUs must be tracked one by one
//     (workers of several GPUs), where the order decides which nodes fill.
//   - The rest. From there, as before this phase existed, a heap serves the
//     next segment of every job that can still grow, cutting a segment that
//     does not fit to the largest part that does; few segments are left.
//
// Both phases follow the order above, so the allocation is the one a heap
// alone would give (TestHeSRPTLeadingSegments), at a fraction of the time
// at 10 000 jobs (docs/policies.md, Performance).

// hsSeg is a hull segment in the greedy: the job's index, the hull vertex
// it leads to (an offset from the job's first vertex), its value and the
// GPUs it adds.
type hsSeg struct {
	value float64
	job   int32
	to    int32
	gpus  int
}

// fill runs the greedy on capacity c, over the jobs not held at a floor.
// leading turns the first phase on; without it, the heap does all the work
// (the reference the tests compare with).
func (hs *hsState) fill(c *capacity, hysteresis float64, h *hsHeap, segs *[]hsSeg, leading bool) {
	if c.free <= 0 {
		// Nothing to hand out: every segment left adds GPUs. Most of
		// unblock's trials grant every GPU ahead of the greedy, and
		// listing a million segments to grant none was most of their
		// cost at 100 000 jobs.
		return
	}
	st := hs.st
	if leading {
		*segs = hs.contenders(*segs, hysteresis, c.free)
		lead := (*segs)[:hs.leading(*segs, c.free)]
		if c.byFree != nil {
			hs.sort(lead)
		}
		for i := range lead {
			g := &lead[i]
			a := &st[g.job]
			v := hs.vertex(a.lo + g.to)
			if c.byFree == nil {
				// In any order: only the count of free GPUs changes.
				c.take(int(a.k), g.gpus/int(a.k))
				if g.to >= a.next {
					a.n, a.next, a.last = v.x, g.to+1, g.value
				}
				continue
			}
			if !c.fits(int(a.k), v.x-a.n) {
				break // the heap cuts it, and serves what follows in order
			}
			c.take(int(a.k), v.x-a.n)
			a.n, a.next, a.last = v.x, g.to+1, g.value
		}
	}
	h.q = h.q[:0]
	for i := range st {
		a := &st[i]
		if a.next > 0 && a.lo+a.next < a.hi {
			h.q = append(h.q, hsItem{hs.value(a, hysteresis), int32(i)})
		}
	}
	h.init()
	for len(h.q) > 0 && c.free > 0 {
		it := h.pop()
		a := &st[it.job]
		a.last = it.value
		if hs.grow(a, c) {
			h.push(hsItem{hs.value(a, hysteresis), it.job})
		}
	}
}

// bandBits is how many leading bits of a segment's order key (descending
// of its value) contenders groups segments by: the sign, the exponent and
// four bits of the mantissa, sixteen bands to each power of two.
const bandBits = 16

// bandsFrom is the most segments (counted by the hulls' vertices) listed
// without bands: the bands' counts take 0.5 MiB, which pays only when they
// leave most of several megabytes of segments out (at 100 000 jobs they
// leave out nine in ten of a million; at 1 000 jobs, with the bands from
// 65 536 segments on, a round took 27% more memory). A variable, so that tests can try the bands on small
// snapshots.
var bandsFrom = 1 << 18

// band is the group of segments of value v in contenders: bands in
// increasing order hold values in decreasing order. Zero of either sign
// is one value to the greedy, so both go in +0's band.
func band(v float64) int {
	if v == 0 {
		v = 0
	}
	return int(descending(v) >> (64 - bandBits))
}

// contenders returns, in segs (reused when large enough), the segments
// that may lead: those of every band up to the first band with which the
// segments so far add up to more than free GPUs. Every segment the greedy
// visits before the first that does not fit lies in those bands, as does
// that one; the other segments, most of a large cluster's (a million at
// 100 000 jobs), are never listed. Bands come from a first pass over the
// segments, which counts their GPUs and segments per band without keeping
// them. Up to bandsFrom segments, all are listed.
func (hs *hsState) contenders(segs []hsSeg, hysteresis float64, free int) []hsSeg {
	if most := len(hs.hx) - len(hs.st); most <= bandsFrom { // one a vertex but the origins
		if segs == nil {
			// Sized once: the hulls rebuilt by later passes are rarely
			// longer, and append grows it then.
			segs = make([]hsSeg, 0, most)
		}
		segs = segs[:0]
		hs.eachSegment(hysteresis, func(i int, to int32, val float64, gpus int) bool {
			segs = append(segs, hsSeg{val, int32(i), to, gpus})
			return true
		})
		return segs
	}
	if hs.bandGPUs == nil {
		hs.bandGPUs = make([]int32, 1<<bandBits)
		hs.bandSegs = make([]int32, 1<<bandBits)
	}
	clear(hs.bandGPUs)
	clear(hs.bandSegs)
	nan := 0 // segments of value NaN, which the bands do not order: then all are kept
	hs.eachSegment(hysteresis, func(i int, to int32, val float64, gpus int) bool {
		if math.IsNaN(val) {
			nan++
			return true
		}
		b := band(val)
		hs.bandGPUs[b] += int32(min(gpus, math.MaxInt32-int(hs.bandGPUs[b]))) // saturating: past free either way
		hs.bandSegs[b]++
		return true
	})
	last, n, sum := len(hs.bandGPUs)-1, nan, 0
	for b, g := range hs.bandGPUs {
		n += int(hs.bandSegs[b])
		if sum += int(g); sum > free && nan == 0 && b < last {
			last = b
			break
		}
	}
	if cap(segs) < n {
		segs = make([]hsSeg, 0, n+n/4) // room for later passes
	}
	segs = segs[:0]
	hs.eachSegment(hysteresis, func(i int, to int32, val float64, gpus int) bool {
		if !math.IsNaN(val) && band(val) > last {
			return false // and so are the job's later segments, of no higher value
		}
		segs = append(segs, hsSeg{val, int32(i), to, gpus})
		return true
	})
	return segs
}

// eachSegment calls f with every segment of the jobs that take part in
// the greedy, job by job in falling value: the job's index, the hull
// vertex the segment leads to (an offset from the job's first vertex), its
// value and the GPUs it adds. f returning false skips the rest of the
// job's segments.
func (hs *hsState) eachSegment(hysteresis float64, f func(i int, to int32, val float64, gpus int) bool) {
	for i := range hs.st {
		a := &hs.st[i]
		if a.next <= 0 {
			continue
		}
		k := int(a.k)
		next, last := a.next, a.last
		for a.lo+a.next < a.hi {
			val := hs.value(a, hysteresis)
			u, v := hs.vertex(a.lo+a.next-1), hs.vertex(a.lo+a.next)
			// A job granted a size ahead of the greedy (unblock's trials)
			// may stand inside its first segment: only the rest is left.
			from := max(u.x, a.n)
			if !f(i, a.next, val, (v.x-from)*k) {
				break
			}
			a.last = val
			a.next++
		}
		a.next, a.last = next, last
	}
}

// before reports whether the greedy visits segment x before segment y.
func (hs *hsState) before(x, y *hsSeg) bool {
	if x.value != y.value {
		return x.value > y.value
	}
	if x.job != y.job {
		return hs.jobs[x.job].ID < hs.jobs[y.job].ID
	}
	return x.to < y.to
}

// sort puts segs in the greedy's order: a stable radix sort on the bits of
// the values, highest first, then the rare runs of equal values again with
// the whole order, where job IDs decide. It runs in linear time where a
// comparison sort of the tens of thousands of segments of a large cluster
// took longer than the heap it replaces.
func (hs *hsState) sort(segs []hsSeg) {
	if len(segs) < 2 {
		return
	}
	if cap(hs.spare) < len(segs) {
		hs.spare = make([]hsSeg, len(segs))
	}
	src, dst := segs, hs.spare[:len(segs)]
	for shift := 0; shift < 64; shift += 8 {
		var count [256]int
		for i := range src {
			count[byte(descending(src[i].value)>>shift)]++
		}
		if count[byte(descending(src[0].value)>>shift)] == len(src) {
			continue // every value has this byte
		}
		pos := 0
		for b, c := range count {
			count[b] = pos
			pos += c
		}
		for i := range src {
			b := byte(descending(src[i].value) >> shift)
			dst[count[b]] = src[i]
			count[b]++
		}
		src, dst = dst, src
	}
	if &src[0] != &segs[0] {
		copy(segs, src)
	}
	for i := 0; i < len(segs); {
		j := i + 1
		for j < len(segs) && segs[j].value == segs[i].value {
			j++
		}
		if j-i > 1 {
			slices.SortFunc(segs[i:j], func(x, y hsSeg) int {
				if hs.before(&x, &y) {
					return -1
				}
				return 1
			})
		}
		i = j
	}
}

// descending maps a value to a key that orders as the value does, reversed.
func descending(v float64) uint64 {
	b := math.Float64bits(v)
	if b>>63 != 0 {
		return b // negative: larger magnitudes come later
	}
	return ^(b | 1<<63)
}

// leading reorders segs so that its first n segments are those the greedy
// visits before the first one that does not fit in free GPUs, and returns
// n. It is a weighted quickselect, linear in expectation; too many bad
// pivots (each keeping more than 7/8 of what is left) fall back on
// sorting what is left.
func (hs *hsState) leading(segs []hsSeg, free int) int {
	lo, hi := 0, len(segs)
	for bad := bits.Len(uint(len(segs))); hi > lo; {
		if bad == 0 {
			rest := segs[lo:hi]
			hs.sort(rest)
			for i := range rest {
				if rest[i].gpus > free {
					return lo + i
				}
				free -= rest[i].gpus
			}
			return hi
		}
		n := hi - lo
		m, w := hs.partition(segs[lo:hi])
		m += lo
		switch {
		case w > free:
			hi = m
		case segs[m].gpus > free-w:
			return m
		default:
			free -= w + segs[m].gpus
			lo = m + 1
		}
		if 8*(hi-lo) > 7*n {
			bad--
		}
	}
	return lo
}

// partition moves a pivot (the median of the first, middle and last
// segments) to its place in the greedy's order, the segments before it to
// its left and the others to its right; it returns the pivot's index and
// the GPUs of the segments on its left.
func (hs *hsState) partition(s []hsSeg) (int, int) {
	last := len(s) - 1
	mid := last / 2
	if hs.before(&s[mid], &s[0]) {
		s[mid], s[0] = s[0], s[mid]
	}
	if hs.before(&s[last], &s[mid]) {
		s[last], s[mid] = s[mid], s[last]
		if hs.before(&s[mid], &s[0]) {
			s[mid], s[0] = s[0], s[mid]
		}
	}
	s[mid], s[last] = s[last], s[mid]
	p := &s[last]
	m, w := 0, 0
	for i := range last {
		if hs.before(&s[i], p) {
			w += s[i].gpus
			s[i], s[m] = s[m], s[i]
			m++
		}
	}
	s[m], s[last] = s[last], s[m]
	return m, w
}

// hsItem is a job in the greedy's queue with the value of its next segment.
type hsItem struct {
	value float64
	job   int32
}

// hsHeap is a max-heap of items by value, ties to the smaller job ID, so
// the result does not depend on the order of the snapshot's jobs.
type hsHeap struct {
	q    []hsItem
	jobs []Job
}

func (h *hsHeap) before(a, b int) bool {
	if h.q[a].value != h.q[b].value {
		return h.q[a].value > h.q[b].value
	}
	return h.jobs[h.q[a].job].ID < h.jobs[h.q[b].job].ID
}

// init orders the items already in q.
func (h *hsHeap) init() {
	for i := len(h.q)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *hsHeap) push(x hsItem) {
	h.q = append(h.q, x)
	q := h.q
	for i := len(q) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.before(i, p) {
			break
		}
		q[i], q[p] = q[p], q[i]
		i = p
	}
}

func (h *hsHeap) pop() hsItem {
	q := h.q
	top := q[0]
	last := len(q) - 1
	q[0] = q[last]
	h.q = q[:last]
	h.down(0)
	return top
}

func (h *hsHeap) down(i int) {
	q := h.q
	for {
		l, b := 2*i+1, i
		if l < len(q) && h.before(l, b) {
			b = l
		}
		if l+1 < len(q) && h.before(l+1, b) {
			b = l + 1
		}
		if b == i {
			return
		}
		q[i], q[b] = q[b], q[i]
		i = b
	}
}
