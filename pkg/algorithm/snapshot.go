package algorithm

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/vodascheduler/voda/pkg/api"
)

// Snapshot is everything a policy may look at: read-only, built by the engine
// (or a test) for one decision.
type Snapshot struct {
	// Now is the time of the decision. Policies never read a clock.
	Now time.Time
	// GPUs is the number of schedulable GPUs of this GPU type.
	GPUs int
	// NodeGPUs optionally lists the GPUs of each node. When given, it must
	// add up to GPUs. The policies decide worker counts only and placement
	// decides shapes, but when some job's workers hold several GPUs the
	// policies use it to hand out only workers that fit whole on a node,
	// and HeSRPT, when all nodes are alike, to explore only sizes that
	// tile them. The engine always lists the nodes.
	NodeGPUs []int
	// Jobs are the jobs that want GPUs (waiting or running), in any order;
	// every policy orders them itself, deterministically.
	Jobs []Job

	// multi caches multiGPU within one policy run (the policies get the
	// snapshot by value): 0 not asked yet, 1 no, 2 yes.
	multi uint8
}

// Speedup returns a job's throughput with n workers relative to one worker
// (of the job's GPUsPerWorker GPUs).
type Speedup func(n int) float64

// Job is a policy's view of one job.
type Job struct {
	ID api.JobID
	// Submitted is when the job was submitted.
	Submitted time.Time
	// FirstStarted is when the job first ran; zero if it never ran.
	FirstStarted time.Time
	// Min, Max and Requested are the worker range and the rigid size, in
	// workers. Requested 0 means Min.
	Min, Max, Requested int
	// GPUsPerWorker is the GPUs each worker holds on one node; 0 means 1.
	// A job with n workers holds n × GPUsPerWorker GPUs.
	GPUsPerWorker int
	// Queue is the job's Tiresias queue as the engine keeps it (0 is the
	// highest), including promotions; the Tiresias policies demote further
	// by attained service.
	Queue int
	// Attained is the GPU-seconds received in total.
	Attained float64
	// AttainedSinceStart is the GPU-seconds received since the job last
	// started (or was last promoted).
	AttainedSinceStart float64
	// Executed is the wall-clock seconds the job has run in total.
	Executed float64
	// Workers is the job's current allocation, in workers.
	Workers int
	// Remaining is the estimated remaining time in seconds when running on
	// one worker (one GPU when GPUsPerWorker is 1). A negative, NaN or
	// infinite value means unknown; unknown jobs count as the longest.
	Remaining float64
	// Speedup is the job's speedup curve. Nil means linear, S(n) = n.
	Speedup Speedup
	// Measured reports whether Speedup at n workers was measured (by the
	// job or others like it) or given, rather than extrapolated by a
	// model. Nil means every value of a non-nil Speedup is.
	Measured func(n int) bool
	// RestartCost is the seconds a restart of this job is assumed to cost
	// (the restart itself plus a margin against flapping), where its
	// runtime restarts faster or slower than the policy assumes; 0 means
	// the policy's own (HeSRPTConfig.RestartCost).
	RestartCost float64
}

// measuredAt reports whether the job's speed at n workers is known: a nil
// Speedup (linear) is an assumption, not a measurement.
func (j *Job) measuredAt(n int) bool {
	return j.Speedup != nil && (j.Measured == nil || j.Measured(n))
}

// S returns the job's speedup with n workers: 0 for n ≤ 0, linear when no
// curve is known, and 0 for a curve value that is negative or NaN.
func (j *Job) S(n int) float64 {
	if n <= 0 {
		return 0
	}
	if j.Speedup == nil {
		return float64(n)
	}
	v := j.Speedup(n)
	if !(v >= 0) { // negative or NaN
		return 0
	}
	return v
}

// RequestedWorkers returns Requested, or Min when Requested is unset.
func (j *Job) RequestedWorkers() int {
	if j.Requested == 0 {
		return j.Min
	}
	return j.Requested
}

// remaining returns the remaining time at one GPU, +Inf when unknown.
func (j *Job) remaining() float64 {
	r := j.Remaining
	if r < 0 || math.IsNaN(r) {
		return math.Inf(1)
	}
	return r
}

// Validate reports problems that make a snapshot meaningless. The engine
// validates specs on submission, so an error here is a bug upstream; a
// policy returns it instead of guessing.
func (s *Snapshot) Validate() error {
	if err := s.validateJobs(); err != nil {
		return err
	}
	if id, dup := s.duplicate(); dup {
		return fmt.Errorf("job %s appears twice", id)
	}
	return nil
}

// validateJobs is Validate without the search for duplicate IDs, which
// the policies leave to their result check (ValidateResult): a duplicate
// leaves the result one entry short, and only then is it looked for.
// Searching every round cost as much as a policy's sort.
func (s *Snapshot) validateJobs() error {
	if s.GPUs < 0 {
		return fmt.Errorf("snapshot has %d GPUs, must not be negative", s.GPUs)
	}
	if len(s.NodeGPUs) > 0 {
		sum := 0
		for i, g := range s.NodeGPUs {
			if g < 0 {
				return fmt.Errorf("node %d has %d GPUs, must not be negative", i, g)
			}
			sum += g
		}
		if sum != s.GPUs {
			return fmt.Errorf("nodes hold %d GPUs but the snapshot says %d", sum, s.GPUs)
		}
	}
	for i := range s.Jobs {
		j := &s.Jobs[i]
		if j.ID == "" {
			return fmt.Errorf("job %d has no ID", i)
		}
		if err := j.validate(); err != nil {
			return fmt.Errorf("job %s: %w", j.ID, err)
		}
	}
	return nil
}

// duplicate returns an ID that appears more than once, if any.
func (s *Snapshot) duplicate() (api.JobID, bool) {
	seen := make(map[api.JobID]struct{}, len(s.Jobs))
	for i := range s.Jobs {
		id := s.Jobs[i].ID
		if _, dup := seen[id]; dup {
			return id, true
		}
		seen[id] = struct{}{}
	}
	return "", false
}

func (j *Job) validate() error {
	var errs []error
	if j.Min < 1 {
		errs = append(errs, fmt.Errorf("min workers %d is below 1", j.Min))
	}
	if j.Max < j.Min {
		errs = append(errs, fmt.Errorf("max workers %d is below min %d", j.Max, j.Min))
	}
	if j.Requested != 0 && (j.Requested < j.Min || j.Requested > j.Max) {
		errs = append(errs, fmt.Errorf("requested workers %d is outside [%d, %d]", j.Requested, j.Min, j.Max))
	}
	if j.Workers < 0 {
		errs = append(errs, fmt.Errorf("current workers %d is negative", j.Workers))
	}
	if j.Queue < 0 {
		errs = append(errs, fmt.Errorf("queue %d is negative", j.Queue))
	}
	if j.GPUsPerWorker < 0 || j.GPUsPerWorker > api.MaxGPUsPerWorker {
		errs = append(errs, fmt.Errorf("GPUs per worker %d is outside [1, %d]", j.GPUsPerWorker, api.MaxGPUsPerWorker))
	}
	return errors.Join(errs...)
}
