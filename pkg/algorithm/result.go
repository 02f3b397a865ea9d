package algorithm

import (
	"fmt"
	"math"
	"time"

	"github.com/vodascheduler/voda/pkg/api"
)

// Result is a policy's decision: workers per job and why.
type Result struct {
	// Allocation has an entry for every job of the snapshot: 0, or a worker
	// count within the job's [Min, Max].
	Allocation api.Allocation
	// Reasons explains each job's allocation.
	Reasons map[api.JobID]Reason
}

// ReasonCode classifies a Reason.
type ReasonCode uint8

// Reason codes.
const (
	// Allocated: the job got Workers workers.
	Allocated ReasonCode = iota
	// Compacted: the job was shrunk to its minimum because many jobs wait.
	Compacted
	// NoRoom: the job needs Need GPUs but only Free were left for it (or
	// they were, but not PerWorker of them on one node).
	NoRoom
	// NoNode: a worker of the job needs PerWorker GPUs on one node and no
	// node has that many, even empty.
	NoNode
	// Fastest: the job got Workers workers, below its maximum, and its
	// speedup curve (over the sizes the policy may hand out) is no faster
	// at any larger size.
	Fastest
	// Tiled: as Fastest among the sizes that tile the nodes, but a size
	// that does not, of unmeasured speed, would be faster by its curve.
	Tiled
	// Kept: the job keeps its Workers workers because growing to Target
	// would not repay the restart it costs.
	Kept
	// Finishing: the job keeps its Workers workers because it has less
	// than Seconds of work left, too little for a resize to pay.
	Finishing
	// Outbid: the job got Workers workers and more would speed it up, but
	// the other GPUs gain more on other jobs; Free GPUs were left over,
	// too few or too scattered for a larger size of this job. (The message
	// leaves the count out, so that it changes only when the rule does: a
	// changed message is a status write.)
	Outbid
	// AtQuota: the job waits because its queue, Queue, holds Held GPUs,
	// all its budget for now (Quota: its nominal quota and what it may
	// borrow); it needs Need GPUs more.
	AtQuota
	// Reclaimed: the job was shrunk to Workers workers, or stopped, so
	// that other queues get back GPUs its queue, Queue, had borrowed; the
	// queue may hold Quota GPUs now.
	Reclaimed
	// NoQueue: the job's queue, Queue, does not exist (or, with Queue
	// empty, the job names none while the cluster has queues). A waiting
	// job waits; a running one keeps its Workers until it ends.
	NoQueue
	// OverQuota: the job's minimum, Need GPUs, exceeds the Quota GPUs its
	// queue, Queue, may ever hold (nominal quota plus borrowing limit,
	// within the GPU type's GPUs).
	OverQuota
)

// Reason says in a few words why a job got what it got. It is a small value
// (the engine keeps one per job, and a round writes one per job), so its
// counts are 32-bit; String formats it.
type Reason struct {
	Code ReasonCode
	// Workers is the allocation in workers (Allocated, Compacted).
	Workers int32
	// Need and Free are in GPUs (NoRoom).
	Need int32
	Free int32
	// PerWorker is the job's GPUs per worker; 0 means 1.
	PerWorker int32
	// Waiting is the number of jobs left waiting (Compacted only).
	Waiting int32
	// Target is the allocation, in workers, the job was not moved to
	// (Kept).
	Target int32
	// Seconds is the work left, at the job's allocation, under which a
	// running job keeps its size (Finishing).
	Seconds int32
	// Held and Quota describe the job's queue, Queue (AtQuota,
	// Reclaimed), in GPUs; Problem says why its queue is not known
	// (NoQueue).
	Held, Quota int32
	Queue       string
	Problem     string
}

// Narrow turns a count into a Reason's: GPU and worker counts, and seconds
// under 68 years, fit; a larger value is held at the most it can say.
func Narrow(n int) int32 {
	return int32(min(max(n, math.MinInt32), math.MaxInt32))
}

func (r Reason) String() string {
	switch r.Code {
	case Allocated:
		return "running: " + r.size()
	case Compacted:
		return fmt.Sprintf("running: %s, shrunk to its minimum because %d jobs are waiting", r.size(), r.Waiting)
	case NoRoom:
		if r.PerWorker > 1 && r.Need <= r.Free {
			return fmt.Sprintf("waiting: %d GPUs needed in workers of %d on one node; %d free, but not in such blocks", r.Need, r.PerWorker, r.Free)
		}
		if r.PerWorker > 1 {
			return fmt.Sprintf("waiting: %d GPUs needed (workers of %d), %d free", r.Need, r.PerWorker, r.Free)
		}
		return fmt.Sprintf("waiting: %d GPUs needed, %d free", r.Need, r.Free)
	case NoNode:
		return fmt.Sprintf("waiting: a worker needs %d GPUs on one node and no node has that many", r.PerWorker)
	case Fastest:
		return "running: " + r.size() + ", its fastest size: its speedup curve gains nothing from more"
	case Tiled:
		return "running: " + r.size() + ", its fastest size that tiles the nodes; larger ones that do not are tried only once their speed is measured"
	case Kept:
		return fmt.Sprintf("running: %s, kept: growing to %s would not repay the restart", r.size(), r.gpus(r.Target))
	case Finishing:
		return fmt.Sprintf("running: %s, kept: nearly done (under %s of work left), a resize would not pay", r.size(), time.Duration(r.Seconds)*time.Second)
	case Outbid:
		if r.Free > 0 {
			return "running: " + r.size() + ", more would speed it up but the free GPUs are too few or too scattered for a larger size"
		}
		return "running: " + r.size() + ", more would speed it up but the other GPUs gain more on other jobs"
	case AtQuota:
		return fmt.Sprintf("waiting: queue %s is at its quota: it holds %d of the %d GPUs it may hold now; %d GPUs needed", r.Queue, r.Held, r.Quota, r.Need)
	case Reclaimed:
		if r.Workers > 0 {
			return fmt.Sprintf("running: %s, shrunk: other queues take back GPUs queue %s borrowed (it may hold %d now)", r.size(), r.Queue, r.Quota)
		}
		return fmt.Sprintf("waiting: stopped as other queues take back GPUs queue %s borrowed (it may hold %d now)", r.Queue, r.Quota)
	case NoQueue:
		switch {
		case r.Problem != "" && r.Workers > 0:
			return fmt.Sprintf("running: %s, kept at its size until it ends: %s", r.size(), r.Problem)
		case r.Problem != "":
			return "waiting: " + r.Problem
		case r.Queue == "":
			return "waiting: the cluster shares its GPUs through queues and the job names none: set spec.queueName, or give its namespace a default LocalQueue"
		case r.Workers > 0:
			return fmt.Sprintf("running: %s, kept at its size until it ends: its queue %s no longer exists", r.size(), r.Queue)
		}
		return fmt.Sprintf("waiting: queue %s does not exist", r.Queue)
	case OverQuota:
		return fmt.Sprintf("waiting: its minimum of %d GPUs exceeds the %d GPUs queue %s may ever hold: lower minWorkers or raise the queue's quota or borrowing limit", r.Need, r.Quota, r.Queue)
	}
	return fmt.Sprintf("unknown reason %d", r.Code)
}

// size formats an allocation: GPUs, and workers when they hold several.
func (r Reason) size() string {
	if r.PerWorker > 1 {
		workers := "workers"
		if r.Workers == 1 {
			workers = "worker"
		}
		return fmt.Sprintf("%d GPUs (%d %s of %d)", int(r.Workers)*int(r.PerWorker), r.Workers, workers, r.PerWorker)
	}
	return fmt.Sprintf("%d GPUs", r.Workers)
}

// gpus formats n workers of the reason's job in GPUs.
func (r Reason) gpus(n int32) string {
	return fmt.Sprintf("%d GPUs", int(n)*int(max(r.PerWorker, 1)))
}

// allocated is the reason of a job that got n workers.
func allocated(j *Job, n int) Reason {
	return Reason{Code: Allocated, Workers: Narrow(n), PerWorker: Narrow(j.GPUsPerWorker)}
}

// noRoom is the reason of a job that needs n workers where c is left.
func noRoom(j *Job, n int, c *capacity) Reason {
	if c.byFree != nil && j.k() >= len(c.byFree) {
		return Reason{Code: NoNode, PerWorker: Narrow(j.GPUsPerWorker)}
	}
	return Reason{Code: NoRoom, Need: Narrow(n * j.k()), Free: Narrow(c.free), PerWorker: Narrow(j.GPUsPerWorker)}
}

// Decision is a policy's allocation in snapshot order: Workers[i] and
// Reasons[i] are those of Snapshot.Jobs[i]. It holds what Result holds
// without maps keyed by job ID, which at 100 000 jobs cost more than most
// policies: Decide fills one, reusing its buffers.
type Decision struct {
	Workers []int
	Reasons []Reason
	// Report, when set, receives each reason as the policy decides it,
	// by job index, instead of Reasons, which stays empty: the last one
	// for a job is its reason, and a job reported none has the zero
	// Reason. A caller that keeps a reason per job saves a copy of them
	// all. Should the decision then fail its check (a policy's bug),
	// the reasons reported stand.
	Report func(i int, r Reason)

	// order holds the policies' sorting buffers from round to round;
	// gains and compacted Elastic-Tiresias's heap of marginal gains and
	// the jobs it shrank.
	order     orderBuf
	gains     gainHeap
	compacted []bool
	// ffdl holds FfDL Optimizer's per-job lists.
	ffdl ffdlBuf
}

// reset sizes the decision for n jobs, every entry zero, reusing its
// buffers.
func (d *Decision) reset(n int) {
	d.Workers = zeroed(d.Workers, n)
	if d.Report != nil {
		d.Reasons = d.Reasons[:0]
		return
	}
	d.Reasons = zeroed(d.Reasons, n)
}

// reason records job i's reason.
func (d *Decision) reason(i int, r Reason) {
	if d.Report != nil {
		d.Report(i, r)
		return
	}
	d.Reasons[i] = r
}

// zeroed returns b resized to n zero elements, reallocated only when it
// is too small.
func zeroed[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n)
	}
	b = b[:n]
	clear(b)
	return b
}

// set records job i's allocation and reason.
func (d *Decision) set(i, n int, r Reason) { d.Workers[i] = n; d.reason(i, r) }

// Decide runs the policy on s into d, reusing d's buffers, and validates
// the decision as Allocate does. Unlike Allocate it does not look for
// duplicate job IDs, which would take a map as large as the snapshot: the
// caller keeps them unique (the engine keys its jobs by ID).
func Decide(p Policy, s Snapshot, d *Decision) error {
	if err := s.validateJobs(); err != nil {
		return err
	}
	d.reset(len(s.Jobs))
	if err := p.decide(&s, d); err != nil {
		return err
	}
	return validateDecision(&s, d)
}

// allocate is every policy's Allocate: its decision keyed by job ID.
func allocate(p Policy, s Snapshot) (Result, error) {
	var d Decision // reasons in d.Reasons
	if err := Decide(p, s, &d); err != nil {
		return Result{}, err
	}
	r := Result{Allocation: make(api.Allocation, len(s.Jobs)), Reasons: make(map[api.JobID]Reason, len(s.Jobs))}
	for i := range s.Jobs {
		id := s.Jobs[i].ID
		r.Allocation[id], r.Reasons[id] = d.Workers[i], d.Reasons[i]
	}
	if len(r.Allocation) != len(s.Jobs) {
		id, _ := s.duplicate()
		return Result{}, fmt.Errorf("job %s appears twice", id)
	}
	return r, nil
}

// validateDecision is ValidateResult for a decision: a policy's own
// decision is checked, so a bug surfaces as an error the engine can
// survive rather than as a bad plan.
func validateDecision(s *Snapshot, d *Decision) error {
	if len(d.Workers) != len(s.Jobs) || d.Report == nil && len(d.Reasons) != len(s.Jobs) {
		return fmt.Errorf("decision holds %d allocations and %d reasons, snapshot has %d jobs", len(d.Workers), len(d.Reasons), len(s.Jobs))
	}
	total := 0
	for i := range s.Jobs {
		j := &s.Jobs[i]
		if n := d.Workers[i]; n != 0 && (n < j.Min || n > j.Max) {
			return fmt.Errorf("job %s got %d workers, outside its range [%d, %d]", j.ID, n, j.Min, j.Max)
		}
		total += d.Workers[i] * j.k()
	}
	if total > s.GPUs {
		return fmt.Errorf("allocation hands out %d GPUs, only %d exist", total, s.GPUs)
	}
	return nil
}

// ValidateResult checks a result against its snapshot: every job has exactly
// one entry, each 0 or within [Min, Max], no unknown jobs, and no more GPUs
// (workers × GPUs per worker) than exist. Whether the workers fit the nodes
// is placement's to check. It returns an error instead of panicking, so a caller can keep
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
			return fmt.Errorf("job %s got %d workers, outside its range [%d, %d]", j.ID, n, j.Min, j.Max)
		}
		total += n * j.k()
	}
	if len(r.Allocation) != len(s.Jobs) {
		return fmt.Errorf("allocation names %d jobs, snapshot has %d", len(r.Allocation), len(s.Jobs))
	}
	if total > s.GPUs {
		return fmt.Errorf("allocation hands out %d GPUs, only %d exist", total, s.GPUs)
	}
	return nil
}
