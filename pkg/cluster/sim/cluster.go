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
	// Plan, when set, replaces StepSeconds for a job whose speed changes
	// as it goes (one that tunes its batch size, so that its work is
	// statistical progress and its speed changes epoch by epoch): on every
	// start, change of placement or Restart it is told the placement's
	// shape and the work done, and returns how the work goes on there
	// from then until the next change, and the seconds per optimizer step
	// to report.
	Plan func(shape []int, done float64) ([]Segment, float64)
}

// Segment is a stretch of a job's work at one speed: up to work End (from
// where the previous segment ended), Rate work per second. A plan's
// segments are in order of End; past the last one the job keeps its last
// rate.
type Segment struct {
	End, Rate float64
}

// state is a job's runtime in the cluster.
type state struct {
	Job
	nodes     []api.NodeName
	workers   int
	stepSec   float64   // at the current shape; 0 when not running
	segs      []Segment // with Plan, at the current shape; nil when not running
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
	if !(j.Steps > 0) || (j.StepSeconds == nil && j.Plan == nil) {
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
	if s.workers == 0 || (s.segs == nil && s.stepSec <= 0) {
		return s.done
	}
	from := later(s.updated, s.idleUntil)
	if !t.After(from) {
		return s.done
	}
	secs := t.Sub(from).Seconds()
	if s.segs == nil {
		return s.done + secs/s.stepSec
	}
	done := s.done
	for i, g := range s.segs {
		if g.End <= done && i < len(s.segs)-1 {
			continue
		}
		need := (g.End - done) / g.Rate
		if secs <= need || i == len(s.segs)-1 {
			return done + secs*g.Rate
		}
		secs -= need
		done = g.End
	}
	return done
}

// secondsLeft returns the working seconds from the work done to Steps at
// the current speed.
func (s *state) secondsLeft() float64 {
	if s.segs == nil {
		return max(s.Steps-s.done, 0) * s.stepSec
	}
	return PlanSeconds(s.segs, s.done, s.Steps)
}

// PlanSeconds returns the working seconds from work done to total at the
// speeds segs give (past the last segment, at its rate).
func PlanSeconds(segs []Segment, done, total float64) float64 {
	secs := 0.0
	for i, g := range segs {
		end := min(g.End, total)
		if i == len(segs)-1 {
			end = total
		}
		if end > done {
			secs += (end - done) / g.Rate
			done = end
		}
		if done >= total {
			break
		}
	}
	return secs
}

// plan returns a running job's speed on a shape from the work done on.
func (s *state) plan(shape []int, done float64) ([]Segment, float64, error) {
	if s.Plan == nil {
		return nil, s.StepSeconds(shape), nil
	}
	segs, stepSec := s.Plan(shape, done)
	if len(segs) == 0 {
		return nil, 0, fmt.Errorf("no plan on shape %v", shape)
	}
	for i, g := range segs {
		if !(g.Rate > 0) || math.IsInf(g.Rate, 1) || (i > 0 && g.End < segs[i-1].End) {
			return nil, 0, fmt.Errorf("plan on shape %v: segment %d (%g up to %g) has no speed or is out of order", shape, i, g.Rate, g.End)
		}
	}
	return segs, stepSec, nil
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
	var segs []Segment
	done := s.doneAt(now)
	switch a.Kind {
	case api.ActionHalt:
	case api.ActionStart, api.ActionScaleIn, api.ActionScaleOut, api.ActionMigrate:
		if len(a.Nodes) != a.To || a.To < 1 {
			return fmt.Errorf("%s %s: %d nodes for %d workers", a.Kind, a.Job, len(a.Nodes), a.To)
		}
		shape := Shape(a.Nodes, s.GPUsPerWorker)
		var err error
		if segs, stepSec, err = s.plan(shape, done); err != nil {
			return fmt.Errorf("%s %s: %w", a.Kind, a.Job, err)
		}
		if s.Plan == nil && (!(stepSec > 0) || math.IsInf(stepSec, 1)) {
			return fmt.Errorf("%s %s: no throughput on shape %v", a.Kind, a.Job, shape)
		}
	default:
		return fmt.Errorf("unknown action %q", a.Kind)
	}
	// Checked: now change the state.
	s.done = done
	s.updated = now
	c.allocated -= s.workers * max(s.GPUsPerWorker, 1)
	if a.Kind == api.ActionHalt {
		s.workers, s.nodes, s.stepSec, s.segs = 0, nil, 0, nil
	} else {
		s.workers, s.nodes, s.stepSec, s.segs = a.To, append([]api.NodeName(nil), a.Nodes...), stepSec, segs
		// Every change of allocation or placement restarts the workers.
		s.idleUntil = now.Add(c.restartDelay)
	}
	c.allocated += s.workers * max(s.GPUsPerWorker, 1)
	c.schedule(s, now)
	return nil
}

// Restart restarts a running job where it runs, as a change of its batch
// size does: it is idle for the restart delay, then goes on at the speed
// its Plan gives for the work done by now.
func (c *Cluster) Restart(id api.JobID, now time.Time) error {
	s, ok := c.jobs[id]
	if !ok || s.finished || s.workers == 0 {
		return fmt.Errorf("restart: job %s is not running here", id)
	}
	done := s.doneAt(now)
	segs, stepSec, err := s.plan(Shape(s.nodes, s.GPUsPerWorker), done)
	if err != nil {
		return fmt.Errorf("restart %s: %w", id, err)
	}
	s.done, s.updated, s.segs, s.stepSec = done, now, segs, stepSec
	s.idleUntil = now.Add(c.restartDelay)
	c.schedule(s, now)
	return nil
}

// Done returns the work a job has done by now.
func (c *Cluster) Done(id api.JobID, now time.Time) float64 {
	if s, ok := c.jobs[id]; ok {
		return s.doneAt(now)
	}
	return 0
}

// SecondsLeft returns the seconds until a running job finishes at its
// current speed (its restart delay included), as of now; +Inf when it is
// not running.
func (c *Cluster) SecondsLeft(id api.JobID, now time.Time) float64 {
	s, ok := c.jobs[id]
	if !ok || s.workers == 0 || s.finished {
		return math.Inf(1)
	}
	return s.finishAt.Sub(now).Seconds()
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
	left := s.secondsLeft()
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
		s.workers, s.nodes, s.stepSec, s.segs = 0, nil, 0, nil
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
