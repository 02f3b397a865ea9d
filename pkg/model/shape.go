package model

import "strconv"

// maxKeyNodes is the most nodes a placement key can describe: one decimal
// digit per node must fit in an int64.
const maxKeyNodes = 18

// shape is a placement reduced to what the speed models need.
type shape struct {
	nodes, gpus int
	// key holds the digits of the lexicographically smallest rotation of the
	// per-node GPU counts, the form placements.csv stores placements under,
	// or 0 when the placement has no such form (a node with more than 9 GPUs,
	// or more than maxKeyNodes nodes).
	key int64
}

// reduce drops the nodes with no GPUs (negative counts count as none) and
// keys the rest. It does not allocate: the simulator calls it per step.
func reduce(gpusPerNode []int) shape {
	var digits [maxKeyNodes]int8
	var s shape
	keyable := true
	for _, g := range gpusPerNode {
		if g <= 0 {
			continue
		}
		if s.nodes < maxKeyNodes && g <= 9 {
			digits[s.nodes] = int8(g)
		} else {
			keyable = false
		}
		s.nodes++
		s.gpus += g
	}
	if keyable && s.nodes > 0 {
		s.key = minRotation(digits[:s.nodes])
	}
	return s
}

// minRotation returns the smallest rotation of digits read as a decimal
// number. All rotations have the same length, so the smallest number is the
// lexicographically smallest digit string. Each rotation follows from the
// previous one in constant time: drop the leading digit, append it.
func minRotation(digits []int8) int64 {
	var v int64
	for _, d := range digits {
		v = v*10 + int64(d)
	}
	top := pow10[len(digits)-1]
	best := v
	for _, d := range digits[:len(digits)-1] {
		v = (v-int64(d)*top)*10 + int64(d)
		best = min(best, v)
	}
	return best
}

// pow10[i] is 10^i for the digit positions of a key.
var pow10 = func() (p [maxKeyNodes]int64) {
	p[0] = 1
	for i := 1; i < maxKeyNodes; i++ {
		p[i] = 10 * p[i-1]
	}
	return p
}()

// PlacementKey returns the name placements.csv stores a placement under:
// the GPUs per node as digits, zeros dropped, rotated to the
// lexicographically smallest rotation. [2,1,1], [1,2,1] and [1,1,2] all give
// "112"; [1,2,3] gives "123" but [1,3,2] gives "132", a different measured
// placement, because only rotations are equivalent in the data. It returns
// "" for placements no key describes (no GPUs, a node with more than 9 GPUs,
// or more than 18 nodes).
func PlacementKey(gpusPerNode []int) string {
	s := reduce(gpusPerNode)
	if s.key == 0 {
		return ""
	}
	return strconv.FormatInt(s.key, 10)
}

// parseKey reads a placement column value: 1 to maxKeyNodes digits from 1
// to 9. It returns the key under its smallest rotation, the node count and
// the GPU count.
func parseKey(s string) (key int64, nodes, gpus int, ok bool) {
	if len(s) == 0 || len(s) > maxKeyNodes {
		return 0, 0, 0, false
	}
	var digits [maxKeyNodes]int8
	for i := range len(s) {
		c := s[i]
		if c < '1' || c > '9' {
			return 0, 0, 0, false
		}
		digits[i] = int8(c - '0')
		gpus += int(c - '0')
	}
	return minRotation(digits[:len(s)]), len(s), gpus, true
}

// packedKey reports whether a placement key keeps its GPUs on the fewest
// 4-GPU nodes (the testbed's node size) the way a packing scheduler fills
// them: every node full but at most one.
func packedKey(key int64) bool {
	partial := 0
	for ; key > 0; key /= 10 {
		switch d := key % 10; {
		case d == 4:
		case d < 4 && partial == 0:
			partial++
		default:
			return false
		}
	}
	return true
}
