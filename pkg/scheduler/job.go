package scheduler

import (
	"math"
	"time"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/api"
)

// Job is a copy of the engine's record of one job (Engine.Job, Engine.Jobs):
// everything it needs to schedule the job again after a restart (see
// Engine.Restore).
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

	// The engine holds these instants to the nanosecond between the years
	// 1678 and 2262 (see stamp); a copy gives them in the location of the
	// engine's clock.
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

	// Accounted is the instant the counters above hold for (see
	// Engine.Jobs); Restore ignores it.
	Accounted time.Time
}

// job is the engine's own record of a job: Job's fields, kept small (an
// engine holds 100 000 of them at the size of the largest clusters, where
// each byte of the record is 0.1 MB of heap): 384 bytes, where Job takes
// 560. Instants are stamps, the counts of changes 32-bit, the spec without
// the GPU type (the engine's), the rare problems behind a pointer, and the
// message a pointer, nil while the policy's reason, kept unformatted until
// someone reads it, stands in for it.
type job struct {
	ID      api.JobID
	Spec    jobSpec
	Phase   api.Phase
	Workers int
	Nodes   []api.NodeName
	Queue   int

	Submitted, FirstStarted, LastStarted, Finished, Grown stamp

	WaitingSeconds         float64
	RunningSeconds         float64
	GPUSeconds             float64
	SinceStartGPUSeconds   float64
	LastRunSeconds         float64
	WaitingSinceRunSeconds float64

	Rescales, Restarts, Preemptions int32
	// undoAt is, counting from 1, the job's entry in Engine.undos: what
	// the last plan changed of it; 0 for none.
	undoAt int32

	Remaining float64
	Speedup   algorithm.Speedup
	Measured  func(n int) bool

	// message is the job's message in words; nil while reason stands in
	// for it, kept unformatted until someone reads it.
	message *string
	// problems holds Unschedulable and QueueProblem; nil while both are
	// empty, as they nearly always are.
	problems *problems

	reason algorithm.Reason
	// planned is the workers the round being planned gives the job.
	planned int
}

// notScheduledYet is every new job's message, shared.
var notScheduledYet = "waiting: not scheduled yet"

// jobSpec is api.JobSpec without the GPU type, which is the engine's.
type jobSpec struct {
	MinWorkers, MaxWorkers, RequestedWorkers, Priority, Epochs int
	Category                                                   string
	GPUsPerWorker                                              int
	ClusterQueue                                               string
	RestartSeconds                                             float64
}

func specOf(s api.JobSpec) jobSpec {
	return jobSpec{MinWorkers: s.MinWorkers, MaxWorkers: s.MaxWorkers, RequestedWorkers: s.RequestedWorkers,
		Priority: s.Priority, Epochs: s.Epochs, Category: s.Category, GPUsPerWorker: s.GPUsPerWorker,
		ClusterQueue: s.ClusterQueue, RestartSeconds: s.RestartSeconds}
}

// withType is the spec for GPUs of type t.
func (s jobSpec) withType(t api.GPUType) api.JobSpec {
	return api.JobSpec{GPUType: t, MinWorkers: s.MinWorkers, MaxWorkers: s.MaxWorkers, RequestedWorkers: s.RequestedWorkers,
		Priority: s.Priority, Epochs: s.Epochs, Category: s.Category, GPUsPerWorker: s.GPUsPerWorker,
		ClusterQueue: s.ClusterQueue, RestartSeconds: s.RestartSeconds}
}

// K is api.JobSpec.K.
func (s jobSpec) K() int { return s.withType("").K() }

// Requested is api.JobSpec.Requested.
func (s jobSpec) Requested() int { return s.withType("").Requested() }

// problems are why a job is held out of the policy's sight.
type problems struct{ unschedulable, queue string }

func (j *job) unschedulable() string {
	if j.problems == nil {
		return ""
	}
	return j.problems.unschedulable
}

func (j *job) queueProblem() string {
	if j.problems == nil {
		return ""
	}
	return j.problems.queue
}

// setProblems sets both problems, dropping the holder when both are empty.
func (j *job) setProblems(unschedulable, queue string) {
	if unschedulable == "" && queue == "" {
		j.problems = nil
		return
	}
	j.problems = &problems{unschedulable: unschedulable, queue: queue}
}

// stamp is an instant in 8 bytes: nanoseconds since 1970 in UTC with the
// sign bit flipped, so that the zero stamp is the zero time and stamps
// order as their instants do. It holds the years 1678 to 2262 to the
// nanosecond (what an int64 of nanoseconds holds); instants beyond are
// held at the nearest end (Restore refuses records that have them).
type stamp uint64

var (
	earliestStamp = time.Unix(0, math.MinInt64+1)
	latestStamp   = time.Unix(0, math.MaxInt64)
)

// stampOf returns t's stamp.
func stampOf(t time.Time) stamp {
	switch {
	case t.IsZero():
		return 0
	case t.Before(earliestStamp):
		t = earliestStamp
	case t.After(latestStamp):
		t = latestStamp
	}
	return stamp(uint64(t.UnixNano()) ^ 1<<63)
}

// stampable says whether t is the zero time or within a stamp's range.
func stampable(t time.Time) bool {
	return t.IsZero() || !t.Before(earliestStamp) && !t.After(latestStamp)
}

// outOfStampRange returns the first of r's instants no stamp holds, and
// false; true when every one fits.
func outOfStampRange(r Job) (time.Time, bool) {
	for _, t := range []time.Time{r.Submitted, r.FirstStarted, r.LastStarted, r.Finished, r.Grown} {
		if !stampable(t) {
			return t, false
		}
	}
	return time.Time{}, true
}

func (s stamp) isZero() bool { return s == 0 }

// in returns the instant in loc; the zero time for the zero stamp.
func (s stamp) in(loc *time.Location) time.Time {
	if s == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(uint64(s)^1<<63)).In(loc)
}

// time returns the instant, in UTC, for arithmetic.
func (s stamp) time() time.Time { return s.in(time.UTC) }

// setReason records the policy's reason, formatted only when read.
func (j *job) setReason(r algorithm.Reason) { j.reason, j.message = r, nil }

// setMessage records a message in words.
func (j *job) setMessage(m string) { j.message = &m }

func (j *job) active() bool { return j.Phase == api.PhaseWaiting || j.Phase == api.PhaseRunning }

// view turns the record into what a policy sees.
func (j *job) view() algorithm.Job {
	rem := j.Remaining
	if rem < 0 {
		rem = math.Inf(1)
	}
	return algorithm.Job{
		ID:                 j.ID,
		Submitted:          j.Submitted.time(),
		FirstStarted:       j.FirstStarted.time(),
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
func (j *job) advance(dt float64) {
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

// export returns a copy of the record, its message formatted and its
// instants in loc, without what belongs to the engine's last round.
func (j *job) export(loc *time.Location, gpuType api.GPUType) Job {
	c := Job{
		ID: j.ID, Spec: j.Spec.withType(gpuType), Phase: j.Phase, Workers: j.Workers,
		Nodes: append([]api.NodeName(nil), j.Nodes...), Queue: j.Queue,
		Submitted: j.Submitted.in(loc), FirstStarted: j.FirstStarted.in(loc), LastStarted: j.LastStarted.in(loc),
		Finished: j.Finished.in(loc), Grown: j.Grown.in(loc),
		WaitingSeconds: j.WaitingSeconds, RunningSeconds: j.RunningSeconds, GPUSeconds: j.GPUSeconds,
		SinceStartGPUSeconds: j.SinceStartGPUSeconds, LastRunSeconds: j.LastRunSeconds,
		WaitingSinceRunSeconds: j.WaitingSinceRunSeconds,
		Rescales:               int(j.Rescales), Restarts: int(j.Restarts), Preemptions: int(j.Preemptions),
		Remaining: j.Remaining, Speedup: j.Speedup, Measured: j.Measured,
		Unschedulable: j.unschedulable(), QueueProblem: j.queueProblem(),
	}
	if j.message != nil {
		c.Message = *j.message
	} else {
		c.Message = j.reason.String()
	}
	return c
}

// recordOf returns the engine's record of a copy, its counts of changes
// held at the largest a record holds (2^31-1).
func recordOf(r Job) job {
	j := job{
		ID: r.ID, Spec: specOf(r.Spec), Phase: r.Phase, Workers: r.Workers,
		Nodes: append([]api.NodeName(nil), r.Nodes...), Queue: r.Queue,
		Submitted: stampOf(r.Submitted), FirstStarted: stampOf(r.FirstStarted), LastStarted: stampOf(r.LastStarted),
		Finished: stampOf(r.Finished), Grown: stampOf(r.Grown),
		WaitingSeconds: r.WaitingSeconds, RunningSeconds: r.RunningSeconds, GPUSeconds: r.GPUSeconds,
		SinceStartGPUSeconds: r.SinceStartGPUSeconds, LastRunSeconds: r.LastRunSeconds,
		WaitingSinceRunSeconds: r.WaitingSinceRunSeconds,
		Rescales:               algorithm.Narrow(r.Rescales), Restarts: algorithm.Narrow(r.Restarts), Preemptions: algorithm.Narrow(r.Preemptions),
		Remaining: r.Remaining, Speedup: r.Speedup, Measured: r.Measured,
	}
	j.setMessage(r.Message)
	j.setProblems(r.Unschedulable, r.QueueProblem)
	return j
}

// undo is what an action the engine assumed changes of a job's record: what
// forget puts back when the action fails. It is kept for every action of
// the last round, a start for every job after a restart, so it is small.
type undo struct {
	job                             *job
	nodes                           []api.NodeName
	lastStarted                     stamp
	workers                         int32
	rescales, restarts, preemptions int32
	// running says the job ran (actions are for active jobs: it waited
	// otherwise); neverStarted that FirstStarted was zero, which only a
	// start changes.
	running, neverStarted bool
}

// undoOf saves what an action may change of j. Actions replace j.Nodes
// rather than change its elements, so the slice is shared, not copied.
func undoOf(j *job) undo {
	return undo{job: j, running: j.Phase == api.PhaseRunning, workers: int32(j.Workers), nodes: j.Nodes,
		neverStarted: j.FirstStarted.isZero(), lastStarted: j.LastStarted,
		rescales: j.Rescales, restarts: j.Restarts, preemptions: j.Preemptions}
}

// restore puts back what undoOf saved.
func (u undo) restore(j *job) {
	j.Phase = api.PhaseWaiting
	if u.running {
		j.Phase = api.PhaseRunning
	}
	j.Workers, j.Nodes = int(u.workers), u.nodes
	if u.neverStarted {
		j.FirstStarted = 0
	}
	j.LastStarted = u.lastStarted
	j.Rescales, j.Restarts, j.Preemptions = u.rescales, u.restarts, u.preemptions
}
