package quota

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"
)

// Unlimited, as a borrowing or lending limit, means no limit.
const Unlimited = -1

// Reclaim says whether a queue takes back, by shrinking and then
// preempting other queues' jobs, the nominal quota they borrowed.
type Reclaim string

const (
	// ReclaimAny takes borrowed GPUs back within one rescheduling: the
	// borrowers' elastic workers shrink first, then whole borrowed jobs
	// stop. It is the default.
	ReclaimAny Reclaim = "Any"
	// ReclaimNever waits for borrowed GPUs to come back as the borrowers'
	// jobs finish or shrink on their own.
	ReclaimNever Reclaim = "Never"
)

// Queue is one queue's settings for one GPU type, in GPUs.
type Queue struct {
	Name string
	// Cohort is the group of queues that lend to and borrow from each
	// other; empty means the queue neither lends nor borrows.
	Cohort string
	// Nominal is the GPUs the queue is guaranteed whenever its jobs want
	// them.
	Nominal int
	// BorrowingLimit is how many GPUs above Nominal the queue may hold
	// (Unlimited: any the cohort can lend); LendingLimit how many of its
	// idle nominal GPUs others may hold (Unlimited: all of them).
	BorrowingLimit, LendingLimit int
	// Weight scales the queue's share of lent GPUs: a queue of weight 2
	// borrows twice what one of weight 1 does. Zero borrows only what no
	// queue of positive weight wants.
	Weight float64
	// Reclaim is how the queue takes back what it lent; empty means
	// ReclaimAny.
	Reclaim Reclaim
	// MinRunTime protects borrowed workers for this long after they
	// started from being taken back for fair sharing. It never delays
	// giving a queue its nominal quota.
	MinRunTime time.Duration
	// KeepRunning never stops a running job of the queue for another job
	// of the queue; the policy may still shrink it to its minimum.
	KeepRunning bool
}

// Validate reports every problem with a queue in one error, naming the
// fields as the ClusterQueue object spells them.
func (q Queue) Validate() error {
	var errs []error
	if q.Name == "" {
		errs = append(errs, errors.New("queue has no name"))
	}
	if q.Nominal < 0 {
		errs = append(errs, fmt.Errorf("nominalQuota %d is negative", q.Nominal))
	}
	if q.BorrowingLimit < Unlimited {
		errs = append(errs, fmt.Errorf("borrowingLimit %d is negative", q.BorrowingLimit))
	}
	if q.LendingLimit < Unlimited {
		errs = append(errs, fmt.Errorf("lendingLimit %d is negative", q.LendingLimit))
	}
	if q.LendingLimit > q.Nominal {
		errs = append(errs, fmt.Errorf("lendingLimit %d exceeds nominalQuota %d: a queue lends only its own quota", q.LendingLimit, q.Nominal))
	}
	if q.Cohort == "" && (q.BorrowingLimit != Unlimited || q.LendingLimit != Unlimited) {
		errs = append(errs, errors.New("borrowingLimit and lendingLimit need a cohort: a queue outside a cohort neither borrows nor lends"))
	}
	if !(q.Weight >= 0) || math.IsInf(q.Weight, 0) {
		errs = append(errs, fmt.Errorf("fairSharing.weight %v: want a finite number of zero or more", q.Weight))
	}
	if q.Reclaim != "" && q.Reclaim != ReclaimAny && q.Reclaim != ReclaimNever {
		errs = append(errs, fmt.Errorf("preemption.reclaimWithinCohort %q: want %s or %s", q.Reclaim, ReclaimAny, ReclaimNever))
	}
	if q.MinRunTime < 0 {
		errs = append(errs, fmt.Errorf("minimum run time %v is negative", q.MinRunTime))
	}
	return errors.Join(errs...)
}

// Demand is what one queue's jobs hold and want this round, in GPUs.
type Demand struct {
	// Used is what the queue's jobs hold now.
	Used int
	// Want is the most the queue's jobs could use if no other queue
	// wanted any: the sum of their maximum sizes under an elastic policy.
	Want int
	// Protected is the part of Used above the queue's nominal quota held
	// by workers younger than the queue's MinRunTime.
	Protected int
}

// Share is one queue's part of the GPUs for one round.
type Share struct {
	// Budget is the most the queue's jobs may hold this round:
	// Guaranteed plus Borrowed.
	Budget int
	// Guaranteed is the part of the nominal quota its jobs want (all of
	// it, unless the GPU type has fewer GPUs than the quotas add up to).
	Guaranteed int
	// Borrowed is what it holds above Guaranteed: others' idle quota and
	// GPUs in no queue's quota.
	Borrowed int
	// Lent is how much of its idle nominal quota other queues borrowed.
	Lent int
}

// Split divides gpus among the queues (demands[i] is queues[i]'s). It is a
// function of its arguments alone, and Used matters only to break ties in
// the holder's favour, so a split whose budgets are then held gives the
// same split again: no two queues take GPUs back and forth while their
// demands stay as they are.
//
// Order: first each queue's wanted part of its nominal quota (a queue with
// ReclaimNever only up to what it holds plus what is idle); then the
// nominal GPUs queues leave idle, up to their lending limits, and the GPUs
// in no queue's quota, lent one at a time to the queue of the lowest
// weighted share (GPUs borrowed ÷ weight) in a cohort that can lend them,
// within its borrowing limit, after each queue first got back the
// borrowed GPUs its MinRunTime protects.
func Split(gpus int, queues []Queue, demands []Demand) []Share {
	out := make([]Share, len(queues))
	if len(queues) == 0 {
		return out
	}
	nominal, used := 0, 0
	for i, q := range queues {
		nominal += q.Nominal
		used += demands[i].Used
		out[i].Guaranteed = min(q.Nominal, max(demands[i].Want, 0))
	}
	idle := max(gpus-used, 0)
	for _, i := range byName(queues) {
		if queues[i].Reclaim != ReclaimNever {
			continue
		}
		// A queue that does not reclaim grows into its quota only as
		// GPUs come free.
		d := demands[i]
		if extra := out[i].Guaranteed - d.Used; extra > 0 {
			grant := min(extra, idle)
			idle -= grant
			out[i].Guaranteed = max(d.Used, 0) + grant
			out[i].Guaranteed = min(out[i].Guaranteed, queues[i].Nominal)
		}
	}
	fitGuarantees(gpus, queues, demands, out)
	guaranteed := 0
	for i := range out {
		guaranteed += out[i].Guaranteed
	}
	// Pools of lendable GPUs: per cohort, and the GPUs in no quota, which
	// any cohort may borrow.
	pools := map[string]int{}
	lendable := make([]int, len(queues))
	for i, q := range queues {
		if q.Cohort == "" {
			continue
		}
		l := q.Nominal - out[i].Guaranteed
		if q.LendingLimit != Unlimited {
			l = min(l, q.LendingLimit)
		}
		lendable[i] = max(l, 0)
		pools[q.Cohort] += lendable[i]
	}
	free := max(gpus-max(nominal, guaranteed), 0)
	// Nothing may be lent beyond what exists: with fewer GPUs than quotas,
	// the pools shrink to what is left after the guarantees.
	if room := gpus - guaranteed - free; room < sumValues(pools) {
		shrinkPools(pools, max(room, 0))
	}
	taken := map[string]int{}
	borrow := func(i int) bool {
		c := queues[i].Cohort
		switch {
		case pools[c] > 0:
			pools[c]--
			taken[c]++
		case free > 0:
			free--
		default:
			return false
		}
		out[i].Borrowed++
		return true
	}
	room := make([]int, len(queues))
	for i, q := range queues {
		if q.Cohort == "" {
			continue
		}
		if out[i].Guaranteed < min(q.Nominal, demands[i].Want) {
			continue // a queue waiting for its own quota borrows nothing
		}
		room[i] = max(demands[i].Want-out[i].Guaranteed, 0)
		if q.BorrowingLimit != Unlimited {
			room[i] = min(room[i], q.BorrowingLimit)
		}
	}
	// Borrowed workers still within their minimum run time keep their GPUs.
	for _, i := range byName(queues) {
		for n := min(demands[i].Protected, room[i]); n > 0 && borrow(i); n-- {
			room[i]--
		}
	}
	h := newShareHeap(queues, demands, out, room)
	for h.Len() > 0 {
		i := h.top()
		if !borrow(i) {
			h.drop() // its cohort has nothing left to lend
			continue
		}
		room[i]--
		if room[i] == 0 {
			h.drop()
		} else {
			h.fix()
		}
	}
	for i := range out {
		out[i].Budget = out[i].Guaranteed + out[i].Borrowed
	}
	attributeLending(queues, lendable, taken, out)
	return out
}

// fitGuarantees scales the guarantees down when the GPU type has fewer
// GPUs than they add up to (nodes lost, or quotas promised beyond the
// cluster): each queue keeps the same fraction, whole GPUs by largest
// remainder, ties to a queue that holds the extra GPU, then by name.
func fitGuarantees(gpus int, queues []Queue, demands []Demand, out []Share) {
	total := 0
	for i := range out {
		total += out[i].Guaranteed
	}
	if total <= gpus {
		return
	}
	type rem struct {
		i    int
		frac float64
	}
	rems := make([]rem, len(out))
	given := 0
	for i := range out {
		exact := float64(out[i].Guaranteed) * float64(max(gpus, 0)) / float64(total)
		out[i].Guaranteed = int(math.Floor(exact))
		given += out[i].Guaranteed
		rems[i] = rem{i, exact - math.Floor(exact)}
	}
	slices.SortFunc(rems, func(a, b rem) int {
		if c := cmp.Compare(b.frac, a.frac); c != 0 {
			return c
		}
		// The queue that already holds the extra GPU keeps it.
		holds := func(i int) bool { return demands[i].Used > out[i].Guaranteed }
		if ha, hb := holds(a.i), holds(b.i); ha != hb {
			if ha {
				return -1
			}
			return 1
		}
		return cmp.Compare(queues[a.i].Name, queues[b.i].Name)
	})
	for k := 0; given < gpus && k < len(rems); k++ {
		out[rems[k].i].Guaranteed++
		given++
	}
}

// shrinkPools cuts the cohorts' pools to add up to room, in proportion.
func shrinkPools(pools map[string]int, room int) {
	total := sumValues(pools)
	left := room
	names := slices.Sorted(maps.Keys(pools))
	for _, c := range names {
		n := pools[c] * room / max(total, 1)
		pools[c] = n
		left -= n
	}
	for _, c := range names {
		if left == 0 {
			break
		}
		pools[c]++
		left--
	}
}

// attributeLending records how much of each lender's lendable quota was
// taken, in proportion to what it offered (whole GPUs, largest offers
// first on rounding).
func attributeLending(queues []Queue, lendable []int, taken map[string]int, out []Share) {
	offered := map[string]int{}
	for i, q := range queues {
		if q.Cohort != "" {
			offered[q.Cohort] += lendable[i]
		}
	}
	left := maps.Clone(taken)
	order := make([]int, 0, len(queues))
	for i := range queues {
		order = append(order, i)
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := cmp.Compare(lendable[b], lendable[a]); c != 0 {
			return c
		}
		return cmp.Compare(queues[a].Name, queues[b].Name)
	})
	for _, i := range order {
		c := queues[i].Cohort
		if c == "" || offered[c] == 0 {
			continue
		}
		n := lendable[i] * taken[c] / offered[c]
		out[i].Lent = n
		left[c] -= n
	}
	for _, i := range order {
		c := queues[i].Cohort
		if c != "" && left[c] > 0 && out[i].Lent < lendable[i] {
			out[i].Lent++
			left[c]--
		}
	}
}

// WeightedShare is a queue's share of its cohort's lendable GPUs above
// its nominal quota, divided by its weight (Kueue's dominant resource
// share for one resource): 0 at or below the quota, +Inf for a borrowing
// queue of weight 0.
func WeightedShare(q Queue, used, lendable int) float64 {
	above := used - q.Nominal
	if above <= 0 {
		return 0
	}
	if q.Weight == 0 {
		return math.Inf(1)
	}
	return float64(above) / float64(max(lendable, 1)) / q.Weight
}

// byName returns the queues' indices in name order.
func byName(queues []Queue) []int {
	idx := make([]int, len(queues))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(queues[a].Name, queues[b].Name) })
	return idx
}

func sumValues(m map[string]int) int {
	s := 0
	for _, v := range m {
		s += v
	}
	return s
}

// Reach is the most queue i may ever hold of gpus GPUs: its nominal quota
// plus what its cohort can lend it (the others' quotas up to their lending
// limits, and the GPUs in no queue's quota) within its borrowing limit.
func Reach(queues []Queue, i, gpus int) int {
	q := queues[i]
	n := q.Nominal
	if q.Cohort != "" {
		lend, nominal := 0, 0
		for k, o := range queues {
			nominal += o.Nominal
			if k == i || o.Cohort != q.Cohort {
				continue
			}
			if o.LendingLimit == Unlimited {
				lend += o.Nominal
			} else {
				lend += o.LendingLimit
			}
		}
		lend += max(gpus-nominal, 0)
		if q.BorrowingLimit != Unlimited {
			lend = min(lend, q.BorrowingLimit)
		}
		n += lend
	}
	return min(n, gpus)
}
