package sim

import (
	"cmp"
	"container/heap"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/vodascheduler/voda/pkg/api"
)

// Job is what the cluster needs to know to run a job.
type Job struct {
	ID api.JobID
	// Steps is the work to finish, in optimizer steps.
	Steps float64
	// StepSeconds returns the time of one step on a placement with the
	// given GPUs per node.
	StepSeconds func(shape []int) float64
	// GPUsPerWorker is the GPUs each worker holds; 0 means 1.
	GPUsPerWorker int
}

// state is a job's runtime in the cluster.
type state struct {
	Job
	nodes     []api.NodeName
	workers   int
	stepSec   float64   // at the current shape; 0 when not running
	done      float64   // steps done
	updated   time.Time // when done was last brought up to date
	idleUntil time.Time // restart delay end
	finishAt  time.Time // predicted completion; zero when not running
	version   int       // bumps on every change, to drop stale heap entries
	finished  bool
}

// Cluster runs jobs in virtual time. It is not safe for concurrent use.
type Cluster struct {
	restartDelay time.Duration
	jobs         map[api.JobID]*state
	finishes     finishHeap
	allocated    int
	// versions numbers every prediction, so that a stale one is known
	// even for a job removed and added again.
	versions int
}

// New returns an empty cluster with the given restart delay.
func New(restartDelay time.Duration) *Cluster {
	return &Cluster{restartDelay: restartDelay, jobs: map[api.JobID]*state{}}
}

// Add registers a job (not yet running).
func (c *Cluster) Add(j Job) error {
	if _, dup := c.jobs[j.ID]; dup {
		return fmt.Errorf("job %s added twice", j.ID)
	}
	if !(j.Steps > 0) || j.StepSeconds == nil {
		return fmt.Errorf("job %s has no work or no throughput model", j.ID)
	}
	c.jobs[j.ID] = &state{Job: j}
	return nil
}

// Allocated returns the GPUs currently held by jobs.
func (c *Cluster) Allocated() int { return c.allocated }

// Workers returns a job's current workers and their nodes.
func (c *Cluster) Workers(id api.JobID) (int, []api.NodeName) {
	s, ok := c.jobs[id]
	if !ok {
		return 0, nil
	}
	return s.workers, s.nodes
}

// Remaining returns the steps a job still has to do, as of now.
func (c *Cluster) Remaining(id api.JobID, now time.Time) float64 {
	s, ok := c.jobs[id]
	if !ok {
		return 0
	}
	return max(s.Steps-s.doneAt(now), 0)
}

// Productive reports whether a job is running and past its restart delay.
func (c *Cluster) Productive(id api.JobID, now time.Time) bool {
	s, ok := c.jobs[id]
	return ok && s.workers > 0 && !now.Before(s.idleUntil)
}

// StepSeconds returns a job's current seconds per step (0 if not running).
func (c *Cluster) StepSeconds(id api.JobID) float64 {
	if s, ok := c.jobs[id]; ok {
		return s.stepSec
	}
	return 0
}

// doneAt returns the steps done by time t without changing the state.
func (s *state) doneAt(t time.Time) float64 {
	if s.workers == 0 || s.stepSec <= 0 {
		return s.done
	}
	from := later(s.updated, s.idleUntil)
	if !t.After(from) {
		return s.done
	}
	return s.done + t.Sub(from).Seconds()/s.stepSec
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// Apply carries out one action at time now.
func (c *Cluster) Apply(a api.Action, now time.Time) error {
	s, ok := c.jobs[a.Job]
	if !ok || s.finished {
		return fmt.Errorf("%s: job %s is not running here", a.Kind, a.Job)
	}
	var stepSec float64
	switch a.Kind {
	case api.ActionHalt:
	case api.ActionStart, api.ActionScaleIn, api.ActionScaleOut, api.ActionMigrate:
		if len(a.Nodes) != a.To || a.To < 1 {
			return fmt.Errorf("%s %s: %d nodes for %d workers", a.Kind, a.Job, len(a.Nodes), a.To)
		}
		shape := Shape(a.Nodes, s.GPUsPerWorker)
		stepSec = s.StepSeconds(shape)
		if !(stepSec > 0) || math.IsInf(stepSec, 1) {
			return fmt.Errorf("%s %s: no throughput on shape %v", a.Kind, a.Job, shape)
		}
	default:
		return fmt.Errorf("unknown action %q", a.Kind)
	}
	// Checked: now change the state.
	s.done = s.doneAt(now)
	s.updated = now
	c.allocated -= s.workers * max(s.GPUsPerWorker, 1)
	if a.Kind == api.ActionHalt {
		s.workers, s.nodes, s.stepSec = 0, nil, 0
	} else {
		s.workers, s.nodes, s.stepSec = a.To, append([]api.NodeName(nil), a.Nodes...), stepSec
		// Every change of allocation or placement restarts the workers.
		s.idleUntil = now.Add(c.restartDelay)
	}
	c.allocated += s.workers * max(s.GPUsPerWorker, 1)
	c.schedule(s, now)
	return nil
}

// schedule predicts a job's completion and records it.
func (c *Cluster) schedule(s *state, now time.Time) {
	c.versions++
	s.version = c.versions
	s.finishAt = time.Time{}
	if s.workers == 0 {
		return
	}
	start := later(now, s.idleUntil)
	left := max(s.Steps-s.done, 0) * s.stepSec
	// Round up so the job has certainly finished at the predicted time.
	s.finishAt = start.Add(time.Duration(math.Ceil(left * 1e9)))
	heap.Push(&c.finishes, finish{at: s.finishAt, id: s.ID, version: s.version})
}

// NextFinish returns the earliest predicted completion.
func (c *Cluster) NextFinish() (time.Time, bool) {
	for c.finishes.Len() > 0 {
		f := c.finishes[0]
		if s, ok := c.jobs[f.id]; !ok || s.finished || s.version != f.version {
			heap.Pop(&c.finishes)
			continue
		}
		return f.at, true
	}
	return time.Time{}, false
}

// Finished removes and returns the jobs that complete at or before now, in
// (time, ID) order; they release their GPUs.
func (c *Cluster) Finished(now time.Time) []api.JobID {
	var out []api.JobID
	for {
		at, ok := c.NextFinish()
		if !ok || at.After(now) {
			return out
		}
		f := heap.Pop(&c.finishes).(finish)
		s := c.jobs[f.id]
		s.done, s.updated, s.finished = s.Steps, now, true
		c.allocated -= s.workers * max(s.GPUsPerWorker, 1)
		s.workers, s.nodes, s.stepSec = 0, nil, 0
		out = append(out, f.id)
	}
}

// Shape returns the GPUs per node of a placement of workers of k GPUs
// (k ≤ 1 means one), largest first.
func Shape(nodes []api.NodeName, k int) []int {
	count := map[api.NodeName]int{}
	for _, n := range nodes {
		count[n] += max(k, 1)
	}
	shape := make([]int, 0, len(count))
	for _, c := range count {
		shape = append(shape, c)
	}
	slices.SortFunc(shape, func(a, b int) int { return cmp.Compare(b, a) })
	return shape
}

// PackedShape returns the shape of n GPUs packed onto nodes of size per
// node: full nodes, then the remainder.
func PackedShape(n, perNode int) []int {
	var shape []int
	for n > 0 {
		k := min(n, perNode)
		shape = append(shape, k)
		n -= k
	}
	return shape
}

type finish struct {
	at      time.Time
	id      api.JobID
	version int
}

type finishHeap []finish

func (h finishHeap) Len() int { return len(h) }
func (h finishHeap) Less(a, b int) bool {
	if c := h[a].at.Compare(h[b].at); c != 0 {
		return c < 0
	}
	return h[a].id < h[b].id
}
func (h finishHeap) Swap(a, b int) { h[a], h[b] = h[b], h[a] }
func (h *finishHeap) Push(x any)   { *h = append(*h, x.(finish)) }
func (h *finishHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Remove takes a job out of the cluster at time now, releasing its GPUs,
// and returns the steps it still had to do: the job moves to another
// cluster (another GPU type) with that work.
func (c *Cluster) Remove(id api.JobID, now time.Time) (float64, error) {
	s, ok := c.jobs[id]
	if !ok || s.finished {
		return 0, fmt.Errorf("remove: job %s is not here", id)
	}
	left := max(s.Steps-s.doneAt(now), 0)
	c.allocated -= s.workers * max(s.GPUsPerWorker, 1)
	delete(c.jobs, id) // its predicted completion is then stale
	return left, nil
}
