package algorithm

import (
	"fmt"

	"github.com/vodascheduler/voda/pkg/api"
)

// Result is a policy's decision: GPUs per job and why.
type Result struct {
	// Allocation has an entry for every job of the snapshot: 0, or a count
	// within the job's [Min, Max].
	Allocation api.Allocation
	// Reasons explains each job's allocation.
	Reasons map[api.JobID]Reason
}

// ReasonCode classifies a Reason.
type ReasonCode uint8

// Reason codes.
const (
	// Allocated: the job got Workers GPUs.
	Allocated ReasonCode = iota
	// Compacted: the job was shrunk to its minimum because many jobs wait.
	Compacted
	// NoRoom: the job needs Need GPUs but only Free were left for it.
	NoRoom
)

// Reason says in a few words why a job got what it got. It is a small value
// so policies can fill one per job cheaply; String formats it.
type Reason struct {
	Code    ReasonCode
	Workers int
	Need    int
	Free    int
	// Waiting is the number of jobs left waiting (Compacted only).
	Waiting int
}

func (r Reason) String() string {
	switch r.Code {
	case Allocated:
		return fmt.Sprintf("running: %d GPUs", r.Workers)
	case Compacted:
		return fmt.Sprintf("running: %d GPUs, shrunk to its minimum because %d jobs are waiting", r.Workers, r.Waiting)
	case NoRoom:
		return fmt.Sprintf("waiting: %d GPUs needed, %d free", r.Need, r.Free)
	}
	return fmt.Sprintf("unknown reason %d", r.Code)
}

// newResult allocates a result sized for n jobs.
func newResult(n int) Result {
	return Result{
		Allocation: make(api.Allocation, n),
		Reasons:    make(map[api.JobID]Reason, n),
	}
}

// ValidateResult checks a result against its snapshot: every job has exactly
// one entry, each 0 or within [Min, Max], no unknown jobs, and no more GPUs
// than exist. It returns an error instead of panicking, so a caller can keep
// its previous plan.
func ValidateResult(s *Snapshot, r Result) error {
	if len(r.Allocation) != len(s.Jobs) {
		if id, dup := s.duplicate(); dup {
			return fmt.Errorf("job %s appears twice", id)
		}
	}
	total := 0
	for i := range s.Jobs {
		j := &s.Jobs[i]
		n, ok := r.Allocation[j.ID]
		if !ok {
			return fmt.Errorf("job %s has no allocation", j.ID)
		}
		if n != 0 && (n < j.Min || n > j.Max) {
			return fmt.Errorf("job %s got %d GPUs, outside its range [%d, %d]", j.ID, n, j.Min, j.Max)
		}
		total += n
	}
	if len(r.Allocation) != len(s.Jobs) {
		return fmt.Errorf("allocation names %d jobs, snapshot has %d", len(r.Allocation), len(s.Jobs))
	}
	if total > s.GPUs {
		return fmt.Errorf("allocation hands out %d GPUs, only %d exist", total, s.GPUs)
	}
	return nil
}
