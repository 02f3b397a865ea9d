package placement

import (
	"errors"
	"fmt"
	"slices"
)

// vnode is a loaded virtual node: a copy of one real node, filled by the
// packing with jobs (by index into state.jobs) up to the GPUs that node had
// free for the repacked jobs. Laying each virtual node back onto its own
// real node always fits, so the matching always has an answer.
type vnode struct {
	node, load int
	jobs       []jobCount
}

// jobCount is a number of workers of one job, by index into state.jobs.
type jobCount struct{ job, n int }

// pack places the jobs that were not kept onto virtual copies of the nodes,
// best-fit-decreasing (largest job first, ties by ID), in two passes. The
// first pass only places the jobs that fit whole on a node where some of
// their surviving workers run (see homeNode), so that a larger job arriving
// elsewhere cannot take the room a resized job needs to stay. The second
// pass places the rest (see pick). With strict, there is one pass in
// size order: jobs of small workers placed first on their home nodes could
// break the holes a later job of large workers needs, and in strict order
// (when worker sizes divide each other and the nodes) every worker fits
// wherever GPUs are free. It returns the virtual nodes that received
// workers, in node order.
func (s *state) pack(strict bool) ([]vnode, error) {
	n := 0
	for _, j := range s.jobs {
		if !j.kept {
			n++
		}
	}
	order := make([]int, 0, n)
	for i, j := range s.jobs {
		if !j.kept {
			order = append(order, i)
		}
	}
	slices.SortFunc(order, func(a, b int) int { return bySizeDesc(s.jobs[a], s.jobs[b]) })
	// Every job placed fills one node or more: as many rows as jobs, up
	// to the nodes, is where the rows start.
	p := packer{free: s.sc.ints(len(s.free)), rowOf: s.sc.ints(len(s.free)),
		rows: make([]vnode, 0, min(len(order), len(s.free))), chunk: min(len(order), 256)}
	defer s.sc.give(p.free)
	defer s.sc.give(p.rowOf)
	copy(p.free, s.free)
	p.b = newBuckets(p.free)
	var rest []int
	if strict {
		rest, order = order, nil
	} else {
		rest = make([]int, 0, len(order))
	}
	for _, ji := range order {
		if node, ok := homeNode(s.jobs[ji], s.jobs[ji].want, p.free); ok {
			p.put(ji, node, s.jobs[ji].want, s.jobs[ji].k)
		} else {
			rest = append(rest, ji)
		}
	}
	for _, ji := range rest {
		j := s.jobs[ji]
		for w := j.want; w > 0; {
			node, ok := pick(j, w, p.free, p.b)
			if !ok || p.free[node] < j.k {
				// Place validated that the allocation fits the capacity
				// in GPUs; only workers of several GPUs can get here.
				return nil, &NoFitError{Job: j.id, PerWorker: j.k, Left: w}
			}
			n := min(w, p.free[node]/j.k)
			p.put(ji, node, n, j.k)
			w -= n
		}
	}
	slices.SortFunc(p.rows, func(a, b vnode) int { return a.node - b.node })
	for i := range p.rows {
		p.rows[i].load = s.free[p.rows[i].node] - p.free[p.rows[i].node]
	}
	return p.rows, nil
}

// packer is the virtual layout being filled.
type packer struct {
	free []int
	b    *buckets
	// rows are the virtual nodes that received workers, in the order they
	// first did; rowOf[node] is 1 + the node's row, 0 for none, in scratch
	// space (a list of jobs per node, made anew for every pack, cost a
	// twentieth of a round's allocation at 32 768 nodes).
	rows  []vnode
	rowOf []int
	// slab holds the first few entries of each node's content: a slice
	// per node filled allocated tens of thousands a round at 100 000 jobs.
	// It comes in chunks of room for chunk nodes, as many as jobs to
	// place, up to 256.
	slab  []jobCount
	chunk int
}

// slabbed is the room each node's content starts with in the slab.
const slabbed = 4

// carve returns an empty slice with room for n elements, cut from *slab,
// which gets a new chunk of room for chunk such slices when too little is
// left: many small slices in few allocations. A carved slice cannot grow
// into its neighbours' room; appending past n moves it out.
func carve[T any](slab *[]T, n, chunk int) []T {
	if cap(*slab)-len(*slab) < n {
		*slab = make([]T, 0, n*max(chunk, 1))
	}
	at := len(*slab)
	*slab = (*slab)[:at+n]
	return (*slab)[at : at : at+n]
}

// put lays n workers of the job (by index into state.jobs) on node, which
// must hold them.
func (p *packer) put(job, node, n int, k int) {
	p.b.take(node, p.free[node], n*k)
	p.free[node] -= n * k
	r := p.rowOf[node] - 1
	if r < 0 {
		r = len(p.rows)
		p.rowOf[node] = r + 1
		p.rows = append(p.rows, vnode{node: node, jobs: carve(&p.slab, slabbed, p.chunk)})
	}
	p.rows[r].jobs = append(p.rows[r].jobs, jobCount{job: job, n: n})
}

// homeNode finds a node that holds w more workers of the job and where the
// most of its surviving workers run (then the fewest free GPUs, then the
// lowest index).
func homeNode(j *job, w int, free []int) (int, bool) {
	best, bestKeep := -1, 0
	for _, sv := range j.survivors {
		f, keep := free[sv.node], min(w, int(sv.n))
		if f < w*j.k {
			continue
		}
		if best < 0 || keep > bestKeep || keep == bestKeep && f < free[best] {
			best, bestKeep = int(sv.node), keep
		}
	}
	return best, best >= 0
}

// pick chooses the node for a job's next w workers. All w go to one node if
// any can hold them: a home node (see homeNode) if there is one, otherwise
// the node with the fewest free GPUs that holds them (best fit). When no
// node can, the job fills a node and carries on with the rest: the node
// where the most of its survivors run, if starting there spreads the job
// over no more nodes than starting with the emptiest node would; otherwise
// the emptiest node. Remaining ties go to the lowest node index.
func pick(j *job, w int, free []int, b *buckets) (int, bool) {
	if node, ok := homeNode(j, w, free); ok {
		return node, true
	}
	if node, _, ok := b.bestFit(w * j.k); ok {
		return node, true
	}
	node, _, ok := b.mostFree()
	if !ok {
		return 0, false
	}
	// With workers of k GPUs the node counts below assume the free GPUs
	// come in whole workers: an estimate that only ranks the choices.
	fewest := b.nodesNeeded(w*j.k, -1)
	best, bestKeep := -1, 0
	for _, sv := range j.survivors {
		f := free[sv.node] / j.k
		if keep := min(f, int(sv.n)); keep > bestKeep && 1+b.nodesNeeded((w-f)*j.k, int(sv.node)) <= fewest {
			best, bestKeep = int(sv.node), keep
		}
	}
	if best >= 0 {
		return best, true
	}
	return node, true
}

// layOut lays the virtual nodes onto real ones with the matching that keeps
// the most surviving workers in place, then records each repacked job's
// per-node counts.
func (s *state) layOut(rows []vnode) error {
	p := s.matchProblem(rows)
	target, err := p.solve()
	if err != nil {
		return fmt.Errorf("match the packed layout to the nodes: %w", err)
	}
	// Most jobs lie on one node or two: their counts start in a shared
	// slab rather than in a slice each, room for two a job.
	entries := 0
	for _, row := range rows {
		entries += len(row.jobs)
	}
	var slab []nodeCount
	for r, row := range rows {
		for _, c := range row.jobs {
			j := s.jobs[c.job]
			if j.final == nil {
				j.final = carve(&slab, 2, min(entries, 512))
			}
			j.final = append(j.final, nodeCount{node: int32(target[r]), n: int32(c.n)})
		}
	}
	for _, j := range s.jobs {
		if j.kept {
			continue
		}
		slices.SortFunc(j.final, func(a, b nodeCount) int { return int(a.node - b.node) })
		for i := 1; i < len(j.final); i++ {
			if j.final[i].node == j.final[i-1].node {
				return errors.New("a job was laid twice onto one node")
			}
		}
	}
	return nil
}

// matchProblem scores every virtual node against every real node it may go
// to: the score is how many surviving workers could then stay, summed over
// the jobs on the virtual node. Only positive scores are listed; a real node
// is allowed only when its free GPUs hold the virtual node's load.
func (s *state) matchProblem(rows []vnode) *matchProblem {
	p := &matchProblem{
		sc:    s.sc,
		load:  make([]int, len(rows)),
		res:   s.free,
		edges: make([][]edge, len(rows)),
	}
	acc := s.sc.ints(len(s.free))
	defer s.sc.give(acc)
	var touched []int
	for r, row := range rows {
		p.load[r] = row.load
		for _, c := range row.jobs {
			for _, sv := range s.jobs[c.job].survivors {
				if s.free[sv.node] < row.load {
					continue
				}
				if acc[sv.node] == 0 {
					touched = append(touched, int(sv.node))
				}
				acc[sv.node] += min(c.n, int(sv.n))
			}
		}
		slices.Sort(touched)
		for _, n := range touched {
			p.edges[r] = append(p.edges[r], edge{node: n, score: acc[n]})
			acc[n] = 0
		}
		touched = touched[:0]
	}
	return p
}
