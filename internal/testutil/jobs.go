// Package testutil holds fluent builders for tests of the core packages, in
// the style MakeJob("a").Workers(1, 4).SubmittedAt(t0).Obj().
//
// Import rule: only Voda's core packages and the standard library; only
// tests import it.
package testutil

import (
	"math"
	"time"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/api"
)

// T0 is a fixed reference time for tests.
var T0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// JobWrapper builds an algorithm.Job.
type JobWrapper struct{ algorithm.Job }

// MakeJob starts a job with one worker, submitted at T0, remaining time
// unknown and linear speedup.
func MakeJob(id string) *JobWrapper {
	return &JobWrapper{algorithm.Job{
		ID: api.JobID(id), Submitted: T0, Min: 1, Max: 1, Remaining: math.Inf(1),
	}}
}

// Obj returns the job.
func (w *JobWrapper) Obj() algorithm.Job { return w.Job }

// Workers sets the worker range.
func (w *JobWrapper) Workers(min, max int) *JobWrapper {
	w.Min, w.Max = min, max
	return w
}

// Requested sets the rigid size.
func (w *JobWrapper) Requested(n int) *JobWrapper {
	w.Job.Requested = n
	return w
}

// SubmittedAt sets the submission time as an offset from T0.
func (w *JobWrapper) SubmittedAt(d time.Duration) *JobWrapper {
	w.Submitted = T0.Add(d)
	return w
}

// StartedAt sets the first start time as an offset from T0.
func (w *JobWrapper) StartedAt(d time.Duration) *JobWrapper {
	w.FirstStarted = T0.Add(d)
	return w
}

// Running sets the current allocation.
func (w *JobWrapper) Running(n int) *JobWrapper {
	w.Job.Workers = n
	return w
}

// RestartCost sets what a restart of the job costs, instead of the
// policy's.
func (w *JobWrapper) RestartCost(d time.Duration) *JobWrapper {
	w.Job.RestartCost = d.Seconds()
	return w
}

// Remaining sets the remaining time at one GPU.
func (w *JobWrapper) Remaining(d time.Duration) *JobWrapper {
	w.Job.Remaining = d.Seconds()
	return w
}

// Queue sets the Tiresias queue.
func (w *JobWrapper) Queue(q int) *JobWrapper {
	w.Job.Queue = q
	return w
}

// Attained sets total and since-start attained GPU-seconds.
func (w *JobWrapper) Attained(total, sinceStart float64) *JobWrapper {
	w.Job.Attained, w.AttainedSinceStart = total, sinceStart
	return w
}

// Executed sets the wall-clock seconds run so far.
func (w *JobWrapper) Executed(sec float64) *JobWrapper {
	w.Job.Executed = sec
	return w
}

// SpeedupTable sets the speedup curve from a table: table[n-1] is S(n);
// beyond the table the last value holds.
func (w *JobWrapper) SpeedupTable(table ...float64) *JobWrapper {
	w.Speedup = func(n int) float64 {
		if n <= 0 || len(table) == 0 {
			return 0
		}
		return table[min(n, len(table))-1]
	}
	return w
}

// Amdahl sets the speedup curve n / (1 + f(n−1)) for a serial fraction f.
func (w *JobWrapper) Amdahl(f float64) *JobWrapper {
	w.Speedup = func(n int) float64 { return float64(n) / (1 + f*float64(n-1)) }
	return w
}

// Snapshot builds a snapshot with the given GPUs and jobs at T0.
func Snapshot(gpus int, jobs ...*JobWrapper) algorithm.Snapshot {
	s := algorithm.Snapshot{Now: T0, GPUs: gpus}
	for _, j := range jobs {
		s.Jobs = append(s.Jobs, j.Obj())
	}
	return s
}

// PerWorker sets the GPUs each worker holds.
func (w *JobWrapper) PerWorker(k int) *JobWrapper {
	w.GPUsPerWorker = k
	return w
}

// NodeSnapshot builds a snapshot of nodes with the given GPUs and jobs at T0.
func NodeSnapshot(nodeGPUs []int, jobs ...*JobWrapper) algorithm.Snapshot {
	total := 0
	for _, g := range nodeGPUs {
		total += g
	}
	s := Snapshot(total, jobs...)
	s.NodeGPUs = append([]int(nil), nodeGPUs...)
	return s
}
