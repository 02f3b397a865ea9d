package algorithm

import (
	"cmp"
	"slices"
	"time"
)

// FIFO serves jobs in submission order, each at its requested size, with
// backfilling: a job that does not fit is skipped and later, smaller jobs may
// run. Because the allocation is recomputed at every event, a backfilled job
// loses its GPUs as soon as an earlier job fits again (implicit preemption).
type FIFO struct{}

// ElasticFIFO serves jobs in submission order: first every job's minimum
// (skipping jobs that do not fit), then the leftover GPUs one at a time,
// round-robin in the same order, to running jobs below their maximum.
type ElasticFIFO struct{}

var (
	_ Policy = FIFO{}
	_ Policy = ElasticFIFO{}
)

// Name implements Policy.
func (FIFO) Name() string { return NameFIFO }

// Name implements Policy.
func (ElasticFIFO) Name() string { return NameElasticFIFO }

// Allocate implements Policy.
func (p FIFO) Allocate(s Snapshot) (Result, error) { return allocate(p, s) }

func (FIFO) decide(s *Snapshot, d *Decision) error {
	rigid(s, arrivalOrder(s.Jobs, &d.order), d)
	return nil
}

func noKey(*Job, int) (int64, time.Time) { return 0, time.Time{} }

// Allocate implements Policy.
func (p ElasticFIFO) Allocate(s Snapshot) (Result, error) { return allocate(p, s) }

func (ElasticFIFO) decide(s *Snapshot, d *Decision) error {
	elastic(s, arrivalOrder(s.Jobs, &d.order), d)
	return nil
}

// order returns the indices of jobs sorted by the given comparison, ties
// broken by submission time and then ID, so the result never depends on the
// order jobs arrive in the snapshot.
// A nil comparison orders by arrival alone.
func order(jobs []Job, by func(x, y int) int) []int {
	idx := make([]int, len(jobs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(x, y int) int {
		if by != nil {
			if c := by(x, y); c != 0 {
				return c
			}
		}
		return byArrival(&jobs[x], &jobs[y])
	})
	return idx
}

// sortKey is a job's position in an ordering, precomputed so that sorting
// thousands of jobs compares integers rather than calling back into times
// and closures. Times are (Unix seconds, nanoseconds), exact for every time.
type sortKey struct {
	k1, k2, submitted int64
	k2n, submittedN   int32
	i                 int32 // the job's index; its ID breaks the last ties
}

// orderByKeys returns the indices of jobs sorted by key ascending — an
// integer, then a time — ties broken by submission time and then ID, like
// order. The keys hold no strings, so the sort moves small values and
// reads an ID only on a full tie.
//
// Rounds are cheap when jobs come in submission order, as the engine
// passes them: jobs with equal keys are then already in order, so the
// order is found by grouping the jobs by their first key (there are few:
// one for FIFO, queue and started-or-not for Tiresias) and sorting only the
// groups that are not in order yet.
//
// buf, when not nil, lends its buffers, which the result then shares.
func orderByKeys(jobs []Job, key func(j *Job, i int) (k1 int64, k2 time.Time), buf *orderBuf) []int {
	if buf == nil {
		buf = &orderBuf{}
	}
	buf.keys = zeroed(buf.keys, len(jobs))
	keys := buf.keys
	for i := range jobs {
		j := &jobs[i]
		k1, k2 := key(j, i)
		keys[i] = sortKey{k1: k1, k2: k2.Unix(), k2n: int32(k2.Nanosecond()),
			submitted: j.Submitted.Unix(), submittedN: int32(j.Submitted.Nanosecond()), i: int32(i)}
	}
	compare := func(a, b sortKey) int {
		switch {
		case a.k1 != b.k1:
			return cmp.Compare(a.k1, b.k1)
		case a.k2 != b.k2:
			return cmp.Compare(a.k2, b.k2)
		case a.k2n != b.k2n:
			return cmp.Compare(a.k2n, b.k2n)
		case a.submitted != b.submitted:
			return cmp.Compare(a.submitted, b.submitted)
		case a.submittedN != b.submittedN:
			return cmp.Compare(a.submittedN, b.submittedN)
		}
		return cmp.Compare(jobs[a.i].ID, jobs[b.i].ID)
	}
	if !slices.IsSortedFunc(keys, compare) {
		keys = sortByGroups(keys, compare, buf)
	}
	idx := buf.indices(len(keys))
	for n, k := range keys {
		idx[n] = int(k.i)
	}
	return idx
}

// arrivalOrder is orderByKeys with no key: submission order, then ID. The
// engine passes the jobs in that order, so it is mostly checked, without
// the keys.
func arrivalOrder(jobs []Job, buf *orderBuf) []int {
	for i := 1; i < len(jobs); i++ {
		a, b := &jobs[i-1], &jobs[i]
		// As orderByKeys compares times: seconds, then nanoseconds.
		c := cmp.Compare(a.Submitted.Unix(), b.Submitted.Unix())
		if c == 0 {
			c = cmp.Compare(a.Submitted.Nanosecond(), b.Submitted.Nanosecond())
		}
		if c > 0 || c == 0 && a.ID > b.ID {
			return orderByKeys(jobs, noKey, buf)
		}
	}
	idx := buf.indices(len(jobs))
	for i := range idx {
		idx[i] = i
	}
	return idx
}

// sortByGroups sorts keys by compare, whose first criterion is k1. When k1
// takes few values, keys are grouped by k1 in one counting pass, keeping
// their order within each group, and only the groups out of order are
// sorted; otherwise keys are sorted whole.
func sortByGroups(keys []sortKey, compare func(a, b sortKey) int, buf *orderBuf) []sortKey {
	grouped, ok := groupByFirstKey(keys, buf)
	if !ok {
		slices.SortFunc(keys, compare)
		return keys
	}
	for lo := 0; lo < len(grouped); {
		hi := lo + 1
		for hi < len(grouped) && grouped[hi].k1 == grouped[lo].k1 {
			hi++
		}
		if g := grouped[lo:hi]; !slices.IsSortedFunc(g, compare) {
			slices.SortFunc(g, compare)
		}
		lo = hi
	}
	return grouped
}

// groupByFirstKey orders keys by k1 alone, keeping the order within each
// k1 (a counting sort). It reports false, having done nothing, when k1
// takes more than a few values.
func groupByFirstKey(keys []sortKey, buf *orderBuf) ([]sortKey, bool) {
	const most = 16
	var firsts []int64
	for _, k := range keys {
		if !slices.Contains(firsts, k.k1) {
			if len(firsts) == most {
				return nil, false
			}
			firsts = append(firsts, k.k1)
		}
	}
	slices.Sort(firsts)
	start := make([]int, len(firsts))
	for _, k := range keys {
		if g, _ := slices.BinarySearch(firsts, k.k1); g+1 < len(start) {
			start[g+1]++
		}
	}
	for g := 1; g < len(start); g++ {
		start[g] += start[g-1]
	}
	out := zeroed(buf.grouped, len(keys))
	buf.grouped = out
	for _, k := range keys {
		g, _ := slices.BinarySearch(firsts, k.k1)
		out[start[g]] = k
		start[g]++
	}
	return out, true
}

func byArrival(a, b *Job) int {
	if c := a.Submitted.Compare(b.Submitted); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

// rigid gives each job, in order, its requested size if it still fits.
func rigid(s *Snapshot, idx []int, d *Decision) {
	c := newCapacity(s)
	for _, i := range idx {
		j := &s.Jobs[i]
		need := j.RequestedWorkers()
		if c.fits(j.k(), need) {
			c.take(j.k(), need)
			d.set(i, need, allocated(j, need))
			continue
		}
		d.set(i, 0, noRoom(j, need, &c))
	}
}

// elastic gives each job, in order, its minimum if it fits, then hands out
// the leftover capacity one worker at a time, round-robin in the same
// order, to jobs that already run, are below their maximum and whose next
// worker still fits. Jobs that could not get their minimum never receive
// single workers (the original did, producing allocations below the
// minimum).
func elastic(s *Snapshot, idx []int, d *Decision) {
	c := newCapacity(s)
	grow := make([]int, 0, len(idx))
	for _, i := range idx {
		j := &s.Jobs[i]
		if c.fits(j.k(), j.Min) {
			c.take(j.k(), j.Min)
			d.Workers[i] = j.Min
			if j.Min < j.Max {
				grow = append(grow, i)
			}
			continue
		}
		d.set(i, 0, noRoom(j, j.Min, &c))
	}
	for c.free > 0 && len(grow) > 0 {
		next := grow[:0]
		for _, i := range grow {
			j := &s.Jobs[i]
			if !c.fits(j.k(), 1) {
				continue // capacity only shrinks: it never fits again
			}
			c.take(j.k(), 1)
			d.Workers[i]++
			if d.Workers[i] < j.Max {
				next = append(next, i)
			}
		}
		grow = next
	}
	for _, i := range idx {
		if n := d.Workers[i]; n > 0 {
			d.reason(i, allocated(&s.Jobs[i], n))
		}
	}
}

// orderBuf holds orderByKeys' buffers, which a Decision keeps from one
// round to the next.
type orderBuf struct {
	keys, grouped []sortKey
	idx           []int
}

// indices returns n zero ints from the buffer's own, or new ones without
// a buffer.
func (b *orderBuf) indices(n int) []int {
	if b == nil {
		return make([]int, n)
	}
	b.idx = zeroed(b.idx, n)
	return b.idx
}
