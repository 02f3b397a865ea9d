package scheduler

import (
	"cmp"
	"container/heap"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/quota"
)

// SetQueues replaces the queues the engine's GPUs are split among, with
// their settings for its GPU type (docs/queues.md). With none, every job
// shares every GPU as before; with some, every job must name one
// (JobSpec.ClusterQueue). Invalid settings are rejected and the queues in
// force stay.
type SetQueues struct{ Queues []quota.Queue }

func (SetQueues) isEvent() {}

// QuotaStats counts what taking borrowed GPUs back cost.
type QuotaStats struct {
	// Reclaims counts queues that had to give GPUs back in a round;
	// ByShrinking those that gave them by shrinking jobs alone, stopping
	// none.
	Reclaims, ByShrinking int
	// Shrunk counts jobs shrunk, Stopped jobs stopped, to give GPUs back.
	Shrunk, Stopped int
}

// QueueStatus is one queue's use of the engine's GPU type.
type QueueStatus struct {
	quota.Queue
	// Share is the queue's part of the GPUs at the last rescheduling.
	quota.Share
	// Used is the GPUs the queue's jobs hold; Pending the GPUs its waiting
	// jobs need to start (their minimums); Running and Waiting count them.
	Used, Pending    int
	Running, Waiting int
	// WeightedShare is its use above its nominal quota as a share of what
	// its cohort may lend, divided by its weight (quota.WeightedShare).
	WeightedShare float64
}

func (e *Engine) setQueues(ev SetQueues) error {
	var errs []error
	seen := map[string]bool{}
	for _, q := range ev.Queues {
		if err := q.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("queue %s: %w", q.Name, err))
		}
		if seen[q.Name] {
			errs = append(errs, fmt.Errorf("queue %s is given twice", q.Name))
		}
		seen[q.Name] = true
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	qs := slices.Clone(ev.Queues)
	slices.SortFunc(qs, func(a, b quota.Queue) int { return cmp.Compare(a.Name, b.Name) })
	if slices.Equal(qs, e.queues) {
		return nil
	}
	e.queues = qs
	e.queueIdx = make(map[string]int, len(qs))
	for i, q := range qs {
		e.queueIdx[q.Name] = i
	}
	e.shares = nil
	e.dirty = true
	return nil
}

// Queues returns the queues in force, each with its use, sorted by name.
func (e *Engine) Queues() []QueueStatus {
	out := make([]QueueStatus, len(e.queues))
	for i, q := range e.queues {
		out[i].Queue = q
		if i < len(e.shares) {
			out[i].Share = e.shares[i]
		}
	}
	for _, j := range e.active {
		i, ok := e.queueIdx[j.Spec.ClusterQueue]
		if !ok {
			continue
		}
		if j.Phase == api.PhaseRunning {
			out[i].Used += j.Workers * j.Spec.K()
			out[i].Running++
		} else {
			out[i].Pending += j.Spec.MinWorkers * j.Spec.K()
			out[i].Waiting++
		}
	}
	lendable := e.lendable()
	for i := range out {
		out[i].WeightedShare = quota.WeightedShare(out[i].Queue, out[i].Used, lendable[out[i].Cohort])
	}
	return out
}

// QuotaStats returns what taking borrowed GPUs back has cost so far.
func (e *Engine) QuotaStats() QuotaStats { return e.quotaStats }

// lendable is, per cohort, what its queues may lend at most plus the
// GPUs in no queue's quota.
func (e *Engine) lendable() map[string]int {
	out := map[string]int{}
	nominal := 0
	for _, q := range e.queues {
		nominal += q.Nominal
		if q.Cohort == "" {
			continue
		}
		l := q.Nominal
		if q.LendingLimit != quota.Unlimited {
			l = q.LendingLimit
		}
		out[q.Cohort] += l
	}
	if free := e.GPUs() - nominal; free > 0 {
		for c := range out {
			out[c] += free
		}
	}
	return out
}

// reach is the most a queue's jobs may ever hold on the engine's GPUs:
// its nominal quota plus what it may borrow.
func (e *Engine) reach(q quota.Queue, lendable map[string]int) int {
	n := q.Nominal
	if q.Cohort != "" {
		borrow := lendable[q.Cohort] - min(q.Nominal, max(q.LendingLimit, 0))
		if q.LendingLimit == quota.Unlimited {
			borrow = lendable[q.Cohort] - q.Nominal
		}
		if q.BorrowingLimit != quota.Unlimited {
			borrow = min(borrow, q.BorrowingLimit)
		}
		n += max(borrow, 0)
	}
	return min(n, e.GPUs())
}

// queueRun is one queue's jobs in one round.
type queueRun struct {
	jobs   []algorithm.Job
	demand quota.Demand
}

// allocateQueues is the policy's allocation with queues: the GPUs split
// among the queues (quota.Split), then the policy run on each queue's jobs
// within its budget. A queue that holds more than its budget gives GPUs
// back by reclaim. Jobs of no existing queue, or that can never fit
// theirs, wait (a running one keeps its size); they take no part.
func (e *Engine) allocateQueues(snap algorithm.Snapshot) (algorithm.Result, error) {
	res := algorithm.Result{Allocation: make(api.Allocation, len(snap.Jobs)), Reasons: make(map[api.JobID]algorithm.Reason, len(snap.Jobs))}
	runs := make([]queueRun, len(e.queues))
	lendable := e.lendable()
	gpus := snap.GPUs
	rigid := algorithm.Rigid(e.policy.Name())
	for _, v := range snap.Jobs {
		j := e.jobs[v.ID]
		k := j.Spec.K()
		i, ok := e.queueIdx[j.Spec.ClusterQueue]
		if !ok {
			res.Allocation[v.ID] = j.Workers
			res.Reasons[v.ID] = algorithm.Reason{Code: algorithm.NoQueue, Queue: j.Spec.ClusterQueue, Workers: j.Workers, PerWorker: v.GPUsPerWorker}
			gpus -= j.Workers * k
			continue
		}
		q := e.queues[i]
		if need, most := j.Spec.MinWorkers*k, e.reach(q, lendable); need > most {
			res.Allocation[v.ID] = 0
			res.Reasons[v.ID] = algorithm.Reason{Code: algorithm.OverQuota, Queue: q.Name, Need: need, Quota: most}
			continue
		}
		r := &runs[i]
		r.jobs = append(r.jobs, v)
		held := j.Workers * k
		r.demand.Used += held
		if rigid {
			r.demand.Want += j.Spec.Requested() * k
		} else {
			r.demand.Want += j.Spec.MaxWorkers * k
		}
		if held > 0 && q.MinRunTime > 0 && e.now.Sub(j.Grown) < q.MinRunTime {
			r.demand.Protected += held
		}
	}
	demands := make([]quota.Demand, len(runs))
	for i := range runs {
		d := runs[i].demand
		d.Protected = min(d.Protected, max(d.Used-e.queues[i].Nominal, 0))
		demands[i] = d
	}
	shares := quota.Split(max(gpus, 0), e.queues, demands)
	got := make([]int, len(runs))
	reclaimed := make([]bool, len(runs))
	for i := range runs {
		if len(runs[i].jobs) == 0 {
			continue
		}
		if shares[i].Budget < demands[i].Used {
			reclaimed[i] = true
			got[i] = e.reclaim(e.queues[i].Name, runs[i].jobs, shares[i].Budget, res)
			continue
		}
		n, err := e.allocateQueue(snap.Now, e.queues[i], runs[i].jobs, shares[i].Budget, res)
		if err != nil {
			return res, fmt.Errorf("queue %s: %w", e.queues[i].Name, err)
		}
		got[i] = n
	}
	// A queue whose policy left part of its budget unused (rigid jobs,
	// sizes that do not tile it, speedups that stop growing) lends it to
	// the others in a second pass.
	used := 0
	for _, n := range got {
		used += n
	}
	if used < gpus {
		again := slices.Clone(demands)
		for i := range again {
			if got[i] < shares[i].Budget || reclaimed[i] {
				again[i].Want = got[i]
			}
		}
		more := quota.Split(max(gpus, 0), e.queues, again)
		for i := range runs {
			if reclaimed[i] || len(runs[i].jobs) == 0 || more[i].Budget <= shares[i].Budget {
				continue
			}
			n, err := e.allocateQueue(snap.Now, e.queues[i], runs[i].jobs, more[i].Budget, res)
			if err != nil {
				return res, fmt.Errorf("queue %s: %w", e.queues[i].Name, err)
			}
			got[i], shares[i] = n, more[i]
		}
	}
	for i := range runs {
		for _, v := range runs[i].jobs {
			r := res.Reasons[v.ID]
			if r.Code == algorithm.NoRoom && got[i]+r.Need > shares[i].Budget {
				res.Reasons[v.ID] = algorithm.Reason{Code: algorithm.AtQuota, Queue: e.queues[i].Name, Held: got[i], Quota: shares[i].Budget, Need: r.Need}
			}
		}
	}
	e.shares = shares
	return res, nil
}

// allocateQueue runs the policy on one queue's jobs with budget GPUs,
// writes its decision into res and returns the GPUs it hands out.
func (e *Engine) allocateQueue(now time.Time, q quota.Queue, jobs []algorithm.Job, budget int, res algorithm.Result) (int, error) {
	r, err := e.policy.Allocate(algorithm.Snapshot{Now: now, GPUs: budget, Jobs: jobs})
	if err != nil {
		return 0, err
	}
	if q.KeepRunning {
		keepRunning(jobs, r, budget)
	}
	n := 0
	for _, v := range jobs {
		res.Allocation[v.ID] = r.Allocation[v.ID]
		res.Reasons[v.ID] = r.Reasons[v.ID]
		n += r.Allocation[v.ID] * max(v.GPUsPerWorker, 1)
	}
	return n, nil
}

// keepRunning gives every job the policy stopped, of a queue whose running
// jobs are never stopped for its own others, its minimum back: room comes
// from the jobs the policy started in the round, the last submitted first,
// then from workers above other jobs' minimums.
func keepRunning(jobs []algorithm.Job, r algorithm.Result, budget int) {
	used := 0
	for i := range jobs {
		used += r.Allocation[jobs[i].ID] * max(jobs[i].GPUsPerWorker, 1)
	}
	for i := range jobs {
		v := &jobs[i]
		if v.Workers == 0 || r.Allocation[v.ID] > 0 {
			continue
		}
		k := max(v.GPUsPerWorker, 1)
		need := v.Min * k
		for used+need > budget && freeOne(jobs, r, &used, func(w *algorithm.Job) bool { return w.Workers == 0 && r.Allocation[w.ID] > 0 }, true) {
		}
		for used+need > budget && freeOne(jobs, r, &used, func(w *algorithm.Job) bool { return r.Allocation[w.ID] > w.Min }, false) {
		}
		if used+need <= budget {
			r.Allocation[v.ID] = v.Min
			r.Reasons[v.ID] = algorithm.Reason{Code: algorithm.Allocated, Workers: v.Min, PerWorker: v.GPUsPerWorker}
			used += need
		}
	}
}

// freeOne takes GPUs from the last-submitted job that may give them:
// all its workers (whole) or one.
func freeOne(jobs []algorithm.Job, r algorithm.Result, used *int, may func(*algorithm.Job) bool, whole bool) bool {
	for i := len(jobs) - 1; i >= 0; i-- {
		w := &jobs[i]
		if !may(w) {
			continue
		}
		k := max(w.GPUsPerWorker, 1)
		n := 1
		if whole {
			n = r.Allocation[w.ID]
		}
		r.Allocation[w.ID] -= n
		*used -= n * k
		if r.Allocation[w.ID] == 0 {
			r.Reasons[w.ID] = algorithm.Reason{Code: algorithm.NoRoom, Need: w.Min * k, PerWorker: w.GPUsPerWorker}
		} else {
			r.Reasons[w.ID] = algorithm.Reason{Code: algorithm.Allocated, Workers: r.Allocation[w.ID], PerWorker: w.GPUsPerWorker}
		}
		return true
	}
	return false
}

// reclaim brings a queue holding more than its budget down to it: first
// its jobs' workers above their minimums, those whose loss slows their
// job least for the GPUs they free first, then whole jobs, the last
// started first, so that the jobs admitted first, whose minimums its
// nominal quota covers, go on. Waiting jobs stay waiting. It writes res
// and returns the GPUs the queue keeps.
func (e *Engine) reclaim(queue string, jobs []algorithm.Job, budget int, res algorithm.Result) int {
	held := 0
	h := &lossHeap{}
	alloc := make(map[api.JobID]int, len(jobs))
	for i := range jobs {
		v := &jobs[i]
		alloc[v.ID] = v.Workers
		held += v.Workers * max(v.GPUsPerWorker, 1)
		if v.Workers > v.Min {
			h.items = append(h.items, lossItem{job: v, loss: shrinkLoss(v, v.Workers)})
		}
	}
	heap.Init(h)
	shrunk := map[api.JobID]bool{}
	for held > budget && h.Len() > 0 {
		it := &h.items[0]
		v := it.job
		alloc[v.ID]--
		held -= max(v.GPUsPerWorker, 1)
		shrunk[v.ID] = true
		if n := alloc[v.ID]; n > v.Min {
			it.loss = shrinkLoss(v, n)
			heap.Fix(h, 0)
		} else {
			heap.Pop(h)
		}
	}
	stopped := 0
	if held > budget {
		running := make([]*Job, 0, len(jobs))
		for i := range jobs {
			if jobs[i].Workers > 0 {
				running = append(running, e.jobs[jobs[i].ID])
			}
		}
		slices.SortFunc(running, func(a, b *Job) int {
			if c := b.LastStarted.Compare(a.LastStarted); c != 0 {
				return c
			}
			return cmp.Compare(b.ID, a.ID)
		})
		for _, j := range running {
			if held <= budget {
				break
			}
			held -= alloc[j.ID] * j.Spec.K()
			alloc[j.ID] = 0
			stopped++
		}
	}
	e.quotaStats.Reclaims++
	if stopped == 0 {
		e.quotaStats.ByShrinking++
	}
	e.quotaStats.Stopped += stopped
	for i := range jobs {
		v := &jobs[i]
		n := alloc[v.ID]
		res.Allocation[v.ID] = n
		switch {
		case v.Workers > 0 && (n == 0 || shrunk[v.ID]):
			if n > 0 {
				e.quotaStats.Shrunk++
			}
			res.Reasons[v.ID] = algorithm.Reason{Code: algorithm.Reclaimed, Workers: n, PerWorker: v.GPUsPerWorker, Queue: queue, Quota: budget}
		case v.Workers > 0:
			res.Reasons[v.ID] = algorithm.Reason{Code: algorithm.Allocated, Workers: n, PerWorker: v.GPUsPerWorker}
		default:
			res.Reasons[v.ID] = algorithm.Reason{Code: algorithm.AtQuota, Queue: queue, Held: held, Quota: budget, Need: v.Min * max(v.GPUsPerWorker, 1)}
		}
	}
	return held
}

// shrinkLoss is the share of a job's speed lost by going from n workers
// to n−1, per GPU freed.
func shrinkLoss(v *algorithm.Job, n int) float64 {
	s := v.S(n)
	if !(s > 0) {
		return 0
	}
	return (1 - v.S(n-1)/s) / float64(max(v.GPUsPerWorker, 1))
}

type lossItem struct {
	job  *algorithm.Job
	loss float64
}

// lossHeap orders workers by the loss of giving them up, then by job ID.
type lossHeap struct{ items []lossItem }

func (h *lossHeap) Len() int { return len(h.items) }
func (h *lossHeap) Less(a, b int) bool {
	x, y := h.items[a], h.items[b]
	if x.loss != y.loss {
		return x.loss < y.loss
	}
	return x.job.ID < y.job.ID
}
func (h *lossHeap) Swap(a, b int) { h.items[a], h.items[b] = h.items[b], h.items[a] }
func (h *lossHeap) Push(x any)    { h.items = append(h.items, x.(lossItem)) }
func (h *lossHeap) Pop() any {
	n := len(h.items) - 1
	x := h.items[n]
	h.items = h.items[:n]
	return x
}
