package algorithm

import (
	"cmp"
	"slices"
)

// SRJF serves the job with the shortest estimated remaining time first, each
// at its requested size, with backfilling, recomputed at every event (so it
// is preemptive shortest-remaining-time-first). Remaining time is measured
// at one GPU, as in the original, so it ranks jobs by remaining work; jobs
// with unknown remaining time go last, in submission order.
type SRJF struct{}

// ElasticSRJF orders jobs as SRJF does, gives each its minimum, then hands
// out leftover GPUs round-robin in that order up to each job's maximum.
type ElasticSRJF struct{}

var (
	_ Policy = SRJF{}
	_ Policy = ElasticSRJF{}
)

// Name implements Policy.
func (SRJF) Name() string { return NameSRJF }

// Name implements Policy.
func (ElasticSRJF) Name() string { return NameElasticSRJF }

// Allocate implements Policy.
func (p SRJF) Allocate(s Snapshot) (Result, error) { return allocate(p, s) }

func (SRJF) decide(s *Snapshot, d *Decision) error {
	rigid(s, remainingOrder(s.Jobs), d)
	return nil
}

// Allocate implements Policy.
func (p ElasticSRJF) Allocate(s Snapshot) (Result, error) { return allocate(p, s) }

func (ElasticSRJF) decide(s *Snapshot, d *Decision) error {
	elastic(s, remainingOrder(s.Jobs), d)
	return nil
}

func byRemaining(jobs []Job) func(x, y int) int {
	return func(x, y int) int {
		return cmp.Compare(jobs[x].remaining(), jobs[y].remaining())
	}
}

// remainingOrder is order(jobs, byRemaining(jobs)). When the jobs come in
// arrival order, as the engine passes them, ties go to the lower index,
// and the sort compares a dense copy of the remaining times with the
// indices: comparing jobs through their records (a cache miss each at
// 100 000 jobs) was a third of an SRJF round.
func remainingOrder(jobs []Job) []int {
	for i := 1; i < len(jobs); i++ {
		if byArrival(&jobs[i-1], &jobs[i]) >= 0 {
			return order(jobs, byRemaining(jobs))
		}
	}
	type key struct {
		rem float64
		i   int32
	}
	keys := make([]key, len(jobs))
	for i := range jobs {
		keys[i] = key{jobs[i].remaining(), int32(i)}
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := cmp.Compare(a.rem, b.rem); c != 0 {
			return c
		}
		return cmp.Compare(a.i, b.i)
	})
	idx := make([]int, len(jobs))
	for n, k := range keys {
		idx[n] = int(k.i)
	}
	return idx
}
