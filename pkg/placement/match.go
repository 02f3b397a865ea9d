package placement

import (
	"cmp"
	"slices"
)

// Size limits of the matching. A block of blockRows rows costs at most
// about blockRows²·(columns+blockRows) steps of the Hungarian method; the
// dense fallback runs only while rows²·columns stays under denseBudget. Both
// keep one placement of a 4 096-node cluster well under a second.
const (
	blockRows   = 96
	denseBudget = 8 << 20
)

// matchProblem asks where each loaded virtual node (a row) goes among the
// real nodes (columns). Row r may go to column c only if res[c] ≥ load[r];
// the packing made every row out of a distinct node with room for it, so a
// complete assignment always exists.
type matchProblem struct {
	sc    *scratch
	load  []int    // per row
	res   []int    // per column (every node): GPUs free for the repacked jobs
	edges [][]edge // per row: allowed columns with a positive score, by node
}

type edge struct{ node, score int }

// solve returns the column of every row, maximising the total score.
//
// The scores are sparse: a row only scores on the nodes its jobs ran on. So
// the rows are first split into the connected components of the positive
// edges and each component is matched on its own (exactly, with the
// Hungarian method). If the rows left over can then be given columns big
// enough for them, that is a best assignment: it reaches the best score the
// edges allow. Otherwise, or when a component was too large to match whole,
// one dense Hungarian over all rows finds the exact answer if it is small
// enough; beyond that, matched pairs are given up, lowest score first, until
// the leftovers fit.
func (p *matchProblem) solve() ([]int, error) {
	var a assigner
	target, scores, exact, err := p.byComponent(&a)
	if err != nil {
		return nil, err
	}
	if _, ok := p.completable(target); ok && exact {
		p.complete(target)
		return target, nil
	}
	if n, cols := len(p.load), p.denseColumns(); n*n <= denseBudget && n*n*len(cols) <= denseBudget {
		return p.dense(&a, cols)
	}
	p.repair(target, scores)
	p.complete(target)
	if slices.Contains(target, -1) {
		return nil, errNoAssignment
	}
	return target, nil
}

// byComponent matches each connected component of the positive edges,
// splitting components of more than blockRows rows into blocks matched one
// after the other (then exact is false). Rows without a match get -1.
func (p *matchProblem) byComponent(a *assigner) (target, scores []int, exact bool, err error) {
	// Rows are joined through the columns they share: rows are the sets,
	// and a column names the first row that scored on it, plus one (0:
	// none yet), in a list lent by the scratch space.
	nRows, nCols := len(p.load), len(p.res)
	parent, firstRow, compOf := p.sc.ints(nRows), p.sc.ints(nCols), p.sc.ints(nRows)
	defer p.sc.give(compOf)
	defer p.sc.give(firstRow)
	defer p.sc.give(parent)
	for i := range parent {
		parent[i] = i
	}
	find := func(x int) int {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	for r, es := range p.edges {
		for _, e := range es {
			if o := firstRow[e.node] - 1; o >= 0 {
				parent[find(r)] = find(o)
			} else {
				firstRow[e.node] = r + 1
			}
		}
	}
	for i := range compOf {
		compOf[i] = -1
	}
	// Components are numbered in the order of their first row, and listed
	// one after the other in one array: start[c] is where component c's
	// rows begin (thousands of components when thousands of jobs change).
	var start []int
	for r := range nRows {
		if len(p.edges[r]) == 0 {
			continue
		}
		root := find(r)
		if compOf[root] < 0 {
			compOf[root] = len(start)
			start = append(start, 0)
		}
		start[compOf[root]]++
	}
	total := 0
	for c, n := range start {
		start[c], total = total, total+n
	}
	flat := make([]int, total)
	next := slices.Clone(start)
	for r := range nRows {
		if len(p.edges[r]) > 0 {
			c := compOf[find(r)]
			flat[next[c]] = r
			next[c]++
		}
	}
	start = append(start, total)
	target, scores = make([]int, nRows), make([]int, nRows)
	for r := range target {
		target[r] = -1
	}
	b := blockMatcher{p: p, a: a, used: make([]bool, nCols)}
	exact = true
	for c := range len(start) - 1 {
		rows := flat[start[c]:start[c+1]]
		for len(rows) > 0 {
			k := min(len(rows), blockRows)
			exact = exact && k == len(rows)
			if err := b.match(rows[:k], target, scores); err != nil {
				return nil, nil, false, err
			}
			rows = rows[k:]
		}
	}
	return target, scores, exact, nil
}

// blockMatcher matches blocks of rows to the columns they score on, keeping
// scratch space across blocks.
type blockMatcher struct {
	p    *matchProblem
	a    *assigner
	used []bool // column taken by an earlier block
	cost []int64
	cols []int
	out  []int
}

// match assigns rows to the unused columns they score on, or to nothing,
// maximising the score. Each row gets a private "nothing" column of cost 0
// so that the Hungarian method never needs a forbidden pair.
func (b *blockMatcher) match(rows []int, target, scores []int) error {
	b.cols = b.cols[:0]
	for _, r := range rows {
		for _, e := range b.p.edges[r] {
			if !b.used[e.node] {
				b.cols = append(b.cols, e.node)
			}
		}
	}
	slices.Sort(b.cols)
	b.cols = slices.Compact(b.cols)
	k, m := len(rows), len(b.cols)+len(rows)
	b.cost = slices.Grow(b.cost[:0], k*m)[:k*m]
	for i, r := range rows {
		line := b.cost[i*m : (i+1)*m]
		for c := range b.cols {
			line[c] = forbidden
		}
		clear(line[len(b.cols):])
		for _, e := range b.p.edges[r] {
			if at, ok := slices.BinarySearch(b.cols, e.node); ok {
				line[at] = -int64(e.score)
			}
		}
	}
	b.out = slices.Grow(b.out[:0], k)[:k]
	err := b.a.minCost(k, m, b.cost, b.out)
	for i, r := range rows {
		if c := b.out[i]; err == nil && c < len(b.cols) {
			target[r], scores[r] = b.cols[c], int(-b.cost[i*m+c])
			b.used[b.cols[c]] = true
		}
	}
	return err
}

// leftovers lists the unmatched rows, largest load first, and the unused
// columns with free GPUs, largest first (ties by index).
func (p *matchProblem) leftovers(target []int) (rows, cols []int) {
	used := make([]bool, len(p.res))
	for r, c := range target {
		if c >= 0 {
			used[c] = true
		} else {
			rows = append(rows, r)
		}
	}
	for c, f := range p.res {
		if f > 0 && !used[c] {
			cols = append(cols, c)
		}
	}
	slices.SortStableFunc(rows, func(a, b int) int { return cmp.Compare(p.load[b], p.load[a]) })
	slices.SortStableFunc(cols, func(a, b int) int { return cmp.Compare(p.res[b], p.res[a]) })
	return rows, cols
}

// completable reports whether the unmatched rows can all get unused
// columns. The allowed columns of a row are exactly those with at least its
// load, so it suffices to pair the i-th largest row with the i-th largest
// column. If not, it returns a load that has more rows than columns.
func (p *matchProblem) completable(target []int) (short int, ok bool) {
	rows, cols := p.leftovers(target)
	for i, r := range rows {
		if i >= len(cols) || p.res[cols[i]] < p.load[r] {
			return p.load[r], false
		}
	}
	return 0, true
}

// complete gives every unmatched row, largest first, the unused column with
// the fewest free GPUs that holds it: largest-first best fit succeeds
// whenever any assignment of the leftovers does.
func (p *matchProblem) complete(target []int) {
	rows, cols := p.leftovers(target)
	free := p.sc.ints(len(p.res))
	defer p.sc.give(free)
	for _, c := range cols {
		free[c] = p.res[c]
	}
	b := newBuckets(free)
	for _, r := range rows {
		c, f, ok := b.bestFit(p.load[r])
		if !ok {
			continue // unreachable once completable holds
		}
		b.remove(c, f)
		target[r] = c
	}
}

// repair gives up matched pairs until the leftovers fit. When rows of load
// t or more outnumber the free columns of t or more, some matched row
// lighter than t must hold such a column (the packing proves a complete
// assignment exists); the one with the lowest score (then lowest index) is
// unmatched. Each step frees one large column and no large row, so the loop
// ends.
//
// When many pairs must go (thousands of jobs resized at once) re-sorting
// the leftovers for every step was most of a placement; counted instead by
// load, with the matched rows in buckets by load and column size, a step
// takes time in the number of distinct sizes. Nodes of many different
// sizes fall back to the direct form (repairByScan), which gives the same
// answer.
func (p *matchProblem) repair(target, scores []int) {
	const mostBuckets = 1024
	vals := p.sizes()
	if len(vals)*len(vals) > mostBuckets {
		p.repairByScan(target, scores)
		return
	}
	at := func(v int) int { i, _ := slices.BinarySearch(vals, v); return i }
	// rows[v] counts the unmatched rows of load vals[v]; cols[v] the unused
	// columns with vals[v] free GPUs.
	rows, cols := make([]int, len(vals)), make([]int, len(vals))
	used := make([]bool, len(p.res))
	// bucket[l*len(vals)+f] holds the matched rows of load vals[l] on a
	// column of vals[f] free GPUs, lowest score (then index) first.
	bucket := make([][]int, len(vals)*len(vals))
	for r, c := range target {
		if c < 0 {
			rows[at(p.load[r])]++
			continue
		}
		used[c] = true
		b := at(p.load[r])*len(vals) + at(p.res[c])
		bucket[b] = append(bucket[b], r)
	}
	for c, f := range p.res {
		if f > 0 && !used[c] {
			cols[at(f)]++
		}
	}
	for _, b := range bucket {
		slices.SortFunc(b, func(x, y int) int {
			if c := cmp.Compare(scores[x], scores[y]); c != 0 {
				return c
			}
			return cmp.Compare(x, y)
		})
	}
	for {
		// The largest load that more unmatched rows have than unused
		// columns hold (see completable).
		t, short := -1, false
		for v, nr, nc := len(vals)-1, 0, 0; v >= 0 && !short; v-- {
			nr, nc = nr+rows[v], nc+cols[v]
			if rows[v] > 0 && nr > nc {
				t, short = v, true
			}
		}
		if !short {
			return
		}
		best := -1
		for l := range t {
			for f := t; f < len(vals); f++ {
				if b := bucket[l*len(vals)+f]; len(b) > 0 && (best < 0 || before(b[0], bucket[best][0], scores)) {
					best = l*len(vals) + f
				}
			}
		}
		if best < 0 {
			return // unreachable, see above; complete then leaves rows out
		}
		drop := bucket[best][0]
		bucket[best] = bucket[best][1:]
		rows[best/len(vals)]++
		if f := p.res[target[drop]]; f > 0 {
			cols[best%len(vals)]++
		}
		target[drop] = -1
	}
}

// before reports whether matched row x is given up before row y: lower
// score, then lower index.
func before(x, y int, scores []int) bool {
	return scores[x] < scores[y] || scores[x] == scores[y] && x < y
}

// sizes lists, ascending and once each, the rows' loads and the columns'
// free GPUs.
func (p *matchProblem) sizes() []int {
	vals := append(slices.Clone(p.load), p.res...)
	slices.Sort(vals)
	return slices.Compact(vals)
}

// repairByScan is repair, finding each step's pair by scanning every row.
func (p *matchProblem) repairByScan(target, scores []int) {
	for {
		t, ok := p.completable(target)
		if ok {
			return
		}
		drop := -1
		for r, c := range target {
			if c >= 0 && p.load[r] < t && p.res[c] >= t && (drop < 0 || scores[r] < scores[drop]) {
				drop = r
			}
		}
		if drop < 0 {
			return // unreachable, see above; complete then leaves rows out
		}
		target[drop] = -1
	}
}

// denseColumns lists the columns a complete assignment needs to consider:
// every column some row scores on, and of the others, which are alike
// except for their free GPUs, the first few of each free count (no more
// than there are rows, since no assignment uses more).
func (p *matchProblem) denseColumns() []int {
	scored := make([]bool, len(p.res))
	for _, es := range p.edges {
		for _, e := range es {
			scored[e.node] = true
		}
	}
	perFree := map[int]int{}
	var cols []int
	for c, f := range p.res {
		if f <= 0 {
			continue
		}
		if !scored[c] {
			if perFree[f] >= len(p.load) {
				continue
			}
			perFree[f]++
		}
		cols = append(cols, c)
	}
	return cols
}

// dense solves the whole assignment at once over the given columns.
func (p *matchProblem) dense(a *assigner, cols []int) ([]int, error) {
	n, m := len(p.load), len(cols)
	pos := make([]int, len(p.res))
	for i, c := range cols {
		pos[c] = i
	}
	cost := make([]int64, n*m)
	for r := range n {
		line := cost[r*m : (r+1)*m]
		for i, c := range cols {
			if p.res[c] < p.load[r] {
				line[i] = forbidden
			}
		}
		for _, e := range p.edges[r] {
			line[pos[e.node]] = -int64(e.score)
		}
	}
	out := make([]int, n)
	if err := a.minCost(n, m, cost, out); err != nil {
		return nil, err
	}
	for r, i := range out {
		out[r] = cols[i]
	}
	return out, nil
}
