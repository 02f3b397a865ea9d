package placement

import "errors"

// forbidden is the cost of a pair that must not be chosen. It dwarfs any sum
// of real costs (at most a node's GPUs per row) yet leaves room in an int64
// for the potentials, which grow by at most n·forbidden.
const forbidden int64 = 1 << 40

// errNoAssignment means every complete assignment uses a forbidden pair. The
// callers build problems where the identity is always allowed, so it signals
// a bug, reported as an error rather than a panic.
var errNoAssignment = errors.New("no assignment avoids the forbidden pairs")

// assigner solves rectangular assignment problems with the Hungarian method
// in its shortest-augmenting-path form (rows are added one at a time; each
// addition follows the cheapest alternating path, kept non-negative by row
// and column potentials), which runs in O(n²·m). It keeps its buffers so the
// many small problems of one placement do not allocate each time.
type assigner struct {
	rowPot, colPot []int64
	minSlack       []int64
	owner, prev    []int
	seen           []bool
}

// minCost gives each of the n rows a distinct column among m ≥ n so that the
// sum of cost[r*m+c] is least, and writes the column of row r to cols[r].
// Ties are broken by index order, so the answer is deterministic.
func (a *assigner) minCost(n, m int, cost []int64, cols []int) error {
	if n == 0 {
		return nil
	}
	if m < n || len(cost) < n*m || len(cols) < n {
		return errors.New("assignment problem has fewer columns than rows")
	}
	a.grow(n, m)
	// Index 0 of the column arrays is a virtual column that holds the row
	// being added; rows are 1-based in owner so that 0 can mean "free".
	rowPot, colPot, minSlack := a.rowPot[:n+1], a.colPot[:m+1], a.minSlack[:m+1]
	owner, prev, seen := a.owner[:m+1], a.prev[:m+1], a.seen[:m+1]
	clear(rowPot)
	clear(colPot)
	clear(owner)
	for r := 1; r <= n; r++ {
		owner[0] = r
		for c := range minSlack {
			minSlack[c] = 1<<62 - 1
			seen[c] = false
		}
		col := 0
		for owner[col] != 0 {
			// Grow the tree of tight edges by the cheapest column reachable
			// from the row that owns the latest column.
			seen[col] = true
			row := owner[col]
			delta, next := int64(1<<62-1), 0
			line := cost[(row-1)*m:]
			for c := 1; c <= m; c++ {
				if seen[c] {
					continue
				}
				if s := line[c-1] - rowPot[row] - colPot[c]; s < minSlack[c] {
					minSlack[c], prev[c] = s, col
				}
				if minSlack[c] < delta {
					delta, next = minSlack[c], c
				}
			}
			// Shift the potentials so that the chosen edge becomes tight
			// while every tree edge stays tight.
			for c := 0; c <= m; c++ {
				if seen[c] {
					rowPot[owner[c]] += delta
					colPot[c] -= delta
				} else {
					minSlack[c] -= delta
				}
			}
			col = next
		}
		// col is free: flip the alternating path back to the virtual column.
		for col != 0 {
			p := prev[col]
			owner[col] = owner[p]
			col = p
		}
	}
	for c := 1; c <= m; c++ {
		if r := owner[c]; r != 0 {
			cols[r-1] = c - 1
			if cost[(r-1)*m+c-1] >= forbidden {
				return errNoAssignment
			}
		}
	}
	return nil
}

func (a *assigner) grow(n, m int) {
	if cap(a.rowPot) < n+1 {
		a.rowPot = make([]int64, n+1)
	}
	if cap(a.colPot) < m+1 {
		a.colPot = make([]int64, m+1)
		a.minSlack = make([]int64, m+1)
		a.owner = make([]int, m+1)
		a.prev = make([]int, m+1)
		a.seen = make([]bool, m+1)
	}
}
