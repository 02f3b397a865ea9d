package kube

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
)

// seen is what the job's reconciler last saw of its planned workers: how
// many run on their nodes and, if not all, why the first of the others
// does not.
type seen struct {
	running int
	why     string
}

// sawWorkers records what a reconciler saw and reports whether it changed.
func (c *Controller) sawWorkers(id api.JobID, s seen) bool {
	c.estMu.Lock()
	defer c.estMu.Unlock()
	old, ok := c.workersSeen[id]
	c.workersSeen[id] = s
	if !ok || old != s {
		c.forgetHosts(id)
		return true
	}
	return false
}

// forgetWorkers drops what was seen of a job's workers: after an action
// its new workers have not been seen yet, so none counts as running.
func (c *Controller) forgetWorkers(id api.JobID) {
	c.estMu.Lock()
	defer c.estMu.Unlock()
	delete(c.workersSeen, id)
	delete(c.leftSince, id)
	delete(c.unrecordedSince, id)
	c.forgetHosts(id)
}

// showWorkers completes a status with what is known of the workers: the
// GPUs per worker and held, how many planned workers run, and Starting
// instead of Running while not all do, with the message saying why.
func (c *Controller) showWorkers(id api.JobID, k int, s *v1alpha1.TrainingJobStatus) {
	s.GPUsPerWorker = int32(k)
	s.GPUs = s.Workers * int32(k)
	if s.Phase != v1alpha1.PhaseRunning {
		return
	}
	c.estMu.Lock()
	w, ok := c.workersSeen[id]
	c.estMu.Unlock()
	if !ok {
		w = seen{why: "the workers are being created"}
	}
	s.RunningWorkers = int32(min(w.running, int(s.Workers)))
	if s.RunningWorkers < s.Workers {
		s.Phase = v1alpha1.PhaseStarting
		s.Message = fmt.Sprintf("%d of %d workers running; %s", s.RunningWorkers, s.Workers, w.why)
	}
}

// workerState says why a planned worker does not run, or "" if it does:
// pod is nil when the operator has not created it yet.
func workerState(idx int, pod *corev1.Pod, host string, gang bool) string {
	switch {
	case pod == nil:
		return fmt.Sprintf("worker %d has no pod yet", idx)
	case gated(pod) && gang:
		return fmt.Sprintf("worker %d waits for the other workers' pods before it is placed (gang)", idx)
	case gated(pod):
		return fmt.Sprintf("worker %d is being placed on %s", idx, host)
	case pod.Spec.NodeName == "":
		for _, cond := range pod.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Message != "" {
				return fmt.Sprintf("worker %d is Pending: %s", idx, cond.Message)
			}
		}
		return fmt.Sprintf("worker %d is Pending, not yet bound to %s", idx, host)
	case pod.Status.Phase != corev1.PodRunning:
		return fmt.Sprintf("worker %d is %s on %s", idx, pod.Status.Phase, pod.Spec.NodeName)
	}
	return ""
}

// firstReason returns the reason of the lowest-numbered worker that does
// not run.
func firstReason(reasons map[int]string) string {
	idx := make([]int, 0, len(reasons))
	for i := range reasons {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	if len(idx) == 0 {
		return ""
	}
	return reasons[idx[0]]
}

// slimWorker keeps of a TrainingJob's pod what the controller reads: its
// name, labels and owners, where it is (to be) placed, its gates, phase,
// conditions and start. At thousands of jobs the pods' containers,
// volumes and environment would be most of the controller's memory; the
// controller changes pods only by patches and deletions, never by writing
// back what it read.
func slimWorker(o any) (any, error) {
	p, ok := o.(*corev1.Pod)
	if !ok {
		return o, nil
	}
	slim := &corev1.Pod{
		ObjectMeta: p.ObjectMeta,
		Spec: corev1.PodSpec{NodeName: p.Spec.NodeName, NodeSelector: p.Spec.NodeSelector,
			SchedulingGates: p.Spec.SchedulingGates},
		Status: corev1.PodStatus{Phase: p.Status.Phase, Conditions: p.Status.Conditions, StartTime: p.Status.StartTime},
	}
	slim.ManagedFields, slim.Annotations = nil, nil
	return slim, nil
}
