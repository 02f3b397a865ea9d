package v1alpha1

import (
	"errors"
	"fmt"
	"math"

	"github.com/vodascheduler/voda/pkg/quota"
)

// Validate reports every problem with a ClusterQueue the API server's
// schema cannot see, or that a file read without one (voda simulate
// --queues) may hold, in one error naming the fields.
func (cq *ClusterQueue) Validate() error {
	var errs []error
	if cq.Name == "" {
		errs = append(errs, errors.New("metadata.name is empty"))
	}
	seen := map[string]bool{}
	for i, q := range cq.Spec.Quotas {
		at := fmt.Sprintf("spec.quotas[%d]", i)
		if q.GPUType == "" {
			errs = append(errs, fmt.Errorf("%s.gpuType is empty", at))
		}
		if seen[q.GPUType] {
			errs = append(errs, fmt.Errorf("%s.gpuType %s is listed twice", at, q.GPUType))
		}
		seen[q.GPUType] = true
		if q.NominalQuota < 0 {
			errs = append(errs, fmt.Errorf("%s.nominalQuota %d is negative", at, q.NominalQuota))
		}
		if q.BorrowingLimit != nil && *q.BorrowingLimit < 0 {
			errs = append(errs, fmt.Errorf("%s.borrowingLimit %d is negative", at, *q.BorrowingLimit))
		}
		if q.LendingLimit != nil && *q.LendingLimit < 0 {
			errs = append(errs, fmt.Errorf("%s.lendingLimit %d is negative", at, *q.LendingLimit))
		}
		if q.LendingLimit != nil && *q.LendingLimit > q.NominalQuota {
			errs = append(errs, fmt.Errorf("%s.lendingLimit %d exceeds nominalQuota %d: a queue lends only its own quota", at, *q.LendingLimit, q.NominalQuota))
		}
		if cq.Spec.Cohort == "" && (q.BorrowingLimit != nil || q.LendingLimit != nil) {
			errs = append(errs, fmt.Errorf("%s: borrowingLimit and lendingLimit need spec.cohort: a queue outside a cohort neither borrows nor lends", at))
		}
	}
	if w := cq.weight(); !(w >= 0) || math.IsInf(w, 0) {
		errs = append(errs, fmt.Errorf("spec.fairSharing.weight %v: want zero or more", cq.Spec.FairSharing.Weight))
	}
	if p := cq.Spec.Preemption; p != nil {
		switch p.ReclaimWithinCohort {
		case "", ReclaimAny, ReclaimNever:
		default:
			errs = append(errs, fmt.Errorf("spec.preemption.reclaimWithinCohort %q: want Any or Never (Voda's jobs have no preemption priority)", p.ReclaimWithinCohort))
		}
		switch p.WithinClusterQueue {
		case "", WithinQueueByPolicy, WithinQueueNever:
		default:
			errs = append(errs, fmt.Errorf("spec.preemption.withinClusterQueue %q: want Policy or Never (Voda's jobs have no preemption priority)", p.WithinClusterQueue))
		}
		if p.ReclaimMinRunTime != nil && p.ReclaimMinRunTime.Duration < 0 {
			errs = append(errs, fmt.Errorf("spec.preemption.reclaimMinRunTime %v is negative", p.ReclaimMinRunTime.Duration))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("ClusterQueue %s: %w", cq.Name, err)
	}
	return nil
}

func (cq *ClusterQueue) weight() float64 {
	if cq.Spec.FairSharing == nil || cq.Spec.FairSharing.Weight == nil {
		return 1
	}
	return cq.Spec.FairSharing.Weight.AsApproximateFloat64()
}

// QuotaFor is the queue's settings on one GPU type, as the scheduler
// engine of that type takes them: a type the spec does not list has a
// nominal quota of 0.
func (cq *ClusterQueue) QuotaFor(gpuType string) quota.Queue {
	q := quota.Queue{Name: cq.Name, Cohort: cq.Spec.Cohort, BorrowingLimit: quota.Unlimited, LendingLimit: quota.Unlimited,
		Weight: cq.weight(), Reclaim: quota.ReclaimAny}
	for _, g := range cq.Spec.Quotas {
		if g.GPUType != gpuType {
			continue
		}
		q.Nominal = int(g.NominalQuota)
		if g.BorrowingLimit != nil {
			q.BorrowingLimit = int(*g.BorrowingLimit)
		}
		if g.LendingLimit != nil {
			q.LendingLimit = int(*g.LendingLimit)
		}
	}
	if p := cq.Spec.Preemption; p != nil {
		if p.ReclaimWithinCohort == ReclaimNever {
			q.Reclaim = quota.ReclaimNever
		}
		q.KeepRunning = p.WithinClusterQueue == WithinQueueNever
		if p.ReclaimMinRunTime != nil {
			q.MinRunTime = p.ReclaimMinRunTime.Duration
		}
	}
	return q
}

// Reach is the most the queue may ever hold of a GPU type that has gpus
// GPUs, all being the ClusterQueues by name (quota.Reach).
func (cq *ClusterQueue) Reach(all map[string]*ClusterQueue, gpuType string, gpus int) int {
	qs := []quota.Queue{cq.QuotaFor(gpuType)}
	for name, other := range all {
		if name != cq.Name {
			qs = append(qs, other.QuotaFor(gpuType))
		}
	}
	return quota.Reach(qs, 0, gpus)
}
