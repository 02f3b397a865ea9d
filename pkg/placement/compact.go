package placement

import (
	"cmp"
	"slices"

	"github.com/vodascheduler/voda/pkg/api"
)

// maxCompactions bounds the spread jobs one placement tries to gather.
const maxCompactions = 8

// eviction is one accepted compaction: the job (by index) sits whole on
// node, and the unchanged jobs in evicted left that node for it.
type eviction struct {
	job, node int
	evicted   []int
}

// compact gathers jobs spread over more nodes than they need: resized or
// new jobs the packing spread, and unchanged jobs that were spread before.
// For such a job it looks for the node where moving the fewest GPUs of
// smaller unchanged jobs, each lying whole on that node, makes room for the
// whole job; it places again with those jobs moved out and keeps the result
// if the jobs then span fewer nodes in all. With Input.Throughput, a job
// is gathered only if it rates one node faster than its layout. An
// unchanged job moves only to make room for a larger job or to be
// gathered itself, and the GPUs moved are no more than the job they make
// room for. base is the state before packing, which each attempt forks.
func (s *state) compact(base *state, rate func(api.JobID, []int) float64) *state {
	ex := s.excess()
	if ex == 0 {
		return s
	}
	var spread []int
	for i, j := range s.jobs {
		if len(j.final) > s.need(j) && (rate == nil || gatherGains(j, rate)) {
			spread = append(spread, i)
		}
	}
	slices.SortFunc(spread, func(a, b int) int {
		ja, jb := s.jobs[a], s.jobs[b]
		if c := cmp.Compare(jb.want*jb.k, ja.want*ja.k); c != 0 {
			return c
		}
		return cmp.Compare(ja.id, jb.id)
	})
	var done []eviction
	best := s
	room, whole := s.keptLayout()
	defer s.sc.give(room)
	// An attempt not kept lends its storage to the next one: thousands of
	// jobs change in some rounds, and each attempt copies them.
	var spare *state
	for _, ji := range spread[:min(len(spread), maxCompactions)] {
		ev, ok := s.evictionFor(ji, done, room, whole)
		if !ok {
			continue
		}
		t, ok := evicted(base, append(done, ev), spare)
		spare = t
		if !ok {
			continue
		}
		if tex := t.excess(); tex < ex {
			spare = nil
			if best != s {
				spare = best
			}
			best, ex = t, tex
			done = append(done, ev)
		}
	}
	return best
}

// gatherGains reports whether rate says the job steps faster on one node
// than where it lies: a job spread because its spread layout is faster
// (step 6) must not be gathered back, and moved again the next round.
func gatherGains(j *job, rate func(api.JobID, []int) float64) bool {
	now := rate(j.id, j.layout(nil))
	return !(now > 0) || rate(j.id, []int{j.want * j.k}) > now
}

// keptLayout returns each node's capacity less its kept jobs' GPUs, and
// per node the kept jobs that lie on it alone, smallest first (then by
// ID): what evictionFor reads for every job it tries to gather.
func (s *state) keptLayout() (room []int, whole lones) {
	room = s.sc.ints(len(s.caps))
	copy(room, s.caps)
	// whole.start[n+1] counts node n's lone jobs first, then becomes
	// where its list ends in whole.flat: one array for all of them, and
	// 32-bit fields, since nearly every job is kept at 100 000 jobs.
	whole.start = make([]int32, len(s.caps)+1)
	for _, o := range s.jobs {
		if !o.kept {
			continue
		}
		for _, c := range o.final {
			room[c.node] -= int(c.n) * o.k
		}
		if len(o.final) == 1 {
			whole.start[o.final[0].node+1]++
		}
	}
	for n := range s.caps {
		whole.start[n+1] += whole.start[n]
	}
	whole.flat = make([]lone, whole.start[len(s.caps)])
	next := slices.Clone(whole.start[:len(s.caps)])
	for i, o := range s.jobs {
		if o.kept && len(o.final) == 1 {
			n := o.final[0].node
			whole.flat[next[n]] = lone{job: int32(i), gpus: int32(o.want * o.k)}
			next[n]++
		}
	}
	for n := range s.caps {
		slices.SortFunc(whole.on(n), func(a, b lone) int {
			if c := cmp.Compare(a.gpus, b.gpus); c != 0 {
				return c
			}
			return cmp.Compare(s.jobs[a.job].id, s.jobs[b.job].id)
		})
	}
	return room, whole
}

// lone is a kept job (by index) that lies on one node, and its GPUs.
type lone struct{ job, gpus int32 }

// lones lists the lone jobs of every node: node n's are
// flat[start[n]:start[n+1]].
type lones struct {
	start []int32
	flat  []lone
}

// on returns node n's lone jobs.
func (l lones) on(n int) []lone { return l.flat[l.start[n]:l.start[n+1]] }

// evictionFor chooses the node for job ji that frees enough room for it by
// moving the fewest GPUs of unchanged jobs lying whole on it, each smaller
// than the job, together no more GPUs than the job. Nodes taken by earlier
// evictions are skipped; ties go to the lowest node index. room and whole
// are keptLayout's.
func (s *state) evictionFor(ji int, done []eviction, room []int, whole lones) (eviction, bool) {
	j := s.jobs[ji]
	g := j.want * j.k
	// At most maxCompactions earlier evictions: lists beat maps here.
	var taken, moved []int
	for _, d := range done {
		taken = append(taken, d.node)
		moved = append(append(moved, d.job), d.evicted...)
	}
	// The job's own GPUs, if it is kept, are room for it.
	if j.kept {
		for _, c := range j.final {
			room[c.node] += int(c.n) * j.k
		}
		defer func() {
			for _, c := range j.final {
				room[c.node] -= int(c.n) * j.k
			}
		}()
	}
	bestNode, bestCost := -1, g+1
	// Two buffers, the best set so far and the one being built, swapped
	// when the new one wins: a set per node scanned allocated tens of
	// thousands of slices a round at 100 000 jobs.
	var bestSet, set []int
	for n := range s.caps {
		if s.caps[n] < g || room[n] >= g || slices.Contains(taken, n) {
			continue
		}
		free, cost := room[n], 0
		set = set[:0]
		for _, o := range whole.on(n) {
			job, gpus := int(o.job), int(o.gpus)
			if job == ji || gpus >= g || slices.Contains(moved, job) {
				continue
			}
			if free >= g || cost >= bestCost {
				break
			}
			free += gpus
			cost += gpus
			set = append(set, job)
		}
		if free >= g && cost < bestCost {
			bestNode, bestCost = n, cost
			bestSet, set = set, bestSet
		}
	}
	if bestNode < 0 {
		return eviction{}, false
	}
	return eviction{job: ji, node: bestNode, evicted: bestSet}, true
}

// evicted places again with the evictions applied: each evicted job is
// packed anew with no preference for its old node, and each gathered job
// prefers its chosen node. It forks base into spare's storage (see
// forkInto) and returns the fork, also when the attempt fails (false).
func evicted(base *state, evs []eviction, spare *state) (*state, bool) {
	t := base.forkInto(spare)
	for _, ev := range evs {
		for _, e := range ev.evicted {
			if !t.jobs[e].kept {
				return t, false
			}
			o := t.own(e)
			t.release(o)
			o.survivors, o.compacted = nil, true
		}
	}
	for _, ev := range evs {
		j := t.own(ev.job)
		if j.kept {
			t.release(j)
		}
		j.compacted = true
		// A pseudo-survivor on the chosen node makes it the job's home for
		// the packing and the matching; moves are still reported against
		// its real old nodes.
		j.survivors = []nodeCount{{node: int32(ev.node), n: int32(j.want)}}
	}
	rows, err := t.pack(false)
	if err != nil {
		return t, false
	}
	if err := t.layOut(rows); err != nil {
		return t, false
	}
	for _, ev := range evs {
		if len(t.jobs[ev.job].final) != 1 {
			return t, false
		}
		for _, e := range ev.evicted {
			if len(t.jobs[e].final) != 1 {
				return t, false
			}
		}
	}
	// A job placed anew that lies whole on a node the evictions emptied
	// took the room they made, maybe in the gathered job's stead (one
	// whose survivor runs there goes first): reshape leaves it there, as
	// it leaves the gathered jobs, or the evicted jobs would have moved
	// for nothing.
	var emptied []int
	for _, ev := range evs {
		emptied = append(emptied, ev.node)
	}
	for _, j := range t.jobs {
		if !j.kept && len(j.final) == 1 && slices.Contains(emptied, int(j.final[0].node)) {
			j.compacted = true
		}
	}
	return t, true
}

// need is the fewest nodes that could hold the job's workers.
func (s *state) need(j *job) int {
	n, g := 0, j.want*j.k
	for _, c := range s.desc {
		if g <= 0 {
			break
		}
		g -= c / j.k * j.k
		n++
	}
	return n
}

// excess counts the nodes jobs span beyond the fewest that could hold them.
func (s *state) excess() int {
	ex := 0
	for _, j := range s.jobs {
		ex += max(len(j.final)-s.need(j), 0)
	}
	return ex
}

// release undoes keepUnchanged for one kept job: its GPUs are free again
// and the next pack places it.
func (s *state) release(j *job) {
	for _, c := range j.final {
		s.free[c.node] += int(c.n) * j.k
	}
	j.kept, j.final = false, nil
}
