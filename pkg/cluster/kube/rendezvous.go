package kube

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
)

// rendezvousLost says why a running job whose rendezvous lives in worker 0
// must restart as a whole, or "" if it need not: worker 0 must move to
// another node, is being deleted, or is gone or newer than a worker that
// runs. The other workers' torchruns then lose the c10d store and exit
// with code 1, which the operator's ExitCode policy takes for the job's
// failure; stopping every worker first (suspending the child) loses only
// the work since the last checkpoint. A job whose other workers do not run
// yet has nobody to lose the store: its worker 0 moves alone.
func (c *Controller) rendezvousLost(tj *v1alpha1.TrainingJob, rt *workload, pods []corev1.Pod) string {
	if !rt.storeOnWorker0 {
		return ""
	}
	var w0 *corev1.Pod
	var peers int
	var firstStart time.Time
	for i := range pods {
		p := &pods[i]
		idx, ok := workerIndex(tj.Name, p.Name)
		switch {
		case !ok || idx >= len(tj.Status.Placement):
		case idx == 0:
			w0 = p
		case p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && p.Spec.NodeName != "":
			peers++
			if s := p.Status.StartTime; s != nil && (firstStart.IsZero() || s.Time.Before(firstStart)) {
				firstStart = s.Time
			}
		}
	}
	if peers == 0 {
		return ""
	}
	running := fmt.Sprintf("while %d other workers run", peers)
	switch want := c.hostname(tj.Status.Placement[0]); {
	case w0 == nil:
		return "worker 0 is gone " + running
	case w0.DeletionTimestamp != nil:
		return "worker 0 is being deleted " + running
	case !firstStart.IsZero() && w0.CreationTimestamp.Time.After(firstStart):
		return "worker 0 was replaced " + running
	case !gated(w0) && c.podHost(w0) != "" && c.podHost(w0) != want:
		return "worker 0 moves to " + want
	}
	return ""
}

// restartWhole stops every worker of a job by suspending its child and
// says so (why, and because: why the whole job); convergeRunning resumes it, on the status's placement, once the
// old pods are gone. The gang's clock starts again.
func (c *Controller) restartWhole(ctx context.Context, tj *v1alpha1.TrainingJob, rt *workload, child *unstructured.Unstructured, why, because string) error {
	n := tj.Status.Workers
	if err := c.patchChild(ctx, rt, child, true, n); err != nil {
		return err
	}
	id := jobID(client.ObjectKeyFromObject(tj))
	c.estMu.Lock()
	c.suspendedAt[id] = time.Now()
	c.estMu.Unlock()
	c.restarting(id, int(n))
	c.event(id, corev1.EventTypeNormal, "Restarted", fmt.Sprintf(
		"Restarting all %d workers: %s; %s", n, why, because))
	return c.showRunning(ctx, tj, id, seen{why: "restarting: " + why})
}

// suspendUnseen reports whether the controller suspended job id's child
// (restartWhole) under surplusGrace ago and the child as read (st) does
// not show it yet: the cache is behind the controller's own write. Once
// the child shows it suspended, or after surplusGrace (someone else may
// have resumed it), the note goes.
func (c *Controller) suspendUnseen(id api.JobID, st childState) bool {
	c.estMu.Lock()
	defer c.estMu.Unlock()
	at, ok := c.suspendedAt[id]
	if !ok {
		return false
	}
	if st.suspended || time.Since(at) > surplusGrace {
		delete(c.suspendedAt, id)
		return false
	}
	return true
}
