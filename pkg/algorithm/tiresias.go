package algorithm

import (
	"container/heap"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// ServiceMeasure selects what Tiresias counts as a job's attained service.
type ServiceMeasure string

const (
	// ServiceSinceStart counts GPU-seconds since the job last started or
	// was last promoted (the original Voda scheduler).
	ServiceSinceStart ServiceMeasure = "since-start"
	// ServiceTotal counts all GPU-seconds the job ever received.
	ServiceTotal ServiceMeasure = "total"
	// ServiceExecutedTimesRequested counts executed wall-clock seconds
	// times the requested GPUs (the Pollux artifact's baseline).
	ServiceExecutedTimesRequested ServiceMeasure = "executed-x-requested"
)

// TiresiasConfig holds the discretised 2D-LAS parameters shared by Tiresias
// and Elastic-Tiresias.
type TiresiasConfig struct {
	// Thresholds are the attained-service limits, in GPU-seconds, of every
	// queue but the last: a job in queue i whose service reaches
	// Thresholds[i] moves to queue i+1. len(Thresholds)+1 queues exist.
	Thresholds []float64
	// PromoteKnob enables starvation avoidance: a job that has waited at
	// least PromoteKnob times its last running time goes back to queue 0.
	// Zero turns promotion off.
	PromoteKnob float64
	// Service is the attained-service measure.
	Service ServiceMeasure
	// CompactionThreshold is Elastic-Tiresias's limit on waiting jobs
	// beyond which jobs in queues ≥ 1 are shrunk to their minimum.
	CompactionThreshold int
}

// DefaultTiresias returns the original Voda settings: two queues split at
// 3600 GPU-seconds since the last start, promotion after waiting 8× the
// last running time, compaction beyond 10 waiting jobs.
func DefaultTiresias() TiresiasConfig {
	return TiresiasConfig{
		Thresholds:          []float64{3600},
		PromoteKnob:         8,
		Service:             ServiceSinceStart,
		CompactionThreshold: 10,
	}
}

// PolluxArtifactTiresias returns the settings of the Pollux OSDI'21
// artifact's Tiresias baseline: two queues split at 16 GPU-hours of executed
// time × requested GPUs, no promotion.
func PolluxArtifactTiresias() TiresiasConfig {
	return TiresiasConfig{
		Thresholds:          []float64{57600},
		Service:             ServiceExecutedTimesRequested,
		CompactionThreshold: 10,
	}
}

// Validate checks the configuration.
func (c TiresiasConfig) Validate() error {
	var errs []error
	for i, t := range c.Thresholds {
		if !(t > 0) || math.IsInf(t, 1) {
			errs = append(errs, fmt.Errorf("tiresias threshold %d is %v, must be a positive number of GPU-seconds", i, t))
		} else if i > 0 && t <= c.Thresholds[i-1] {
			errs = append(errs, fmt.Errorf("tiresias thresholds must increase, got %v after %v", t, c.Thresholds[i-1]))
		}
	}
	if !(c.PromoteKnob >= 0) || math.IsInf(c.PromoteKnob, 1) {
		errs = append(errs, fmt.Errorf("tiresias promote knob is %v, must be 0 (off) or positive", c.PromoteKnob))
	}
	switch c.Service {
	case ServiceSinceStart, ServiceTotal, ServiceExecutedTimesRequested:
	default:
		errs = append(errs, fmt.Errorf("tiresias service measure %q is unknown: use %s, %s or %s",
			c.Service, ServiceSinceStart, ServiceTotal, ServiceExecutedTimesRequested))
	}
	if c.PromoteKnob > 0 && c.Service != ServiceSinceStart {
		// Promotion restarts the since-start counter; with a cumulative
		// measure a promoted job would be demoted again at once.
		errs = append(errs, fmt.Errorf("tiresias promotion (promote knob %v) needs the %s service measure, but it is %q: set tiresias.promote-knob=0 or tiresias.service=%s",
			c.PromoteKnob, ServiceSinceStart, c.Service, ServiceSinceStart))
	}
	if c.CompactionThreshold < 0 {
		errs = append(errs, fmt.Errorf("compaction threshold is %d, must not be negative", c.CompactionThreshold))
	}
	return errors.Join(errs...)
}

// Queues returns the number of priority queues.
func (c TiresiasConfig) Queues() int { return len(c.Thresholds) + 1 }

// AttainedService returns a job's attained service under the configured
// measure.
func (c TiresiasConfig) AttainedService(j *Job) float64 {
	switch c.Service {
	case ServiceTotal:
		return j.Attained
	case ServiceExecutedTimesRequested:
		return j.Executed * float64(j.RequestedWorkers()*j.k())
	}
	return j.AttainedSinceStart
}

// QueueOf returns the queue a job belongs in: its recorded queue (clamped to
// the lowest queue, so an out-of-range priority is still scheduled, unlike
// in the original), demoted while its attained service reaches the
// threshold of its current queue.
func (c TiresiasConfig) QueueOf(j *Job) int {
	return c.Demote(j.Queue, c.AttainedService(j))
}

// Demote returns the queue for a job recorded in queue q with the given
// attained service; see QueueOf.
func (c TiresiasConfig) Demote(q int, service float64) int {
	q = min(q, len(c.Thresholds))
	for q < len(c.Thresholds) && service >= c.Thresholds[q] {
		q++
	}
	return q
}

// Promote reports whether a job in queue > 0 has starved: it has waited at
// least PromoteKnob times its last running time. A job that never ran keeps
// the priority it was submitted with.
func (c TiresiasConfig) Promote(queue int, waitingSinceRun, lastRun float64) bool {
	return c.PromoteKnob > 0 && queue > 0 && lastRun > 0 && waitingSinceRun >= c.PromoteKnob*lastRun
}

// Tiresias is discretised two-dimensional least-attained-service (Tiresias-L,
// Gu et al., NSDI'19): jobs are served queue by queue, first-started first
// inside a queue (never-started jobs after, by submission), each at its
// requested size if it fits. Demotion follows attained GPU service;
// starvation promotion is applied by the engine through Promote.
type Tiresias struct {
	Config TiresiasConfig
}

// ElasticTiresias is Elastic-Tiresias (Wu et al., IEEE TPDS 2021, as used by
// the original Voda): Tiresias's order and base allocation; when more than
// CompactionThreshold jobs still wait, jobs in queues ≥ 1 shrink to their
// minimum; then free GPUs go one worker at a time to the job with the
// largest marginal speedup per GPU (a waiting job receives its minimum as a
// block, valued at its average per-GPU speedup), until the gain is not
// positive. A worker of k GPUs counts its gain over its k GPUs, so jobs of
// different worker sizes compete per GPU.
type ElasticTiresias struct {
	Config TiresiasConfig
}

var (
	_ Policy = Tiresias{}
	_ Policy = ElasticTiresias{}
)

// Name implements Policy.
func (Tiresias) Name() string { return NameTiresias }

// Name implements Policy.
func (ElasticTiresias) Name() string { return NameElasticTiresias }

// Allocate implements Policy.
func (t Tiresias) Allocate(s Snapshot) (Result, error) { return allocate(t, s) }

func (t Tiresias) decide(s *Snapshot, d *Decision) error {
	if err := t.Config.Validate(); err != nil {
		return err
	}
	idx, _ := tiresiasOrder(s, t.Config, &d.order)
	rigid(s, idx, d)
	return nil
}

// tiresiasOrder sorts jobs by queue, then first start (never-started last),
// then submission; it also returns each job's queue by index.
func tiresiasOrder(s *Snapshot, c TiresiasConfig, buf *orderBuf) ([]int, []int) {
	queues := make([]int, len(s.Jobs))
	for i := range s.Jobs {
		queues[i] = c.QueueOf(&s.Jobs[i])
	}
	idx := orderByKeys(s.Jobs, func(j *Job, i int) (int64, time.Time) {
		// Queue first; inside a queue, never-started jobs after every
		// started one.
		k := int64(queues[i]) << 1
		if j.FirstStarted.IsZero() {
			k |= 1
		}
		return k, j.FirstStarted
	}, buf)
	return idx, queues
}

// Allocate implements Policy.
func (t ElasticTiresias) Allocate(s Snapshot) (Result, error) { return allocate(t, s) }

func (t ElasticTiresias) decide(s *Snapshot, d *Decision) error {
	if err := t.Config.Validate(); err != nil {
		return err
	}
	idx, queues := tiresiasOrder(s, t.Config, &d.order)
	alloc := d.Workers
	c := newCapacity(s)

	// Base allocation: requested size in Tiresias order.
	waiting := 0
	for _, i := range idx {
		j := &s.Jobs[i]
		if need := j.RequestedWorkers(); c.fits(j.k(), need) {
			alloc[i] = need
			c.take(j.k(), need)
		} else {
			waiting++
		}
	}

	// Compaction: too many waiting jobs shrink low-priority jobs to min.
	d.compacted = zeroed(d.compacted, len(s.Jobs))
	compacted := d.compacted
	if waiting > t.Config.CompactionThreshold {
		for _, i := range idx {
			j := &s.Jobs[i]
			if queues[i] >= 1 && alloc[i] > j.Min {
				compacted[i] = true
			}
		}
		c = t.compact(s, idx, alloc, compacted)
	}

	// Greedy expansion by marginal speedup per GPU.
	h := &d.gains
	h.queues, h.rank = queues, zeroed(h.rank, len(s.Jobs))
	h.items = slices.Grow(h.items[:0], len(idx))
	defer func() { h.queues = nil }()
	for rank, i := range idx {
		h.rank[i] = rank
		if alloc[i] < s.Jobs[i].Max {
			h.items = append(h.items, gainItem{i, marginalGain(&s.Jobs[i], alloc[i])})
		}
	}
	heap.Init(h)
	for c.free > 0 && h.Len() > 0 {
		top := h.items[0]
		if !(top.gain > 0) {
			break
		}
		i := top.job
		j := &s.Jobs[i]
		grant := 1
		if alloc[i] == 0 {
			grant = j.Min
		}
		if !c.fits(j.k(), grant) {
			h.drop() // cannot start or grow with what is left
			continue
		}
		alloc[i] += grant
		c.take(j.k(), grant)
		if alloc[i] >= j.Max {
			h.drop()
			continue
		}
		h.items[0].gain = marginalGain(j, alloc[i])
		heap.Fix(h, 0)
	}

	waitingAfter := 0
	for i := range s.Jobs {
		if alloc[i] == 0 {
			waitingAfter++
		}
	}
	for i := range s.Jobs {
		j := &s.Jobs[i]
		switch {
		case alloc[i] == 0:
			d.reason(i, noRoom(j, j.Min, &c))
		case compacted[i] && alloc[i] == j.Min:
			d.reason(i, Reason{Code: Compacted, Workers: Narrow(alloc[i]), PerWorker: Narrow(j.GPUsPerWorker), Waiting: Narrow(waitingAfter)})
		default:
			d.reason(i, allocated(j, alloc[i]))
		}
	}
	return nil
}

// compact shrinks the marked jobs to their minimum and returns the capacity
// left after every job's allocation. With one GPU per worker that is the
// running total; otherwise the allocations are laid out again, in Tiresias
// order, since freed workers leave holes the capacity cannot name.
func (ElasticTiresias) compact(s *Snapshot, idx, alloc []int, marked []bool) capacity {
	c := newCapacity(s)
	for _, i := range idx {
		j := &s.Jobs[i]
		if marked[i] {
			alloc[i] = j.Min
		}
		if !c.fits(j.k(), alloc[i]) {
			// Best fit is not monotone: smaller workers earlier can, rarely,
			// strand a later job's. It waits rather than overfill a node.
			alloc[i], marked[i] = 0, false
		}
		c.take(j.k(), alloc[i])
	}
	return c
}

// marginalGain is the speedup gained by the next grant, per GPU it costs: a
// waiting job's average speedup per GPU at its minimum, or a running job's
// (S(n+1) − S(n)) / GPUs per worker.
func marginalGain(j *Job, n int) float64 {
	if n == 0 {
		return j.S(j.Min) / float64(j.Min*j.k())
	}
	return (j.S(n+1) - j.S(n)) / float64(j.k())
}

type gainItem struct {
	job  int
	gain float64
}

// gainHeap is a max-heap on gain, ties to the higher-priority queue, then to
// the job earlier in Tiresias order.
type gainHeap struct {
	items  []gainItem
	queues []int
	rank   []int
}

func (h *gainHeap) Len() int { return len(h.items) }
func (h *gainHeap) Less(a, b int) bool {
	x, y := h.items[a], h.items[b]
	if x.gain != y.gain {
		return x.gain > y.gain
	}
	if qx, qy := h.queues[x.job], h.queues[y.job]; qx != qy {
		return qx < qy
	}
	return h.rank[x.job] < h.rank[y.job]
}
func (h *gainHeap) Swap(a, b int) { h.items[a], h.items[b] = h.items[b], h.items[a] }
func (h *gainHeap) Push(x any)    { h.items = append(h.items, x.(gainItem)) }
func (h *gainHeap) Pop() any {
	last := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return last
}

// drop removes the top item, as heap.Pop does, without boxing it: tens of
// thousands of items a round leave the heap at 100 000 jobs.
func (h *gainHeap) drop() {
	n := len(h.items) - 1
	h.Swap(0, n)
	h.items = h.items[:n]
	heap.Fix(h, 0)
}
