package placement

// Workspace keeps a placement's working storage for the next one: its
// record of every job placed, their node counts, its forks' lists and its
// per-node scratch lists. At 100 000 jobs a placement builds a record for
// nearly every job (about 10 MB), which a caller placing every round (the
// engine) would otherwise allocate anew each time. Nothing a placement
// returns refers to it. The zero value is ready; it is not safe for
// concurrent use.
type Workspace struct {
	slab []job  // the jobs' records, one slab
	list []*job // the first state's list of them
	free []int  // the first state's free GPUs per node
	// chunks hold the jobs' node counts; the first nextChunk are lent.
	chunks    [][]nodeCount
	nextChunk int
	sc        scratch
	// stores are the forks' storage; the first used are lent this
	// placement.
	stores []*forkStore
	used   int
	// count is the number of jobs the last placement was given.
	count int
}

// forkStore is a fork's own storage: its list of jobs, its free GPUs per
// node and its copies of the jobs it may change.
type forkStore struct {
	jobs   []*job
	free   []int
	copies []job
}

// release takes back everything a placement used: the records and copies
// are cleared, so that they hold on to no job ID or layout until reused.
// Storage far larger than the last placement needed is let go, and so are
// copies of more than an eighth of the jobs.
func (w *Workspace) release() {
	clear(w.slab)
	clear(w.list)
	for _, f := range w.stores[:w.used] {
		clear(f.jobs)
		clear(f.copies)
		// A placement that changes most jobs (the first, one after a
		// restart or a change of policy) is rare: its copies are not kept.
		if cap(f.copies) > w.count/8+1024 {
			f.copies = nil
		}
	}
	w.used, w.nextChunk = 0, 0
	if cap(w.slab) > 4*w.count+1024 {
		w.slab, w.list = nil, nil
	}
	w.slab, w.list = w.slab[:0], w.list[:0]
}

// store lends a fork storage, or the spare's when there is one (a fork no
// longer needed, which must not be used again).
func (w *Workspace) store(spare *state) *forkStore {
	if spare != nil && spare.store != nil {
		return spare.store
	}
	if w.used == len(w.stores) {
		w.stores = append(w.stores, &forkStore{})
	}
	w.used++
	return w.stores[w.used-1]
}

// chunk lends storage for at least n node counts: the chunks kept are
// lent in turn, and a new one is kept when none is left.
func (w *Workspace) chunk(n int) []nodeCount {
	for w.nextChunk < len(w.chunks) {
		c := w.chunks[w.nextChunk]
		w.nextChunk++
		if cap(c) >= n {
			return c[:0]
		}
	}
	c := make([]nodeCount, 0, max(n, 8*1024))
	w.chunks = append(w.chunks, c)
	w.nextChunk = len(w.chunks)
	return c
}

// scratch lends the steps of one placement lists of an int per node: at
// 32 768 nodes each is 256 KiB, and a placement that tries compactions
// needed dozens. Lists given back are lent again, zeroed. A nil scratch
// lends new lists.
type scratch struct {
	spare [][]int
}

// ints lends a list of n zeros.
func (sc *scratch) ints(n int) []int {
	if sc == nil {
		return make([]int, n)
	}
	// The last given back first; lists of rows and of nodes mix.
	for k := len(sc.spare) - 1; k >= 0; k-- {
		if cap(sc.spare[k]) >= n {
			b := sc.spare[k][:n]
			last := len(sc.spare) - 1
			sc.spare[k], sc.spare[last] = sc.spare[last], nil
			sc.spare = sc.spare[:last]
			clear(b)
			return b
		}
	}
	return make([]int, n)
}

// give takes back a list ints lent; the caller must not use it again.
func (sc *scratch) give(b []int) {
	if sc != nil {
		sc.spare = append(sc.spare, b)
	}
}
