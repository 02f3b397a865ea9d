package scheduler

import (
	"time"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/api"
)

// Event is something that happened, applied with Engine.Step.
type Event interface{ isEvent() }

// JobSubmitted adds a job. Remaining and Speedup are optional estimates.
type JobSubmitted struct {
	ID        api.JobID
	Spec      api.JobSpec
	Remaining float64 // seconds at one GPU; 0 or negative means unknown
	Speedup   algorithm.Speedup
	// Measured says where Speedup was measured rather than extrapolated
	// (algorithm.Job.Measured); nil means everywhere.
	Measured func(n int) bool
}

// JobDeleted removes a job, whatever its phase; the backend removes what it
// runs.
type JobDeleted struct{ ID api.JobID }

// JobCompleted marks a job finished successfully.
type JobCompleted struct{ ID api.JobID }

// JobFailed marks a job failed.
type JobFailed struct {
	ID     api.JobID
	Reason string
}

// JobStalled takes a running job's GPUs back because its workers did not
// all start (a gang that stayed partly pending): the job waits again,
// counted as preempted, and is requeued for the next rescheduling.
type JobStalled struct {
	ID     api.JobID
	Reason string
}

// JobUnschedulable holds a job back: its workers cannot run on any node of
// its GPU type, whatever GPUs it is given (it asks for a resource no node
// offers, or no node takes it for a taint it does not tolerate); Reason
// says why. The policy no longer sees it, a running job gives its GPUs
// back at the next rescheduling, and it waits, its time still counted,
// until JobUnschedulable with an empty Reason lets it be scheduled again
// (its spec changed, or a node that could run it appeared).
type JobUnschedulable struct {
	ID     api.JobID
	Reason string
}

// NodeSet adds a node or changes its GPU count.
type NodeSet struct{ Node api.Node }

// NodeRemoved removes a node (deleted, unlabelled or lost).
type NodeRemoved struct{ Name api.NodeName }

// Progress updates a job's estimates from runtime metrics. A nil Speedup
// leaves the curve unchanged; a negative Remaining marks it unknown. The
// estimates take effect at the next rescheduling; a new curve asks for one
// only when the policy has not run for IdleReplan while GPUs sit idle and
// some job could take more.
type Progress struct {
	ID        api.JobID
	Remaining float64
	// Speedup, when not nil, replaces the job's curve, and Measured with
	// it (as in JobSubmitted).
	Speedup  algorithm.Speedup
	Measured func(n int) bool
}

// SetPolicy switches the scheduling policy, and its parameters when
// Algorithm is set (a section left at its zero value holds the defaults).
// An unknown name or invalid parameters are rejected and the current
// policy stays.
type SetPolicy struct {
	Name      string
	Algorithm *algorithm.Config
}

// SetRateLimit changes the minimum time between two reschedulings (0 allowed).
type SetRateLimit struct{ Every time.Duration }

// ActionFailed reports that a backend could not carry out an action.
type ActionFailed struct {
	Action api.Action
	Err    error
}

// Tick only advances time; the Tiresias ticker of a backend may send it.
type Tick struct{}

func (JobSubmitted) isEvent()     {}
func (JobStalled) isEvent()       {}
func (JobUnschedulable) isEvent() {}
func (JobDeleted) isEvent()       {}
func (JobCompleted) isEvent()     {}
func (JobFailed) isEvent()        {}
func (NodeSet) isEvent()          {}
func (NodeRemoved) isEvent()      {}
func (Progress) isEvent()         {}
func (SetPolicy) isEvent()        {}
func (SetRateLimit) isEvent()     {}
func (ActionFailed) isEvent()     {}
func (Tick) isEvent()             {}
