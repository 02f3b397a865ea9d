package scheduler

import (
	"math"
	"time"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/api"
)

// Job is the engine's record of one job: everything it needs to schedule the
// job again after a restart (see Engine.Restore).
type Job struct {
	ID    api.JobID
	Spec  api.JobSpec
	Phase api.Phase
	// Workers is the current allocation, in workers of Spec.K() GPUs, and
	// Nodes the node of each worker, by worker index.
	Workers int
	Nodes   []api.NodeName
	// Queue is the Tiresias queue (0 is the highest).
	Queue int

	Submitted, FirstStarted, LastStarted, Finished time.Time
	// Grown is when the job last started or grew: a queue's minimum run
	// time protects its borrowed workers from then on.
	Grown time.Time

	// Time accounting, in seconds.
	WaitingSeconds float64
	RunningSeconds float64
	GPUSeconds     float64
	// SinceStartGPUSeconds counts GPU-seconds since the last start or
	// Tiresias promotion.
	SinceStartGPUSeconds float64
	// LastRunSeconds is the length of the last finished running period;
	// WaitingSinceRunSeconds the time waited since then (or since
	// submission).
	LastRunSeconds         float64
	WaitingSinceRunSeconds float64

	// Rescales counts scale-ins and scale-outs; Restarts counts resumptions
	// after a preemption and migrations that moved every worker;
	// Preemptions counts halts.
	Rescales, Restarts, Preemptions int

	// Remaining is the estimated remaining time at one worker, in seconds;
	// negative means unknown. Speedup is the estimated speedup curve over
	// workers; nil means linear. Measured says where the curve was
	// measured rather than extrapolated; nil means everywhere.
	Remaining float64
	Speedup   algorithm.Speedup
	Measured  func(n int) bool

	// Message says, in words, why the job is where it is.
	Message string
	// Unschedulable, when set, says why no node of the job's type can run
	// its workers: the policy does not see it until it is cleared (see
	// JobUnschedulable).
	Unschedulable string
	// QueueProblem, when set, says why the job's queue cannot be known:
	// it waits (see JobQueue).
	QueueProblem string

	// Accounted is the instant the counters above hold for, in the copies
	// Engine.Job and Engine.Jobs return; the engine ignores it otherwise.
	Accounted time.Time

	// reason, when set, stands in for Message until someone reads it.
	reason    algorithm.Reason
	hasReason bool
	// planned is the workers the round being planned gives the job.
	planned int
	// undoAt is, counting from 1, the job's entry in Engine.undos: what
	// the last plan changed of it; 0 for none.
	undoAt int32
}

// setReason records the policy's reason, formatted only when read.
func (j *Job) setReason(r algorithm.Reason) { j.reason, j.hasReason = r, true }

// setMessage records a message in words.
func (j *Job) setMessage(m string) { j.Message, j.hasReason = m, false }

func (j *Job) active() bool { return j.Phase == api.PhaseWaiting || j.Phase == api.PhaseRunning }

// view turns the record into what a policy sees.
func (j *Job) view() algorithm.Job {
	rem := j.Remaining
	if rem < 0 {
		rem = math.Inf(1)
	}
	return algorithm.Job{
		ID:                 j.ID,
		Submitted:          j.Submitted,
		FirstStarted:       j.FirstStarted,
		Min:                j.Spec.MinWorkers,
		Max:                j.Spec.MaxWorkers,
		Requested:          j.Spec.RequestedWorkers,
		GPUsPerWorker:      j.Spec.GPUsPerWorker,
		Queue:              j.Queue,
		Attained:           j.GPUSeconds,
		AttainedSinceStart: j.SinceStartGPUSeconds,
		Executed:           j.RunningSeconds,
		Workers:            j.Workers,
		Remaining:          rem,
		Speedup:            j.Speedup,
		Measured:           j.Measured,
		// Twice the restart, as the policies' own 60 s is to the 30 s
		// restarts they were tuned with: the restart and a margin.
		RestartCost: 2 * j.Spec.RestartSeconds,
	}
}

// advance charges dt seconds to the job's counters.
func (j *Job) advance(dt float64) {
	switch j.Phase {
	case api.PhaseRunning:
		j.RunningSeconds += dt
		gpu := dt * float64(j.Workers*j.Spec.K())
		j.GPUSeconds += gpu
		j.SinceStartGPUSeconds += gpu
	case api.PhaseWaiting:
		j.WaitingSeconds += dt
		j.WaitingSinceRunSeconds += dt
	}
}

// clone returns a deep copy with its message formatted, without what
// belongs to the engine's last round.
func (j *Job) clone() Job {
	c := *j
	c.planned, c.undoAt = 0, 0
	c.Nodes = append([]api.NodeName(nil), j.Nodes...)
	if c.hasReason {
		c.Message, c.hasReason = c.reason.String(), false
	}
	return c
}

// undo is what an action the engine assumed changes of a job's record: what
// forget puts back when the action fails. It is kept for every action of
// the last round, a start for every job after a restart, so it is small.
type undo struct {
	job                             *Job
	nodes                           []api.NodeName
	lastStarted                     time.Time
	workers                         int32
	rescales, restarts, preemptions int32
	// running says the job ran (actions are for active jobs: it waited
	// otherwise); neverStarted that FirstStarted was zero, which only a
	// start changes.
	running, neverStarted bool
}

// undoOf saves what an action may change of j. Actions replace j.Nodes
// rather than change its elements, so the slice is shared, not copied.
func undoOf(j *Job) undo {
	return undo{job: j, running: j.Phase == api.PhaseRunning, workers: int32(j.Workers), nodes: j.Nodes,
		neverStarted: j.FirstStarted.IsZero(), lastStarted: j.LastStarted,
		rescales: int32(j.Rescales), restarts: int32(j.Restarts), preemptions: int32(j.Preemptions)}
}

// restore puts back what undoOf saved.
func (u undo) restore(j *Job) {
	j.Phase = api.PhaseWaiting
	if u.running {
		j.Phase = api.PhaseRunning
	}
	j.Workers, j.Nodes = int(u.workers), u.nodes
	if u.neverStarted {
		j.FirstStarted = time.Time{}
	}
	j.LastStarted = u.lastStarted
	j.Rescales, j.Restarts, j.Preemptions = int(u.rescales), int(u.restarts), int(u.preemptions)
}
