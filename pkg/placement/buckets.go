package placement

import (
	"math"
	"math/bits"
	"slices"
)

// buckets indexes nodes by free GPUs so that best-fit and most-free queries
// take a binary search instead of a scan over thousands of nodes. Within a
// bucket the lowest node index (the first name in sort order) wins, which
// keeps every choice deterministic.
//
// A bucket is a set of node indices kept as a bitset with a summary word
// per 64 words, so that filing, removing and finding the lowest node take
// a few word operations whatever the cluster's size (sorted slices moved
// half a bucket of thousands of nodes on every change).
type buckets struct {
	free []int            // distinct free counts, ascending; each bucket non-empty
	sets map[int]*nodeSet // sets[f] holds the nodes with f free GPUs
	n    int              // nodes indexed: 0 to n−1
}

// nodeSet is a set of node indices below a fixed bound.
type nodeSet struct {
	words   []uint64 // bit i%64 of words[i/64]: node i is in the set
	summary []uint64 // bit w%64 of summary[w/64]: words[w] is not 0
	size    int
}

func (s *nodeSet) init(n int) {
	w := (n + 63) / 64
	s.words = make([]uint64, w)
	s.summary = make([]uint64, (w+63)/64)
}

func (s *nodeSet) insert(i int) {
	w := i / 64
	if s.words[w]&(1<<(i%64)) != 0 {
		return
	}
	s.words[w] |= 1 << (i % 64)
	s.summary[w/64] |= 1 << (w % 64)
	s.size++
}

func (s *nodeSet) remove(i int) bool {
	w := i / 64
	if s.words[w]&(1<<(i%64)) == 0 {
		return false
	}
	s.words[w] &^= 1 << (i % 64)
	if s.words[w] == 0 {
		s.summary[w/64] &^= 1 << (w % 64)
	}
	s.size--
	return true
}

func (s *nodeSet) contains(i int) bool { return s.words[i/64]&(1<<(i%64)) != 0 }

// lowest returns the smallest member; the set must not be empty.
func (s *nodeSet) lowest() int {
	for sw, bitsOf := range s.summary {
		if bitsOf != 0 {
			w := sw*64 + bits.TrailingZeros64(bitsOf)
			return w*64 + bits.TrailingZeros64(s.words[w])
		}
	}
	panic("placement: lowest of an empty node set")
}

// newBuckets indexes every node with free[i] > 0.
func newBuckets(free []int) *buckets {
	b := &buckets{n: len(free), sets: map[int]*nodeSet{}}
	for i, f := range free {
		b.add(i, f)
	}
	return b
}

// set returns the set for free count f, creating it.
func (b *buckets) set(f int) *nodeSet {
	s := b.sets[f]
	if s == nil {
		s = &nodeSet{}
		s.init(b.n)
		b.sets[f] = s
	}
	return s
}

// add files node under free count f (ignored when f is 0).
func (b *buckets) add(node, f int) {
	if f <= 0 {
		return
	}
	s := b.set(f)
	if s.size == 0 {
		k, _ := slices.BinarySearch(b.free, f)
		b.free = slices.Insert(b.free, k, f)
	}
	s.insert(node)
}

// remove takes node out of the bucket for free count f.
func (b *buckets) remove(node, f int) {
	s := b.sets[f]
	if f <= 0 || s == nil || !s.remove(node) {
		return
	}
	if s.size == 0 {
		k, _ := slices.BinarySearch(b.free, f)
		b.free = slices.Delete(b.free, k, k+1)
	}
}

// bestFit returns the node with the fewest free GPUs that are still at
// least w, and its free count.
func (b *buckets) bestFit(w int) (node, free int, ok bool) {
	k, _ := slices.BinarySearch(b.free, w)
	if k == len(b.free) {
		return 0, 0, false
	}
	f := b.free[k]
	return b.sets[f].lowest(), f, true
}

// mostFree returns the node with the most free GPUs, and its free count.
func (b *buckets) mostFree() (node, free int, ok bool) {
	k := len(b.free) - 1
	if k < 0 {
		return 0, 0, false
	}
	f := b.free[k]
	return b.sets[f].lowest(), f, true
}

// take moves node from free count f to f-n.
func (b *buckets) take(node, f, n int) {
	b.remove(node, f)
	b.add(node, f-n)
}

// nodesNeeded is the fewest nodes whose free GPUs add up to w, not counting
// node skip (-1 for none): the emptiest nodes first.
func (b *buckets) nodesNeeded(w, skip int) int {
	count := 0
	for k := len(b.free) - 1; k >= 0 && w > 0; k-- {
		f := b.free[k]
		s := b.sets[f]
		n := s.size
		if skip >= 0 && s.contains(skip) {
			n--
		}
		take := min(n, (w+f-1)/f)
		count += take
		w -= take * f
	}
	if w > 0 {
		return math.MaxInt / 2
	}
	return count
}
