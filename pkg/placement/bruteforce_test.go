package placement_test

import (
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/placement"
)

// layoutStats describes one layout: per job, the workers on each node.
type layoutStats struct {
	moves  int // surviving workers that cannot stay, numbered at best
	spread int // Σ over jobs of the nodes the job runs on
}

// smallProblem is an input reduced to counts, for brute force.
type smallProblem struct {
	caps     []int
	jobs     []api.JobID
	want     []int
	survive  [][]int // per job, per node: surviving workers there now
	surviveN []int   // per job: surviving workers, lost nodes included
	fixed    [][]int // per job: the counts of an unchanged job, or nil
}

func newSmallProblem(in placement.Input) smallProblem {
	nodes := slices.Clone(in.Nodes)
	slices.SortFunc(nodes, func(a, b api.Node) int { return cmpNames(a.Name, b.Name) })
	index := map[api.NodeName]int{}
	capm := map[api.NodeName]int{}
	var p smallProblem
	for i, n := range nodes {
		index[n.Name] = i
		capm[n.Name] = n.GPUs
		p.caps = append(p.caps, n.GPUs)
	}
	unchanged := map[api.JobID]bool{}
	for _, id := range unchangedJobs(in, capm) {
		unchanged[id] = true
	}
	for _, id := range slices.Sorted(maps.Keys(in.Allocation)) {
		w := in.Allocation[id]
		if w <= 0 {
			continue
		}
		s := make([]int, len(nodes))
		old := in.Current[id]
		n := min(len(old), w)
		for _, name := range old[:n] {
			if k, ok := index[name]; ok {
				s[k]++
			}
		}
		p.jobs = append(p.jobs, id)
		p.want = append(p.want, w)
		p.survive = append(p.survive, s)
		p.surviveN = append(p.surviveN, n)
		if unchanged[id] {
			p.fixed = append(p.fixed, s)
		} else {
			p.fixed = append(p.fixed, nil)
		}
	}
	return p
}

func cmpNames(a, b api.NodeName) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// stats scores a layout given as per-job per-node counts.
func (p smallProblem) stats(x [][]int) layoutStats {
	var s layoutStats
	for j := range p.jobs {
		stay := 0
		for k, n := range x[j] {
			stay += min(n, p.survive[j][k])
			if n > 0 {
				s.spread++
			}
		}
		s.moves += p.surviveN[j] - stay
	}
	return s
}

// each calls f for every layout that fits the capacities, gives every job
// its workers and leaves unchanged jobs where they are.
func (p smallProblem) each(f func(x [][]int)) {
	free := slices.Clone(p.caps)
	x := make([][]int, len(p.jobs))
	for j := range x {
		x[j] = make([]int, len(p.caps))
	}
	var job func(j int)
	var node func(j, k, left int)
	job = func(j int) {
		if j == len(p.jobs) {
			f(x)
			return
		}
		if p.fixed[j] != nil {
			for k, n := range p.fixed[j] {
				if n > free[k] {
					return
				}
			}
			for k, n := range p.fixed[j] {
				x[j][k] = n
				free[k] -= n
			}
			job(j + 1)
			for k, n := range p.fixed[j] {
				x[j][k] = 0
				free[k] += n
			}
			return
		}
		node(j, 0, p.want[j])
	}
	node = func(j, k, left int) {
		if k == len(p.caps) {
			if left == 0 {
				job(j + 1)
			}
			return
		}
		for n := min(left, free[k]); n >= 0; n-- {
			x[j][k] = n
			free[k] -= n
			node(j, k+1, left-n)
			free[k] += n
		}
		x[j][k] = 0
	}
	job(0)
}

// counts turns a placement into per-job per-node counts.
func (p smallProblem) counts(in placement.Input, out placement.Output) [][]int {
	nodes := slices.Clone(in.Nodes)
	slices.SortFunc(nodes, func(a, b api.Node) int { return cmpNames(a.Name, b.Name) })
	index := map[api.NodeName]int{}
	for i, n := range nodes {
		index[n.Name] = i
	}
	x := make([][]int, len(p.jobs))
	for j, id := range p.jobs {
		x[j] = make([]int, len(nodes))
		for _, name := range out.Placement[id] {
			x[j][index[name]]++
		}
	}
	return x
}

// TestPlaceMovesNearTheCompactMinimum compares Place with every layout of
// small instances (≤ 4 nodes of ≤ 4 GPUs, ≤ 4 jobs), each layout counted
// with the best numbering of its workers, and with the unchanged jobs kept in
// place as Place promises.
//
// Place guarantees by construction only that, given its per-node counts, no
// other numbering moves fewer workers (checkMoves, on every test input), and
// that its matching moves the fewest workers among the ways of laying its
// packed layout onto the nodes (TestMatchIsOptimal). It does not guarantee
// the fewest moves over all layouts, even among those as compact as its own:
// it packs largest-first and prefers compactness, so a more spread layout may
// move fewer workers (scale-out that stays put but crosses a node), and the
// fixed order can let one job take the room a resized job needed. What it
// promises, and what this test holds it to with a fixed seed, is to be
// nearly as good: a layout both strictly more compact (fewer (job, node)
// pairs in total) and with fewer moves exists in at most 0.1% of instances,
// and summed over all instances Place moves at most 2% more workers than
// the best layout no more spread than its own.
func TestPlaceMovesNearTheCompactMinimum(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 8))
	var instances, dominated, equallyCompactBetter, moves, best int
	for i := range 10000 {
		in := randomInput(r, 4, 4, 4)
		capm := map[api.NodeName]int{}
		for _, n := range in.Nodes {
			capm[n.Name] = n.GPUs
		}
		if !consistent(in, capm) {
			continue
		}
		out, err := placement.Place(in)
		if err != nil {
			t.Fatalf("instance %d: %v", i, err)
		}
		instances++
		p := newSmallProblem(in)
		got := p.stats(p.counts(in, out))
		least, strictly, equally := got.moves, false, false
		p.each(func(x [][]int) {
			s := p.stats(x)
			if s.spread > got.spread || s.moves >= got.moves {
				return
			}
			least = min(least, s.moves)
			strictly = strictly || s.spread < got.spread
			equally = equally || s.spread == got.spread
		})
		moves += got.moves
		best += least
		if strictly {
			dominated++
			t.Logf("instance %d: %+v: a more compact layout moves fewer than %+v (%+v)", i, in, out.Placement, got)
		}
		if equally {
			equallyCompactBetter++
		}
	}
	t.Logf("%d instances: Place moves %d workers, the best layouts no more spread %d; "+
		"dominated in %d, an equally compact layout moves fewer in %d",
		instances, moves, best, dominated, equallyCompactBetter)
	if dominated*1000 > instances {
		t.Errorf("a strictly more compact layout moves fewer workers in %d of %d instances, want at most 0.1%%", dominated, instances)
	}
	if moves*100 > best*102 {
		t.Errorf("Place moves %d workers where the best layouts no more spread move %d, want at most 2%% more", moves, best)
	}
}
