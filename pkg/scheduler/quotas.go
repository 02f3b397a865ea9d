package scheduler

import (
	"cmp"
	"errors"
	"fmt"
	"math"
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

// JobQueue sets the queue a job's GPUs count against, or, with Problem
// set, holds the job because its queue cannot be known (the LocalQueue it
// names does not exist, its ClusterQueue does not admit the job's
// namespace…): a waiting job waits and says Problem, a running one keeps
// its size until it ends or the problem goes.
type JobQueue struct {
	ID           api.JobID
	ClusterQueue string
	Problem      string
}

func (JobQueue) isEvent() {}

func (e *Engine) setJobQueue(ev JobQueue) error {
	j, ok := e.jobs[ev.ID]
	if !ok {
		return fmt.Errorf("job %s is not known", ev.ID)
	}
	if j.Spec.ClusterQueue == ev.ClusterQueue && j.queueProblem() == ev.Problem {
		return nil
	}
	j.Spec.ClusterQueue = ev.ClusterQueue
	j.setProblems(j.unschedulable(), ev.Problem)
	if j.active() {
		e.dirty = true
	}
	return nil
}

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
	e.protects = false
	for i, q := range qs {
		e.queueIdx[q.Name] = i
		e.protects = e.protects || q.MinRunTime > 0
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
	reach := make([]int, len(e.queues))
	for i := range e.queues {
		reach[i] = quota.Reach(e.queues, i, snap.GPUs)
	}
	gpus := snap.GPUs
	rigid := algorithm.Rigid(e.policy.Name())
	for _, v := range snap.Jobs {
		j := e.jobs[v.ID]
		k := j.Spec.K()
		i, ok := e.queueIdx[j.Spec.ClusterQueue]
		if !ok || j.queueProblem() != "" {
			res.Allocation[v.ID] = j.Workers
			res.Reasons[v.ID] = algorithm.Reason{Code: algorithm.NoQueue, Queue: j.Spec.ClusterQueue, Problem: j.queueProblem(),
				Workers: algorithm.Narrow(j.Workers), PerWorker: algorithm.Narrow(v.GPUsPerWorker)}
			gpus -= j.Workers * k
			continue
		}
		q := e.queues[i]
		if need, most := j.Spec.MinWorkers*k, reach[i]; need > most {
			res.Allocation[v.ID] = 0
			res.Reasons[v.ID] = algorithm.Reason{Code: algorithm.OverQuota, Queue: q.Name, Need: algorithm.Narrow(need), Quota: algorithm.Narrow(most)}
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
		if held > 0 && q.MinRunTime > 0 && e.now.Sub(j.Grown.time()) < q.MinRunTime {
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
	// First the queues within their budgets: what they take decides what
	// the queues over theirs must give back.
	var over []int
	taken := 0
	for i := range runs {
		if len(runs[i].jobs) == 0 {
			continue
		}
		if shares[i].Budget < demands[i].Used {
			over = append(over, i)
			taken += demands[i].Used
			continue
		}
		n, err := e.allocateQueue(snap.Now, e.queues[i], runs[i].jobs, shares[i].Budget, res)
		if err != nil {
			return res, fmt.Errorf("queue %s: %w", e.queues[i].Name, err)
		}
		got[i] = n
		taken += n
	}
	// A queue over its budget gives back only what the others take,
	// the highest weighted share first, never going below its budget;
	// the rest keep what they hold and their policies size their jobs
	// within it.
	deficit := taken - max(gpus, 0)
	slices.SortStableFunc(over, func(a, b int) int {
		return cmp.Compare(e.weightedShare(b, demands[b].Used), e.weightedShare(a, demands[a].Used))
	})
	for _, i := range over {
		give := min(max(deficit, 0), demands[i].Used-shares[i].Budget)
		budget := demands[i].Used - give
		if give > 0 {
			reclaimed[i] = true
			n, err := e.reclaim(snap.Now, e.queues[i].Name, runs[i].jobs, budget, res)
			if err != nil {
				return res, fmt.Errorf("queue %s: %w", e.queues[i].Name, err)
			}
			got[i] = n
			deficit -= demands[i].Used - got[i]
			shares[i].Budget = budget
			continue
		}
		n, err := e.allocateQueue(snap.Now, e.queues[i], runs[i].jobs, budget, res)
		if err != nil {
			return res, fmt.Errorf("queue %s: %w", e.queues[i].Name, err)
		}
		got[i] = n
		shares[i].Budget = budget
	}
	// A queue whose policy left part of its budget unused (rigid jobs,
	// sizes that do not tile it, speedups that stop growing) lends it:
	// the queues that want more, lowest weighted share first, each in
	// turn may take all that is left within its limits, the others held
	// at what they took. Borrowing GPU by GPU alone could leave every
	// queue a little short of its next job's size and the GPUs idle.
	if err := e.spreadLeftover(snap.Now, gpus, runs, demands, shares, got, reclaimed, res); err != nil {
		return res, err
	}
	for i := range runs {
		for _, v := range runs[i].jobs {
			// A waiting job the queue's budget keeps out says so; one the
			// queue's policy stopped keeps the policy's reason.
			r := res.Reasons[v.ID]
			if r.Code == algorithm.NoRoom && v.Workers == 0 && got[i]+int(r.Need) > shares[i].Budget {
				res.Reasons[v.ID] = algorithm.Reason{Code: algorithm.AtQuota, Queue: e.queues[i].Name, Held: algorithm.Narrow(got[i]), Quota: algorithm.Narrow(shares[i].Budget), Need: r.Need}
			}
		}
	}
	e.shares = shares
	return res, nil
}

// spreadLeftover hands out the GPUs the queues' policies left unused; see
// allocateQueues.
func (e *Engine) spreadLeftover(now time.Time, gpus int, runs []queueRun, demands []quota.Demand, shares []quota.Share, got []int,
	reclaimed []bool, res algorithm.Result) error {
	// What a reclaim freed beyond its need (a whole worker or job more
	// than the GPUs asked for) stays with the queue that gave it: lent
	// now, it would be taken back at the next rescheduling.
	used := 0
	for i, n := range got {
		if reclaimed[i] {
			n = max(n, shares[i].Budget)
		}
		used += n
	}
	var order []int
	for i := range runs {
		if len(runs[i].jobs) > 0 && !reclaimed[i] && got[i] < demands[i].Want {
			order = append(order, i)
		}
	}
	share := func(i int) float64 {
		q := e.queues[i]
		if q.Weight == 0 {
			return math.Inf(1)
		}
		return float64(max(got[i]-q.Nominal, 0)) / q.Weight
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(share(a), share(b)) })
	for _, i := range order {
		if used >= gpus {
			break
		}
		again := make([]quota.Demand, len(demands))
		for j := range demands {
			again[j] = quota.Demand{Used: got[j], Want: got[j]}
		}
		again[i].Want = demands[i].Want
		// The others keep what they took, some of it borrowed from this
		// queue's quota: only the GPUs left are free.
		more := quota.Split(gpus, e.queues, again)[i]
		more.Budget = min(more.Budget, got[i]+gpus-used)
		if more.Budget <= got[i] {
			continue
		}
		n, err := e.allocateQueue(now, e.queues[i], runs[i].jobs, more.Budget, res)
		if err != nil {
			return fmt.Errorf("queue %s: %w", e.queues[i].Name, err)
		}
		used += n - got[i]
		got[i] = n
		shares[i].Budget, shares[i].Borrowed = more.Budget, max(more.Budget-shares[i].Guaranteed, 0)
	}
	return nil
}

// weightedShare is queue i's use above its nominal quota over its weight.
func (e *Engine) weightedShare(i, used int) float64 {
	q := e.queues[i]
	above := used - q.Nominal
	if above <= 0 {
		return 0
	}
	if q.Weight == 0 {
		return math.Inf(1)
	}
	return float64(above) / q.Weight
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
			r.Reasons[v.ID] = algorithm.Reason{Code: algorithm.Allocated, Workers: algorithm.Narrow(v.Min), PerWorker: algorithm.Narrow(v.GPUsPerWorker)}
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
			r.Reasons[w.ID] = algorithm.Reason{Code: algorithm.NoRoom, Need: algorithm.Narrow(w.Min * k), PerWorker: algorithm.Narrow(w.GPUsPerWorker)}
		} else {
			r.Reasons[w.ID] = algorithm.Reason{Code: algorithm.Allocated, Workers: algorithm.Narrow(r.Allocation[w.ID]), PerWorker: algorithm.Narrow(w.GPUsPerWorker)}
		}
		return true
	}
	return false
}

// reclaim brings a queue holding more than its budget down to it. Under
// an elastic policy the queue's policy sizes its running jobs within the
// budget, and every running job it stopped gets its minimum back where
// the budget allows, earliest submitted first, from the other jobs'
// workers above their minimums: jobs shrink, and stop only when their
// minimums do not all fit, the last submitted first, so that the jobs
// admitted first, whose minimums its nominal quota covers, go on. A rigid
// policy's jobs stop, the last started first. Waiting jobs stay waiting
// (the next rescheduling looks at them if GPUs are left). It writes res
// and returns the GPUs the queue keeps.
func (e *Engine) reclaim(now time.Time, queue string, jobs []algorithm.Job, budget int, res algorithm.Result) (int, error) {
	if algorithm.Rigid(e.policy.Name()) {
		return e.reclaimRigid(queue, jobs, budget, res), nil
	}
	running := make([]algorithm.Job, 0, len(jobs))
	for _, v := range jobs {
		if v.Workers > 0 {
			running = append(running, v)
		} else {
			res.Allocation[v.ID] = 0
		}
	}
	r, err := e.policy.Allocate(algorithm.Snapshot{Now: now, GPUs: budget, Jobs: running})
	if err != nil {
		return 0, err
	}
	keepRunning(running, r, budget)
	held, stopped := 0, 0
	for _, v := range running {
		n := r.Allocation[v.ID]
		res.Allocation[v.ID] = n
		held += n * max(v.GPUsPerWorker, 1)
		switch {
		case n == 0:
			stopped++
			res.Reasons[v.ID] = algorithm.Reason{Code: algorithm.Reclaimed, PerWorker: algorithm.Narrow(v.GPUsPerWorker), Queue: queue, Quota: algorithm.Narrow(budget)}
		case n < v.Workers:
			e.quotaStats.Shrunk++
			res.Reasons[v.ID] = algorithm.Reason{Code: algorithm.Reclaimed, Workers: algorithm.Narrow(n), PerWorker: algorithm.Narrow(v.GPUsPerWorker), Queue: queue, Quota: algorithm.Narrow(budget)}
		default:
			res.Reasons[v.ID] = r.Reasons[v.ID]
		}
	}
	for _, v := range jobs {
		if v.Workers == 0 {
			res.Reasons[v.ID] = algorithm.Reason{Code: algorithm.AtQuota, Queue: queue, Held: algorithm.Narrow(held), Quota: algorithm.Narrow(budget), Need: algorithm.Narrow(v.Min * max(v.GPUsPerWorker, 1))}
			e.replan = e.replan || held < budget
		}
	}
	e.countReclaim(stopped)
	return held, nil
}

func (e *Engine) countReclaim(stopped int) {
	e.quotaStats.Reclaims++
	if stopped == 0 {
		e.quotaStats.ByShrinking++
	}
	e.quotaStats.Stopped += stopped
}

// reclaimRigid stops a rigid policy's jobs, the last started first, until
// the queue holds no more than its budget; those stopped first that fit
// again keep running.
func (e *Engine) reclaimRigid(queue string, jobs []algorithm.Job, budget int, res algorithm.Result) int {
	held := 0
	alloc := make(map[api.JobID]int, len(jobs))
	running := make([]*job, 0, len(jobs))
	for i := range jobs {
		v := &jobs[i]
		alloc[v.ID] = v.Workers
		held += v.Workers * max(v.GPUsPerWorker, 1)
		if v.Workers > 0 {
			running = append(running, e.jobs[v.ID])
		}
	}
	slices.SortFunc(running, func(a, b *job) int {
		if c := cmp.Compare(b.LastStarted, a.LastStarted); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	var stopped []*job
	for _, j := range running {
		if held <= budget {
			break
		}
		held -= alloc[j.ID] * j.Spec.K()
		alloc[j.ID] = 0
		stopped = append(stopped, j)
	}
	// Stopping whole jobs overshoots: those stopped first (the last
	// started) that fit again keep running.
	n := 0
	for _, j := range stopped {
		if w := j.Workers; held+w*j.Spec.K() <= budget {
			alloc[j.ID] = w
			held += w * j.Spec.K()
		} else {
			n++
		}
	}
	for i := range jobs {
		v := &jobs[i]
		res.Allocation[v.ID] = alloc[v.ID]
		switch {
		case v.Workers > 0 && alloc[v.ID] == 0:
			res.Reasons[v.ID] = algorithm.Reason{Code: algorithm.Reclaimed, PerWorker: algorithm.Narrow(v.GPUsPerWorker), Queue: queue, Quota: algorithm.Narrow(budget)}
		case v.Workers > 0:
			res.Reasons[v.ID] = algorithm.Reason{Code: algorithm.Allocated, Workers: algorithm.Narrow(v.Workers), PerWorker: algorithm.Narrow(v.GPUsPerWorker)}
		default:
			res.Reasons[v.ID] = algorithm.Reason{Code: algorithm.AtQuota, Queue: queue, Held: algorithm.Narrow(held), Quota: algorithm.Narrow(budget), Need: algorithm.Narrow(v.Min * max(v.GPUsPerWorker, 1))}
		}
	}
	// The queue's policy looks again at the next rescheduling, within the
	// budget: its waiting jobs may fit what is left.
	e.replan = e.replan || held < budget
	e.countReclaim(n)
	return held
}

// protectionEndsAt returns the first moment since the policy last ran at
// which a running job's borrowed workers lose the protection of its
// queue's minimum run time: fair sharing may then give its GPUs to another
// queue, and nothing else might ask for a round.
func (e *Engine) protectionEndsAt() (time.Time, bool) {
	var best time.Time
	found := false
	if !e.protects {
		return best, false
	}
	for _, j := range e.active {
		if j.Phase != api.PhaseRunning {
			continue
		}
		i, ok := e.queueIdx[j.Spec.ClusterQueue]
		if !ok || e.queues[i].MinRunTime <= 0 {
			continue
		}
		if t := j.Grown.time().Add(e.queues[i].MinRunTime); t.After(e.planned) && (!found || t.Before(best)) {
			best, found = t, true
		}
	}
	return best, found
}
