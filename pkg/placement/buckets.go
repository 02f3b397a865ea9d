package placement

import (
	"math"
	"slices"
)

// buckets indexes nodes by free GPUs so that best-fit and most-free queries
// take a binary search instead of a scan over thousands of nodes. Within a
// bucket the lowest node index (the first name in sort order) wins, which
// keeps every choice deterministic.
type buckets struct {
	free  []int   // distinct free counts, ascending; each bucket non-empty
	nodes [][]int // node indices with that free count, ascending
}

// newBuckets indexes every node with free[i] > 0.
func newBuckets(free []int) *buckets {
	b := &buckets{}
	var vals []int
	for _, f := range free {
		if f > 0 {
			vals = append(vals, f)
		}
	}
	slices.Sort(vals)
	b.free = slices.Compact(vals)
	b.nodes = make([][]int, len(b.free))
	for i, f := range free {
		if f > 0 {
			k, _ := slices.BinarySearch(b.free, f)
			b.nodes[k] = append(b.nodes[k], i)
		}
	}
	return b
}

// add files node under free count f (ignored when f is 0).
func (b *buckets) add(node, f int) {
	if f <= 0 {
		return
	}
	k, ok := slices.BinarySearch(b.free, f)
	if !ok {
		b.free = slices.Insert(b.free, k, f)
		b.nodes = slices.Insert(b.nodes, k, nil)
	}
	at, _ := slices.BinarySearch(b.nodes[k], node)
	b.nodes[k] = slices.Insert(b.nodes[k], at, node)
}

// remove takes node out of the bucket for free count f.
func (b *buckets) remove(node, f int) {
	if f <= 0 {
		return
	}
	k, ok := slices.BinarySearch(b.free, f)
	if !ok {
		return
	}
	at, found := slices.BinarySearch(b.nodes[k], node)
	if !found {
		return
	}
	b.nodes[k] = slices.Delete(b.nodes[k], at, at+1)
	if len(b.nodes[k]) == 0 {
		b.free = slices.Delete(b.free, k, k+1)
		b.nodes = slices.Delete(b.nodes, k, k+1)
	}
}

// bestFit returns the node with the fewest free GPUs that are still at
// least w, and its free count.
func (b *buckets) bestFit(w int) (node, free int, ok bool) {
	k, _ := slices.BinarySearch(b.free, w)
	if k == len(b.free) {
		return 0, 0, false
	}
	return b.nodes[k][0], b.free[k], true
}

// mostFree returns the node with the most free GPUs, and its free count.
func (b *buckets) mostFree() (node, free int, ok bool) {
	k := len(b.free) - 1
	if k < 0 {
		return 0, 0, false
	}
	return b.nodes[k][0], b.free[k], true
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
		f, n := b.free[k], len(b.nodes[k])
		if skip >= 0 {
			if _, found := slices.BinarySearch(b.nodes[k], skip); found {
				n--
			}
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
