package placement

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/vodascheduler/voda/pkg/api"
)

// Input is everything one placement looks at.
type Input struct {
	// Nodes are the nodes that exist now, in any order, with unique names.
	Nodes []api.Node
	// Allocation is the number of workers every job gets. Jobs with 0 or
	// absent are not placed.
	Allocation api.Allocation
	// GPUsPerWorker is the GPUs each worker of a job holds, all on one
	// node. Jobs absent, or with 0, hold one.
	GPUsPerWorker map[api.JobID]int
	// Current is where each worker of each job runs now, by worker index. It
	// may name nodes that are gone (node loss) and jobs that no longer have
	// an allocation.
	Current api.Placement
	// Throughput, when set, rates how fast a job steps on a layout of
	// gpusPerNode GPUs per node (largest first; the slice is reused after
	// the call): any positive scale, higher is faster, and 0 for a job it
	// knows nothing about. Jobs placed anew then go on the fastest layout
	// the free GPUs allow (step 6) instead of the most compact one. Nil
	// keeps every job compact.
	Throughput func(job api.JobID, gpusPerNode []int) float64
}

// Output is one placement and how it differs from the current one.
type Output struct {
	// Placement holds, for every job with a positive allocation, exactly
	// that many node names, by worker index. A job that stays where it runs
	// gets its Current slice itself, not a copy.
	Placement api.Placement
	// Moves lists, per job, the workers that existed before and survive the
	// resize (index < min(old, new)) but change node, sorted by index.
	// Workers on a lost node are moves from that node. Jobs without moves
	// have no entry.
	Moves map[api.JobID][]api.WorkerMove
	// RestartAll is true for a job that had surviving workers and must move
	// every one of them, so its launcher restarts too. Other jobs have no
	// entry.
	RestartAll map[api.JobID]bool
}

// Errors returned by Place, for errors.Is. Both mean the caller handed in
// something no placement can honour; the engine should keep its last plan.
var (
	// ErrInvalidInput marks a malformed input: an unnamed, duplicate or
	// negative-capacity node, or a negative allocation.
	ErrInvalidInput = errors.New("invalid placement input")
	// ErrOverCapacity marks an allocation that asks for more GPUs than the
	// nodes have.
	ErrOverCapacity = errors.New("allocation exceeds capacity")
)

// NoFitError says that a job's workers of several GPUs do not all fit whole
// on the nodes, even after repacking every job: the GPUs exist, but not in
// blocks of the job's worker size. The caller should shrink or drop the job
// (see scheduler's trimming) and place again.
type NoFitError struct {
	Job       api.JobID
	PerWorker int
	// Left is the number of the job's workers that found no node.
	Left int
}

func (e *NoFitError) Error() string {
	return fmt.Sprintf("job %s: %d workers of %d GPUs fit on no node", e.Job, e.Left, e.PerWorker)
}

// MaxWorkers bounds the total allocation Place accepts, in GPUs. The output holds one
// node name per worker, so an absurd allocation would exhaust memory rather
// than fail; no GPU cluster comes near this many GPUs.
const MaxWorkers = 1 << 24

// Place binds every allocated worker to a node. Unchanged jobs stay where
// they are; the other jobs are packed best-fit-decreasing into the capacity
// left over, and the packed layout is laid onto the real nodes by a
// minimum-migration matching. The package documentation explains the
// algorithm and its trade-offs.
//
// The same input gives the same output, whatever the order of Input.Nodes.
func Place(in Input) (Output, error) {
	jobs := make([]Job, 0, len(in.Allocation))
	for id, w := range in.Allocation {
		if w != 0 {
			jobs = append(jobs, Job{ID: id, Workers: w, GPUsPerWorker: in.GPUsPerWorker[id], Current: in.Current[id]})
		}
	}
	slices.SortFunc(jobs, func(a, b Job) int { return cmp.Compare(a.ID, b.ID) })
	nodes, err := NewNodes(in.Nodes)
	if err != nil {
		return Output{}, fmt.Errorf("place: %w", err)
	}
	moved, err := PlaceJobs(nodes, len(jobs), func(i int) Job { return jobs[i] }, in.Throughput)
	if err != nil {
		return Output{}, err
	}
	out := Output{
		Placement:  make(api.Placement, len(jobs)),
		Moves:      make(map[api.JobID][]api.WorkerMove),
		RestartAll: make(map[api.JobID]bool),
	}
	for _, j := range jobs {
		out.Placement[j.ID] = j.Current
	}
	for _, m := range moved {
		id := jobs[m.Slot].ID
		out.Placement[id] = m.Nodes
		if len(m.Moves) > 0 {
			out.Moves[id] = m.Moves
		}
		if m.RestartAll {
			out.RestartAll[id] = true
		}
	}
	return out, nil
}

// Job is one job for PlaceJobs: Input's entries for it.
type Job struct {
	ID api.JobID
	// Workers is its allocation; a job of 0 is not placed.
	Workers int
	// GPUsPerWorker is the GPUs each worker holds, all on one node; 0
	// means 1.
	GPUsPerWorker int
	// Current is where each worker runs now, by worker index.
	Current []api.NodeName
}

// Moved is where PlaceJobs puts a job that does not stay exactly where it
// runs: Output's entries for it.
type Moved struct {
	// Slot is the job's index in PlaceJobs' list.
	Slot int
	// Nodes holds a node per worker index.
	Nodes []api.NodeName
	// Moves are the surviving workers that change node, by index.
	Moves []api.WorkerMove
	// RestartAll says every surviving worker moves.
	RestartAll bool
}

// PlaceJobs is Place for callers that hold many jobs, without maps keyed
// by job ID, on nodes made ready once (NewNodes): job(i), for i from 0 to
// n-1, gives the jobs sorted by ID, each once. It returns, by slot
// ascending, the jobs allocated workers that do not stay exactly on their
// Current nodes; every other job allocated workers stays there. It decides
// exactly as Place does. A caller that places often keeps a Workspace and
// calls its PlaceJobs instead.
func PlaceJobs(nodes *Nodes, n int, job func(i int) Job, rate func(job api.JobID, gpusPerNode []int) float64) ([]Moved, error) {
	return new(Workspace).PlaceJobs(nodes, n, job, rate)
}

// PlaceJobs is the package's PlaceJobs, in w's storage.
func (w *Workspace) PlaceJobs(nodes *Nodes, n int, job func(i int) Job, rate func(job api.JobID, gpusPerNode []int) float64) ([]Moved, error) {
	defer w.release()
	s, err := newState(w, nodes, n, job)
	if err != nil {
		return nil, fmt.Errorf("place: %w", err)
	}
	s.keepUnchanged()
	// compact places again from this point with some jobs evicted: it
	// forks it rather than rebuilding it from the input.
	base := s
	s = base.fork()
	rows, err := s.pack(false)
	if _, ok := errors.AsType[*NoFitError](err); ok {
		// Workers of several GPUs can find the free GPUs scattered by the
		// jobs that stay; repack every job in size order, still preferring
		// its nodes.
		s.unkeep()
		s.repacked = true
		rows, err = s.pack(true)
	}
	if err != nil {
		return nil, fmt.Errorf("place: %w", err)
	}
	if err := s.layOut(rows); err != nil {
		return nil, fmt.Errorf("place: %w", err)
	}
	if !s.repacked {
		s = s.compact(base, rate)
	}
	if rate != nil {
		s.reshape(rate)
	}
	return s.output(), nil
}

// state is one placement in progress. Nodes are referred to by their index
// in name order, which is what makes the result independent of the order of
// Input.Nodes.
type state struct {
	names []api.NodeName
	caps  []int
	free  []int // GPUs not yet promised to a job
	jobs  []*job
	// desc is caps sorted largest first.
	desc []int
	// repacked says every job was packed anew (workers of several GPUs
	// found no room otherwise).
	repacked bool
	// get is PlaceJobs' list of jobs; index finds a node by name.
	get   func(i int) Job
	index map[api.NodeName]int
	// sc lends per-node scratch space to every step, forks included.
	sc *scratch
	// ws is the storage the placement works in; store a fork's own (nil
	// for the first state).
	ws    *Workspace
	store *forkStore
}

// job is one job with a positive allocation.
//
// At 100 000 jobs a placement builds one for nearly every job each round:
// its size is most of what a round allocates, hence the 32-bit fields.
type job struct {
	id   api.JobID
	want int
	k    int // GPUs per worker
	// survivors counts, per live node, the old workers whose index is below
	// want: those keep their identity through a resize and can stay put.
	survivors []nodeCount
	// final is the number of workers per node in the new placement.
	final []nodeCount
	// kept says the job is unchanged and stays exactly where it is.
	kept bool
	// compacted says compact laid the job whole on a node, to gather it
	// or to make room for one; reshape leaves it there.
	compacted bool
	// moves says output found the job not exactly where it runs.
	moves bool
	// intact says every old worker's node exists; had is the number of
	// old workers (of Current, as given). Their nodes are not kept: only
	// the jobs that move need them again (see oldNodes).
	intact bool
	had    int32
	slot   int32 // index in PlaceJobs' list
}

// nodeCount is a number of workers on one node, by index in name order.
type nodeCount struct{ node, n int32 }

// Nodes is a set of nodes made ready for placements: checked, in name
// order, and indexed by name. A caller that places often on the same
// nodes makes it once and keeps it while they stay the same (at 32 768
// nodes, building it is a tenth of what a round allocates).
type Nodes struct {
	names    []api.NodeName
	caps     []int
	desc     []int // caps, largest first
	index    map[api.NodeName]int
	capacity int
}

// NewNodes checks and indexes nodes, given in any order with unique, non-empty
// names and non-negative GPUs; an error wraps ErrInvalidInput.
func NewNodes(in []api.Node) (*Nodes, error) {
	nodes := in
	byName := func(a, b api.Node) int { return cmp.Compare(a.Name, b.Name) }
	if !slices.IsSortedFunc(nodes, byName) {
		nodes = slices.Clone(in)
		slices.SortFunc(nodes, byName)
	}
	if len(nodes) > math.MaxInt32 {
		return nil, fmt.Errorf("%w: more than %d nodes", ErrInvalidInput, math.MaxInt32)
	}
	ns := &Nodes{names: make([]api.NodeName, 0, len(nodes)), caps: make([]int, 0, len(nodes)), index: make(map[api.NodeName]int, len(nodes))}
	for i, n := range nodes {
		switch {
		case n.Name == "":
			return nil, fmt.Errorf("%w: a node has an empty name", ErrInvalidInput)
		case n.GPUs < 0:
			return nil, fmt.Errorf("%w: node %s has %d GPUs", ErrInvalidInput, n.Name, n.GPUs)
		case i > 0 && nodes[i-1].Name == n.Name:
			return nil, fmt.Errorf("%w: node %s is listed twice", ErrInvalidInput, n.Name)
		}
		if n.GPUs > math.MaxInt-ns.capacity {
			return nil, fmt.Errorf("%w: the nodes' GPUs overflow an int", ErrInvalidInput)
		}
		ns.capacity += n.GPUs
		ns.index[n.Name] = i
		ns.names = append(ns.names, n.Name)
		ns.caps = append(ns.caps, n.GPUs)
	}
	ns.desc = slices.Clone(ns.caps)
	slices.SortFunc(ns.desc, func(a, b int) int { return cmp.Compare(b, a) })
	return ns, nil
}

// Len returns the number of nodes.
func (ns *Nodes) Len() int { return len(ns.names) }

// Node returns the i-th node in name order.
func (ns *Nodes) Node(i int) api.Node { return api.Node{Name: ns.names[i], GPUs: ns.caps[i]} }

func newState(w *Workspace, nodes *Nodes, count int, get func(i int) Job) (*state, error) {
	// The node lists are shared with nodes, read-only.
	s := &state{names: nodes.names, caps: nodes.caps, desc: nodes.desc, get: get, index: nodes.index, sc: &w.sc, ws: w}
	capacity := nodes.capacity
	w.free = append(w.free[:0], s.caps...)
	s.free = w.free
	// One pass over the jobs (reading each costs a cache miss at 100 000
	// jobs), into one slab for the jobs and chunks for their survivors'
	// counts: one allocation per job cost more than the placing. The slab
	// is never outgrown, so the pointers into it hold.
	w.count = count
	if cap(w.slab) < count {
		w.slab = make([]job, 0, count+count/16)
	}
	if cap(w.list) < count {
		w.list = make([]*job, 0, cap(w.slab))
	}
	jobs := w.slab[:0]
	total := 0
	var prev api.JobID
	var at, live []int
	var counts []nodeCount
	s.jobs = w.list[:0]
	defer func() { w.slab, w.list = jobs, s.jobs }()
	for i := range count {
		in := get(i)
		if i > 0 && prev >= in.ID {
			return nil, fmt.Errorf("%w: job %s is listed out of order or twice", ErrInvalidInput, in.ID)
		}
		prev = in.ID
		if in.Workers < 0 {
			return nil, fmt.Errorf("%w: job %s is allocated %d workers", ErrInvalidInput, in.ID, in.Workers)
		}
		if in.Workers == 0 {
			continue
		}
		k := max(in.GPUsPerWorker, 1)
		if k > api.MaxGPUsPerWorker {
			return nil, fmt.Errorf("%w: job %s has %d GPUs per worker, more than %d", ErrInvalidInput, in.ID, k, api.MaxGPUsPerWorker)
		}
		if in.Workers > (MaxWorkers-total)/k {
			return nil, fmt.Errorf("%w: more than %d GPUs in all", ErrOverCapacity, MaxWorkers)
		}
		total += in.Workers * k
		at = s.oldNodes(in.Current, at)
		jobs = append(jobs, job{id: in.ID, want: in.Workers, k: k, slot: int32(i),
			had: int32(min(len(at), math.MaxInt32)), intact: !slices.Contains(at, -1)})
		j := &jobs[len(jobs)-1]
		live = live[:0]
		for w, n := range at {
			if n >= 0 && w < in.Workers {
				live = append(live, n)
			}
		}
		if cap(counts)-len(counts) < len(live) {
			counts = w.chunk(len(live))
		}
		start := len(counts)
		counts = countNodes(live, counts)
		j.survivors = counts[start:len(counts):len(counts)]
		s.jobs = append(s.jobs, j)
	}
	if total > capacity {
		return nil, fmt.Errorf("%w: workers of %d GPUs for %d GPUs", ErrOverCapacity, total, capacity)
	}
	return s, nil
}

// oldNodes returns the node index of each old worker of a job, given its
// Current, or -1 where its node is gone, in buf's storage.
func (s *state) oldNodes(current []api.NodeName, buf []int) []int {
	buf = buf[:0]
	for w, name := range current {
		// Workers of a job mostly share nodes: the same name is the same
		// string, compared without hashing.
		n := -1
		if w > 0 && name == current[w-1] {
			n = buf[w-1]
		} else if x, ok := s.index[name]; ok {
			n = x
		}
		buf = append(buf, n)
	}
	return buf
}

// countNodes appends a list of node indices to out as sorted per-node
// counts.
func countNodes(nodes []int, out []nodeCount) []nodeCount {
	slices.Sort(nodes)
	first := len(out)
	for _, n := range nodes {
		if k := len(out); k > first && out[k-1].node == int32(n) {
			out[k-1].n++
			continue
		}
		out = append(out, nodeCount{node: int32(n), n: 1})
	}
	return out
}

// bySizeDesc orders jobs by worker size, largest first, then by number of
// workers, then by ID: the order of best-fit-decreasing (large workers
// first leave the small ones to fill the holes), and the order in which
// unchanged jobs claim nodes.
func bySizeDesc(a, b *job) int {
	if c := cmp.Compare(b.k, a.k); c != 0 {
		return c
	}
	if c := cmp.Compare(b.want, a.want); c != 0 {
		return c
	}
	return cmp.Compare(a.id, b.id)
}

// keepUnchanged pins every job whose size did not change and whose nodes all
// still exist to its current nodes. Only an input whose current placement
// already overfills a node (a node that shrank) can stop that; then the
// larger jobs keep their places and the others are repacked.
func (s *state) keepUnchanged() {
	unchanged := func(j *job) bool { return j.want == int(j.had) && j.intact }
	load := s.sc.ints(len(s.free))
	defer s.sc.give(load)
	for _, j := range s.jobs {
		if unchanged(j) {
			for _, c := range j.survivors {
				load[c.node] += int(c.n) * j.k
			}
		}
	}
	// Usually the unchanged jobs fit together where they are; then each
	// fits at its turn in any order, and neither a list of them nor a sort
	// is needed.
	order := s.jobs
	for n, l := range load {
		if l > s.free[n] {
			order = slices.DeleteFunc(slices.Clone(s.jobs), func(j *job) bool { return !unchanged(j) })
			slices.SortFunc(order, bySizeDesc)
			break
		}
	}
	for _, j := range order {
		if !unchanged(j) {
			continue
		}
		fits := true
		for _, c := range j.survivors {
			fits = fits && int(c.n)*j.k <= s.free[c.node]
		}
		if !fits {
			continue
		}
		for _, c := range j.survivors {
			s.free[c.node] -= int(c.n) * j.k
		}
		j.kept = true
		j.final = j.survivors
	}
}

// fork returns a copy of a state that keepUnchanged has run on, for
// placing it again. The copy shares the node lists and the kept jobs, which
// the steps that follow (pack, layOut) only read, and owns copies of the
// other jobs, which layOut fills in. A step that changes a kept job must
// own it first (see own).
func (s *state) fork() *state { return s.forkInto(nil) }

// forkInto is fork reusing the storage of spare, an earlier fork no longer
// needed (nil for none), which must not be used again.
func (s *state) forkInto(spare *state) *state {
	t := *s
	f := s.ws.store(spare)
	t.store = f
	f.free = append(f.free[:0], s.free...)
	f.jobs = append(f.jobs[:0], s.jobs...)
	t.free, t.jobs = f.free, f.jobs
	// The copies in one slab: thousands of jobs change in some rounds.
	n := 0
	for _, j := range t.jobs {
		if !j.kept {
			n++
		}
	}
	clear(f.copies)
	if cap(f.copies) < n {
		f.copies = make([]job, 0, n)
	}
	copies := f.copies[:0]
	for i, j := range t.jobs {
		if !j.kept {
			copies = append(copies, *j)
			t.jobs[i] = &copies[len(copies)-1]
		}
	}
	f.copies = copies
	return &t
}

// own replaces job i with a copy the state may change.
func (s *state) own(i int) *job {
	c := *s.jobs[i]
	s.jobs[i] = &c
	return &c
}

// unkeep undoes keepUnchanged, so the next pack places every job.
func (s *state) unkeep() {
	copy(s.free, s.caps)
	for _, j := range s.jobs {
		j.kept, j.final = false, nil
	}
}

// output binds worker indices to nodes and lists the jobs that do not stay
// exactly where they run, with their moves, by slot.
func (s *state) output() []Moved {
	room := s.sc.ints(len(s.names))
	defer s.sc.give(room)
	var at, nodes []int
	// Counted first, then built in a slice of the exact size: at 100 000
	// jobs thousands can move.
	count := 0
	for _, j := range s.jobs {
		if j.untouched() {
			continue
		}
		at = s.oldNodes(s.get(int(j.slot)).Current, at)
		nodes = bindIndices(j, at, room, nodes)
		j.moves = !slices.Equal(nodes, at)
		if j.moves {
			count++
		}
	}
	if count == 0 {
		return nil
	}
	out := make([]Moved, 0, count)
	for _, j := range s.jobs {
		if !j.moves {
			continue
		}
		old := s.get(int(j.slot)).Current
		at = s.oldNodes(old, at)
		nodes = bindIndices(j, at, room, nodes)
		m := Moved{Slot: int(j.slot), Nodes: make([]api.NodeName, len(nodes))}
		for i, n := range nodes {
			m.Nodes[i] = s.names[n]
		}
		surviving := min(len(old), j.want)
		for i := range surviving {
			if old[i] != m.Nodes[i] {
				m.Moves = append(m.Moves, api.WorkerMove{Index: i, From: old[i], To: m.Nodes[i]})
			}
		}
		m.RestartAll = len(m.Moves) > 0 && len(m.Moves) == surviving
		out = append(out, m)
	}
	return out
}

// untouched reports whether the job was kept where it runs and nothing
// moved it since: every old worker then keeps its node (bindIndices gives
// back its old nodes), which output need not look up.
func (j *job) untouched() bool {
	return j.want == int(j.had) && j.intact && len(j.final) > 0 &&
		len(j.final) == len(j.survivors) && &j.final[0] == &j.survivors[0]
}

// bindIndices turns the job's per-node counts into a node per worker index,
// given its old workers' nodes (oldNodes): a surviving worker stays on its
// node while the job still has room there (lowest indices first), and the
// other indices fill the remaining room in node name order. room is scratch
// space, zero on entry and on return; the result reuses buf's storage.
func bindIndices(j *job, at, room, buf []int) []int {
	for _, c := range j.final {
		room[c.node] += int(c.n)
	}
	nodes := slices.Grow(buf[:0], j.want)[:j.want]
	for i := range nodes {
		nodes[i] = -1
		if i < len(at) {
			if n := at[i]; n >= 0 && room[n] > 0 {
				nodes[i] = n
				room[n]--
			}
		}
	}
	k := 0
	for i, n := range nodes {
		if n >= 0 {
			continue
		}
		for room[j.final[k].node] == 0 {
			k++
		}
		nodes[i] = int(j.final[k].node)
		room[nodes[i]]--
	}
	return nodes
}
