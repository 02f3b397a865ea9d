package algorithm

import (
	"cmp"
	"math"
	"slices"
)

// maxUnblockTrials bounds how many blocked jobs one allocation tries to
// unblock; each costs two more runs of the greedy. maxKeepTrials bounds
// how many preemptions it then undoes, each costing one run per preempted
// job tried.
const (
	maxUnblockTrials = 6
	maxKeepTrials    = 16
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
		best     = hs.objective(cfg)
		kept     = slices.Clone(hs.st)
		minimums []forcedSize
		tried    = map[int]bool{}
	)
	// try runs the greedy with the sizes forced and keeps the result if it
	// runs job i and is worth more, by a margin that float sums of the
	// same jobs in another order cannot cross (the result must not depend
	// on the snapshot's order).
	try := func(forced []forcedSize, i int) bool {
		if forced == nil {
			return false
		}
		tc := pass(forced)
		phi := hs.objective(cfg)

		better := hs.st[i].n > 0 && phi > best+1e-9*math.Abs(best)
		if better {
			best, c = phi, tc
			copy(kept, hs.st)
		}
		copy(hs.st, kept) // what breakEven capped in the trial goes too
		return better
	}
	for range maxUnblockTrials {
		i, ok := hs.blocked(s, cfg, &c, tried)
		if !ok {
			break
		}
		tried[i] = true
		withMin := append(slices.Clone(minimums), forcedSize{i, hs.st[i].j.Min})
		if try(withMin, i) {
			minimums = withMin
		}
		try(hs.dropFor(s, cfg, i), i)
	}
	// No running job is preempted where keeping it, and dropping for it
	// the jobs whose loss costs least, is worth more: each adoption is
	// worth strictly more, and they are bounded all the same.
	for adopted := 0; adopted < maxKeepTrials; adopted++ {
		if !slices.ContainsFunc(hs.preempted(), func(i int) bool { return try(hs.dropFor(s, cfg, i), i) }) {
			break
		}
	}
	return c
}

// preempted lists the running jobs the allocation in hs.st leaves without
// GPUs, by ID.
func (hs *hsState) preempted() []int {
	var out []int
	for i := range hs.st {
		if a := &hs.st[i]; a.n == 0 && a.workers > 0 && a.floor == 0 {
			out = append(out, i)
		}
	}
	slices.SortFunc(out, func(x, y int) int { return cmp.Compare(hs.st[x].j.ID, hs.st[y].j.ID) })
	return out
}

// dropFor is the second alternative of unblock for job i, from the
// allocation in hs.st: every job keeps its size but those dropped, cheapest
// loss first (then by ID), until i fits at its size. It is nil when even
// dropping every job that may be dropped leaves no room.
func (hs *hsState) dropFor(s *Snapshot, cfg HeSRPTConfig, i int) []forcedSize {
	st := hs.st
	b := &st[i]
	size := b.j.Min
	if b.workers >= b.j.Min && b.workers <= b.j.Max {
		size = b.workers
	}
	type victim struct {
		job  int
		loss float64
	}
	var victims []victim
	for x := range st {
		if a := &st[x]; x != i && a.n > 0 && a.floor == 0 {
			victims = append(victims, victim{x, hs.worth(a, a.n, cfg) + hs.preemption(a, cfg)})
		}
	}
	slices.SortFunc(victims, func(x, y victim) int {
		if !nearlyEqual(x.loss, y.loss) {
			return cmp.Compare(x.loss, y.loss)
		}
		return cmp.Compare(st[x.job].j.ID, st[y.job].j.ID)
	})
	// The others, in an order of the jobs alone (largest workers first,
	// then by ID), so that packing them does not depend on the snapshot's.
	others := make([]int, 0, len(st))
	for x := range st {
		if x != i && st[x].n > 0 {
			others = append(others, x)
		}
	}
	slices.SortFunc(others, func(x, y int) int {
		if c := cmp.Compare(st[y].k, st[x].k); c != 0 {
			return c
		}
		return cmp.Compare(st[x].j.ID, st[y].j.ID)
	})
	dropped := map[int]bool{}
	fits := func() bool {
		c := newCapacity(s)
		for _, x := range others {
			if a := &st[x]; !dropped[x] {
				if !c.fits(int(a.k), a.n) {
					return false
				}
				c.take(int(a.k), a.n)
			}
		}
		return c.fits(int(b.k), size)
	}
	for _, v := range victims {
		if fits() {
			break
		}
		dropped[v.job] = true
	}
	if !fits() {
		return nil
	}
	out := []forcedSize{{i, size}}
	for _, x := range others {
		if a := &st[x]; !dropped[x] && a.floor == 0 {
			out = append(out, forcedSize{x, a.n})
		}
	}
	return out
}

// blocked returns the waiting job most worth a trial (by how much it
// could gain, then by ID) among those not tried yet: jobs without GPUs
// whose minimum fits the empty cluster and whose worth at their minimum
// exceeds what the GPUs they lack are worth to the jobs holding them, at
// least the lowest value per GPU the greedy granted.
func (hs *hsState) blocked(s *Snapshot, cfg HeSRPTConfig, c *capacity, tried map[int]bool) (int, bool) {
	st := hs.st
	low := math.Inf(1)
	for i := range st {
		if a := &st[i]; a.n > 0 && a.floor == 0 {
			low = min(low, hs.marginal(a, cfg.Hysteresis))
		}
	}
	if math.IsInf(low, 1) {
		low = 0 // nothing granted that could make room
	}
	var empty *capacity
	pick, gain := -1, 0.0
	for i := range st {
		a := &st[i]
		if a.n > 0 || a.workers > 0 || a.lo+1 >= a.hi || tried[i] {
			continue // running, or preempted: see unblock's last step
		}
		if empty == nil {
			e := newCapacity(s)
			empty = &e
		}
		k := int(a.k)
		if !empty.fits(k, a.j.Min) {
			continue // never fits: nothing to unblock
		}
		best := hs.worth(a, a.j.Min, cfg) - float64(a.j.Min*k-c.free)*low
		if best <= 0 {
			continue
		}
		if tie := pick >= 0 && nearlyEqual(best, gain); pick < 0 || !tie && best > gain || tie && a.j.ID < st[pick].j.ID {
			pick, gain = i, best
		}
	}
	return pick, pick >= 0
}

// marginal is the value per GPU, as the greedy ranks it, of the job's
// last granted worker: of the hull segment its size lies in.
func (hs *hsState) marginal(a *hsJob, hysteresis float64) float64 {
	if a.lo+1 >= a.hi {
		return 0
	}
	x := a.lo + 1
	for x < a.hi-1 && hs.hulls[x].x < a.n {
		x++
	}
	u, v := hs.hulls[x-1], hs.hulls[x]
	if v.x == u.x {
		return 0
	}
	val := a.w * (v.y - u.y) / float64(v.x-u.x)
	if v.x <= a.workers {
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
	return a.w * float64(a.k) * (a.j.S(n) + cfg.Hysteresis*a.j.S(min(n, a.workers)))
}

// preemption is the rate at which preempting a running job loses: the
// RestartCost seconds of its weighted throughput, spread over the time it
// is expected to go on running (its remaining time at its size, capped at
// Horizon, and at least the restart itself); 0 for a job not running.
func (hs *hsState) preemption(a *hsJob, cfg HeSRPTConfig) float64 {
	if a.workers <= 0 {
		return 0
	}
	sc := a.j.S(a.workers)
	if sc <= 0 {
		return 0
	}
	hold := cfg.Horizon
	if r := a.j.remaining(); !math.IsInf(r, 1) {
		hold = min(hold, r/sc)
	}
	hold = max(hold, cfg.RestartCost, 1e-9)
	return cfg.RestartCost * a.w * float64(a.k) * sc / hold
}

// force grants a job n workers ahead of the greedy, if they fit, and
// leaves the rest of its hull to the greedy, from the segment n lies in
// (on a straight curve the hull may have no vertex at n); only the heap
// serves a job inside a segment.
func (hs *hsState) force(a *hsJob, n int, c *capacity) {
	if a.next != 1 || a.lo+1 >= a.hi || n < a.j.Min {
		return // kept at a floor, or no size it can run at
	}
	k := int(a.k)
	if !c.fits(k, n) {
		return
	}
	c.take(k, n)
	a.n = n
	for a.lo+a.next < a.hi && hs.hulls[a.lo+a.next].x <= n {
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
