package algorithm

import "cmp"

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
	rigid(s, order(s.Jobs, byRemaining(s.Jobs)), d)
	return nil
}

// Allocate implements Policy.
func (p ElasticSRJF) Allocate(s Snapshot) (Result, error) { return allocate(p, s) }

func (ElasticSRJF) decide(s *Snapshot, d *Decision) error {
	elastic(s, order(s.Jobs, byRemaining(s.Jobs)), d)
	return nil
}

func byRemaining(jobs []Job) func(x, y int) int {
	return func(x, y int) int {
		return cmp.Compare(jobs[x].remaining(), jobs[y].remaining())
	}
}
