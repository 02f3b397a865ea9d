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
func (SRJF) Allocate(s Snapshot) (Result, error) {
	if err := s.validateJobs(); err != nil {
		return Result{}, err
	}
	return checked(&s, rigid(&s, order(s.Jobs, byRemaining(s.Jobs))))
}

// Allocate implements Policy.
func (ElasticSRJF) Allocate(s Snapshot) (Result, error) {
	if err := s.validateJobs(); err != nil {
		return Result{}, err
	}
	return checked(&s, elastic(&s, order(s.Jobs, byRemaining(s.Jobs))))
}

func byRemaining(jobs []Job) func(x, y int) int {
	return func(x, y int) int {
		return cmp.Compare(jobs[x].remaining(), jobs[y].remaining())
	}
}
