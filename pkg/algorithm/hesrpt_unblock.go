package algorithm

import (
	"cmp"
	"container/heap"
	"math"
	"slices"
)

// maxUnblockTrials bounds how many waiting jobs one allocation tries to
// unblock, each costing two more runs of the greedy; maxKeepTrials how many
// preempted running jobs it tries to keep, one run each.
const (
	maxUnblockTrials = 2
	maxKeepTrials    = 4
	// maxCandidates bounds how many jobs each kind of trial looks at.
	maxCandidates = 16
	// maxPacks bounds how often one trial repacks the nodes to see whether
	// what it dropped makes room.
	maxPacks = 8
)

// forcedSize is a job granted n workers ahead of the greedy.
type forcedSize struct{ job, n int }

// unblock tries, for the few waiting jobs the greedy left without GPUs
// that could be worth more than the GPUs they would displace, two
// alternatives, and keeps whichever allocation scores best by objective:
//
//   - the greedy again, with the job's minimum granted first (and those
//     of the jobs already unblocked that way);
//   - the allocation kept so far, with the job at its size (a running
//     job's current one, else its minimum) and, to make room, the jobs
//     whose loss costs least dropped, then the greedy over what is left.
//
// Last, every running job the allocation kept preempts gets the second
// alternative, kept at its current size.
// c is the capacity the current allocation leaves; pass runs the greedy
// with the given sizes granted first and returns what it leaves. unblock
// returns the capacity of the allocation kept, which it leaves in hs.st.
func (hs *hsState) unblock(s *Snapshot, cfg HeSRPTConfig, c capacity, pass func([]forcedSize) capacity) capacity {
	var (
		best     float64
		kept     []hsJob // nil until a trial: most allocations need none
		minimums []forcedSize
		tried    = [2]map[int]bool{{}, {}}
	)
	// try runs the greedy with the sizes forced and keeps the result if it
	// runs job i and is worth more, by a margin that float sums of the
	// same jobs in another order cannot cross (the result must not depend
	// on the snapshot's order).
	try := func(forced []forcedSize, i int) bool {
		if forced == nil {
			return false
		}
		if kept == nil {
			best, kept = hs.objective(cfg), slices.Clone(hs.st)
		}
		tc := pass(forced)
		phi := hs.objective(cfg)
		better := hs.st[i].n > 0 && phi > best+1e-9*math.Abs(best)
		if better {
			best, c = phi, tc
			copy(kept, hs.st)
			hs.version++
		}
		copy(hs.st, kept) // what breakEven capped in the trial goes too
		return better
	}
	// A candidate's trials run the greedy again only when dropping the
	// jobs that cost least for it gains before any refill: that is cheap
	// to find, and the greedy is not.
	for trials, looked := 0, 0; trials < maxUnblockTrials && looked < maxCandidates; looked++ {
		i, ok := hs.candidate(s, cfg, &c, tried[0], false)
		if !ok {
			break
		}
		tried[0][i] = true
		drop, gain := hs.dropFor(s, cfg, &c, i)
		if drop == nil || gain <= 0 {
			continue
		}
		trials++
		withMin := append(slices.Clone(minimums), forcedSize{i, hs.jobs[i].Min})
		if try(withMin, i) {
			minimums = withMin
		}
		try(drop, i)
	}
	// No running job is preempted where keeping it, and dropping for it
	// the jobs whose loss costs least, is worth more (among those that
	// could be: see candidate). A job an adoption preempts is a candidate
	// in turn.
	for trials, looked := 0, 0; trials < maxKeepTrials && looked < maxCandidates; looked++ {
		i, ok := hs.candidate(s, cfg, &c, tried[1], true)
		if !ok {
			break
		}
		tried[1][i] = true
		if drop, gain := hs.dropFor(s, cfg, &c, i); drop != nil && gain > 0 {
			trials++
			try(drop, i)
		}
	}
	return c
}

// dropFor is the second alternative of unblock for job i, from the
// allocation in hs.st, which leaves c: every job keeps its size but those
// dropped, cheapest loss first (then by ID), until i fits at its size (a
// running job's current one, else its minimum). It also returns what the
// swap gains by objective before the greedy refills what is left; it is
// nil when no such drop makes room, or when the swap gains nothing. Job i
// holds no GPUs in hs.st.
func (hs *hsState) dropFor(s *Snapshot, cfg HeSRPTConfig, c *capacity, i int) ([]forcedSize, float64) {
	st := hs.st
	b := &st[i]
	size := hs.size(b)
	gain := hs.stake(b, size, cfg)
	// The victims come off a heap, cheapest loss first: few are dropped,
	// and sorting them all cost more than the greedy at 10 000 jobs.
	if hs.losses == nil {
		// Sized once per run of the policy, for all its trials: grown
		// from nil they were copied over and over at 100 000 jobs.
		hs.losses, hs.victims = make([]victim, 0, len(st)), make([]victim, 0, len(st))
		hs.others, hs.forced = make([]int, 0, len(st)), make([]forcedSize, 0, len(st))
	}
	if hs.lossesAt != hs.version+1 {
		// What each job would lose, the same for every trial until one
		// is kept, and ordered as a heap once: i holds no GPUs (no
		// candidate does), so it is none of the victims, and each trial
		// pops from a copy.
		hs.losses, hs.lossesAt = hs.losses[:0], hs.version+1
		for x := range st {
			if a := &st[x]; a.n > 0 && a.floor == 0 {
				hs.losses = append(hs.losses, victim{x, hs.stake(a, a.n, cfg)})
			}
		}
		heap.Init(&victimHeap{jobs: hs.jobs, q: hs.losses})
	}
	vh := victimHeap{jobs: hs.jobs, q: hs.victims[:0]}
	defer func() { hs.victims = vh.q[:0] }()
	vh.q = append(vh.q, hs.losses...)
	dropped := map[int]bool{}
	freed := 0
	drop := func() {
		v := heap.Pop(&vh).(victim)
		dropped[v.job] = true
		gain -= v.loss
		freed += st[v.job].n * int(st[v.job].k)
	}
	// First by GPUs alone, which is all that counts without nodes to pack
	// and is needed with them; most trials end here, gaining nothing.
	need := size*int(b.k) - c.free
	for freed < need && vh.Len() > 0 {
		drop()
	}
	if freed < need || gain <= 0 {
		return nil, gain
	}
	// With whole nodes to pack, the others in an order of the jobs alone
	// (largest workers first, then by ID), so that packing them does not
	// depend on the snapshot's; counting GPUs, the order does not matter.
	others := hs.others[:0]
	for x := range st {
		if x != i && st[x].n > 0 {
			others = append(others, x)
		}
	}
	hs.others = others
	if c.byFree != nil {
		slices.SortFunc(others, func(x, y int) int {
			if c := cmp.Compare(st[y].k, st[x].k); c != 0 {
				return c
			}
			return cmp.Compare(hs.jobs[x].ID, hs.jobs[y].ID)
		})
		// Repacking every job kept is dear: a few times at most.
		packs := func() bool {
			nc := newCapacity(s)
			for _, x := range others {
				if a := &st[x]; !dropped[x] {
					if !nc.fits(int(a.k), a.n) {
						return false
					}
					nc.take(int(a.k), a.n)
				}
			}
			return nc.fits(int(b.k), size)
		}
		ok := packs()
		for tries := 0; !ok && tries < maxPacks && vh.Len() > 0; tries++ {
			drop()
			ok = packs()
		}
		if !ok || gain <= 0 {
			return nil, min(gain, 0)
		}
	}
	// Reused by the next call: unblock is done with the last one's by then.
	out := append(hs.forced[:0], forcedSize{i, size})
	defer func() { hs.forced = out[:0] }()
	for _, x := range others {
		if a := &st[x]; !dropped[x] && a.floor == 0 {
			out = append(out, forcedSize{x, a.n})
		}
	}
	return out, gain
}

// victim is a job dropFor may drop, and what dropping it loses.
type victim struct {
	job  int
	loss float64
}

// victimHeap orders victims by loss, then job ID.
type victimHeap struct {
	q    []victim
	jobs []Job
}

func (h *victimHeap) Len() int { return len(h.q) }
func (h *victimHeap) Less(a, b int) bool {
	x, y := h.q[a], h.q[b]
	if !nearlyEqual(x.loss, y.loss) {
		return x.loss < y.loss
	}
	return h.jobs[x.job].ID < h.jobs[y.job].ID
}
func (h *victimHeap) Swap(a, b int) { h.q[a], h.q[b] = h.q[b], h.q[a] }
func (h *victimHeap) Push(x any)    { h.q = append(h.q, x.(victim)) }
func (h *victimHeap) Pop() any {
	v := h.q[len(h.q)-1]
	h.q = h.q[:len(h.q)-1]
	return v
}

// size is the size unblock gives a job it tries: a running job's current
// one, else its minimum.
func (hs *hsState) size(a *hsJob) int {
	j := hs.job(a)
	if w := int(a.workers); w >= j.Min && w <= j.Max {
		return w
	}
	return j.Min
}

// candidate returns the job most worth a trial (by how much it could
// gain, then by ID) among those not tried yet: waiting jobs without GPUs,
// or, with preempted, running jobs the allocation preempts, whose
// minimum fits the empty cluster and whose worth at the size unblock would
// give them (with, for a running job, the restart its preemption costs)
// exceeds what the GPUs they lack are worth to the jobs holding them, at
// least the lowest value per GPU granted. A job that fails that test
// cannot gain by taking GPUs from others.
func (hs *hsState) candidate(s *Snapshot, cfg HeSRPTConfig, c *capacity, tried map[int]bool, preempted bool) (int, bool) {
	k := 0
	if preempted {
		k = 1
	}
	list := &hs.cands[k]
	if list.at != hs.version || list.jobs == nil {
		list.jobs, list.at = hs.candidates(s, cfg, c, preempted, list.jobs[:0]), hs.version
	}
	pick, gain := -1, 0.0
	for _, x := range list.jobs {
		if tried[x.job] {
			continue
		}
		i, net := x.job, x.net
		if tie := pick >= 0 && nearlyEqual(net, gain); pick < 0 || !tie && net > gain || tie && hs.jobs[i].ID < hs.jobs[pick].ID {
			pick, gain = i, net
		}
	}
	return pick, pick >= 0
}

// candidateList is candidates' answer for one version of the allocation.
type candidateList struct {
	jobs []scoredJob
	at   int // hsState.version
}

// scoredJob is a job candidate may pick and what it could gain.
type scoredJob struct {
	job int
	net float64
}

// candidates lists, in job order, the jobs candidate may pick, tried or
// not, with what each could gain: it holds until unblock keeps another
// allocation, while a search looks at up to maxCandidates of them.
func (hs *hsState) candidates(s *Snapshot, cfg HeSRPTConfig, c *capacity, preempted bool, out []scoredJob) []scoredJob {
	st := hs.st
	low := -1.0 // computed on the first job that needs it
	var empty *capacity
	for i := range st {
		a := &st[i]
		if a.n > 0 || (a.workers > 0) != preempted || a.floor > 0 || a.lo+1 >= a.hi {
			continue
		}
		if low < 0 {
			low = hs.lowest(cfg.Hysteresis)
			e := newCapacity(s)
			empty = &e
		}
		k, m := int(a.k), hs.size(a)
		if !empty.fits(k, m) {
			continue // never fits: nothing to unblock
		}
		net := hs.stake(a, m, cfg) - float64(m*k-c.free)*low
		if net > 0 {
			out = append(out, scoredJob{i, net})
		}
	}
	return out
}

// lowest is the least value per GPU, as the greedy ranks it, of the
// last worker of any job granted GPUs that could give them up (0 when
// none could): computed once per allocation kept, for both kinds of
// candidates.
func (hs *hsState) lowest(hysteresis float64) float64 {
	if hs.lowAt == hs.version+1 {
		return hs.low
	}
	low := math.Inf(1)
	for x := range hs.st {
		if b := &hs.st[x]; b.n > 0 && b.floor == 0 {
			low = min(low, hs.marginal(b, hysteresis))
		}
	}
	if math.IsInf(low, 1) {
		low = 0 // nothing granted that could make room
	}
	hs.low, hs.lowAt = low, hs.version+1
	return low
}

// marginal is the value per GPU, as the greedy ranks it, of the job's
// last granted worker: of the hull segment its size lies in.
func (hs *hsState) marginal(a *hsJob, hysteresis float64) float64 {
	if a.lo+1 >= a.hi {
		return 0
	}
	x := a.lo + 1
	for x < a.hi-1 && hs.vertex(x).x < a.n {
		x++
	}
	u, v := hs.vertex(x-1), hs.vertex(x)
	if v.x == u.x {
		return 0
	}
	val := a.w * (v.y - u.y) / float64(v.x-u.x)
	if v.x <= int(a.workers) {
		val *= 1 + hysteresis
	}
	return val
}

// objective is what the allocation in hs.st is worth by the policy's own
// measure: the weighted throughput the greedy maximises (a GPU's worth is
// the value the greedy ranks it by), a running job's current size counting
// 1+Hysteresis times, less the restart of every running job it preempts.
func (hs *hsState) objective(cfg HeSRPTConfig) float64 {
	phi := 0.0
	for i := range hs.st {
		a := &hs.st[i]
		if a.n == 0 {
			phi -= hs.preemption(a, cfg)
			continue
		}
		phi += hs.worth(a, a.n, cfg)
	}
	return phi
}

// worth is what n workers of the job are worth in objective.
func (hs *hsState) worth(a *hsJob, n int, cfg HeSRPTConfig) float64 {
	j := hs.job(a)
	s := j.S(n)
	low := s // S(min(n, workers))
	if int(a.workers) < n {
		low = j.S(int(a.workers))
	}
	return a.w * float64(a.k) * (s + cfg.Hysteresis*low)
}

// stake is worth(a, n) + preemption(a), reading the speedup at each size
// once: at 100 000 jobs unblock weighs every job granted GPUs this way.
func (hs *hsState) stake(a *hsJob, n int, cfg HeSRPTConfig) float64 {
	j := hs.job(a)
	s := j.S(n)
	w := int(a.workers)
	cur := s // S(workers)
	if w != n {
		cur = j.S(w)
	}
	low := s // S(min(n, workers))
	if w < n {
		low = cur
	}
	return a.w*float64(a.k)*(s+cfg.Hysteresis*low) + hs.preemptionAt(a, cfg, cur)
}

// preemption is the rate at which preempting a running job loses: the
// RestartCost seconds of its weighted throughput, spread over the time it
// is expected to go on running (its remaining time at its size, capped at
// Horizon, and at least the restart itself); 0 for a job not running.
func (hs *hsState) preemption(a *hsJob, cfg HeSRPTConfig) float64 {
	if a.workers <= 0 {
		return 0
	}
	return hs.preemptionAt(a, cfg, hs.job(a).S(int(a.workers)))
}

// preemptionAt is preemption, sc being the job's speedup at its current
// size.
func (hs *hsState) preemptionAt(a *hsJob, cfg HeSRPTConfig, sc float64) float64 {
	if a.workers <= 0 {
		return 0
	}
	j := hs.job(a)
	if sc <= 0 {
		return 0
	}
	hold := cfg.Horizon
	if r := j.remaining(); !math.IsInf(r, 1) {
		hold = min(hold, r/sc)
	}
	rc := cfg.restartCost(j)
	hold = max(hold, rc, 1e-9)
	return rc * a.w * float64(a.k) * sc / hold
}

// force grants a job n workers ahead of the greedy, if they fit, and
// leaves the rest of its hull to the greedy, from the segment n lies in
// (on a straight curve the hull may have no vertex at n).
func (hs *hsState) force(a *hsJob, n int, c *capacity) {
	if a.next != 1 || a.lo+1 >= a.hi || n < hs.job(a).Min {
		return // kept at a floor, or no size it can run at
	}
	k := int(a.k)
	if !c.fits(k, n) {
		return
	}
	c.take(k, n)
	a.n = n
	for a.lo+a.next < a.hi && hs.vertex(a.lo+a.next).x <= n {
		a.next++
	}
}

// nearlyEqual reports whether two worths differ by no more than float
// sums computed in another order, or at another scale (the same jobs with
// workers of k GPUs on nodes k times larger), make them differ: such ties
// go to the job ID, so the result depends on neither.
func nearlyEqual(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*max(math.Abs(a), math.Abs(b))
}
