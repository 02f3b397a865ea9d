package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
)

// mpi-operator (v0.6.0, and v0.7.0 still) adds every event of an MPIJob's
// pods to its workqueue with a per-job exponential backoff: 5 ms, doubled
// for each event or failed sync since the job's last successful sync, up
// to 1 000 s; and behind a limit of 10 events a second across all jobs by
// default (v0.7.0 can raise it), under which every event while a job's
// sync waits doubles the job's backoff. A burst of pod events with one
// failed sync among them (a
// conflict writing the MPIJob's status is common) leaves the events that
// follow unhandled for minutes. Two of its chores matter to Voda then, and
// the controller, which sees the workers itself, does them when it falls
// behind:
//
//   - The host list. Elastic Horovod learns its hosts by running
//     /etc/mpi/discover_hosts.sh, which mpi-operator writes into the
//     MPIJob's ConfigMap <job>-config: one line per worker pod that is
//     Running, sorted by pod name. Once all of a job's workers run, and only
//     them, the controller checks the script and, if it still lists other
//     workers hostsGrace later, writes what mpi-operator would write;
//     without that the job trains on part of the GPUs it holds. Both
//     write the same bytes, so neither undoes the other.
//   - Workers beyond the replicas. After a scale-in mpi-operator deletes
//     the workers above the new count; until it does they hold GPUs that
//     other jobs were given. The controller deletes them itself once they
//     have outlived the new count by surplusGrace: sooner, it would race a
//     healthy mpi-operator, whose delete of a pod already gone fails its
//     sync and grows the very backoff.
//   - The pods of a suspended job. When an MPIJob is suspended (the job is
//     preempted, or restarts whole) mpi-operator suspends its launcher
//     Job, whose controller then deletes the launcher's pod, and deletes
//     the workers. Until then they hold GPUs other jobs were given, and
//     the job itself cannot resume: its new workers must not meet the old
//     ones. Pods still there surplusGrace after the controller first saw
//     the MPIJob suspended with them, it suspends the launcher Job and
//     deletes the workers itself, as mpi-operator would; mpi-operator,
//     catching up, finds nothing left to do. (Resuming needs mpi-operator
//     itself, which creates the workers: a job resumed while it still
//     lags starts when it catches up, or gives its GPUs back at the gang
//     timeout.)
//
// The controller's own writes to an MPIJob can make mpi-operator fall
// behind: a write that lands while mpi-operator syncs the job fails the
// status update that ends its sync, and after a burst of events the retry
// comes minutes later. A suspended MPIJob is therefore resumed only once
// mpi-operator has recorded the suspension (the condition Suspended, the
// last step of the sync that carried it out), or surplusGrace after the
// controller first found it unrecorded, the pods being gone.

const (
	// discoverHostsKey is the script's key in the ConfigMap.
	discoverHostsKey = "discover_hosts.sh"
	// hostsRecheck is when a job whose script the controller rewrote is
	// checked again: mpi-operator, reading stale pods from its cache,
	// may write an older list over it once.
	hostsRecheck = 5 * time.Second
	// hostsGrace is how long a host list behind the running workers is
	// left to mpi-operator.
	hostsGrace = 3 * time.Second
	// surplusGrace is how long workers beyond a job's replicas, and the
	// pods of a suspended job, are left to mpi-operator, which removes
	// them within a second or two unless it lags.
	surplusGrace = 10 * time.Second
	// launcherSuffix names an MPIJob's launcher Job after the MPIJob, as
	// mpi-operator does.
	launcherSuffix = "-launcher"
)

// discoverHosts is the script listing workers 0 … n-1 of the MPIJob job in
// namespace ns, as mpi-operator writes it for its Running worker pods
// (workers behind the job's Service <job>; Voda never sets
// runLauncherAsWorker, which would add the launcher).
func discoverHosts(job, ns string, n int32) string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-worker-%d", job, i)
	}
	slices.Sort(names) // by name, as mpi-operator does: worker-10 before worker-2
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	for _, p := range names {
		fmt.Fprintf(&b, "echo %s.%s.%s.svc\n", p, job, ns)
	}
	return b.String()
}

// keepHostsCurrent makes the discover_hosts.sh of tj's MPIJob (job id) list
// its n workers, which all run, and reports when to look again (0: it is
// current and recorded so, until the job's workers change).
func (c *Controller) keepHostsCurrent(ctx context.Context, tj *v1alpha1.TrainingJob, id api.JobID, n int32) (time.Duration, error) {
	c.estMu.Lock()
	checked := c.hostsChecked[id]
	c.estMu.Unlock()
	if checked {
		return 0, nil
	}
	want := discoverHosts(tj.Name, tj.Namespace, n)
	var cm corev1.ConfigMap
	key := types.NamespacedName{Namespace: tj.Namespace, Name: tj.Name + "-config"}
	switch err := c.reader.Get(ctx, key, &cm); {
	case apierrors.IsNotFound(err):
		// mpi-operator creates it before the workers; not yet seen here.
		return hostsRecheck, nil
	case err != nil:
		return 0, fmt.Errorf("read the host list of %s/%s: %w", tj.Namespace, tj.Name, err)
	}
	if ref := metav1.GetControllerOf(&cm); ref == nil || ref.Kind != MPIJobGVK.Kind || ref.Name != tj.Name {
		// Not mpi-operator's ConfigMap for this job: never Voda's to write.
		return 0, nil
	}
	now := time.Now()
	c.estMu.Lock()
	if cm.Data[discoverHostsKey] == want {
		c.hostsChecked[id] = true
		c.estMu.Unlock()
		return 0, nil
	}
	// Behind: mpi-operator gets a moment to write it first, as it does
	// within a second unless it lags; writing sooner would race it, and
	// its update, conflicting, would fail its sync and grow its backoff.
	wait, _ := graceLeft(c.hostsBehind, id, now, hostsGrace)
	c.estMu.Unlock()
	if wait > 0 {
		return wait, nil
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[discoverHostsKey] = want
	// An update, not a patch: it fails if mpi-operator wrote in between,
	// and the next look reads what it wrote.
	switch err := c.client.Update(ctx, &cm); {
	case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
		return time.Second, nil
	case err != nil:
		return 0, fmt.Errorf("write the host list of %s/%s: %w", tj.Namespace, tj.Name, err)
	}
	c.log.Info("wrote the host list mpi-operator had not", "job", id, "workers", n)
	return hostsRecheck, nil
}

// forgetHosts drops what the controller noted of a job's host list and
// surplus workers: its workers changed. The caller holds estMu.
func (c *Controller) forgetHosts(id api.JobID) {
	delete(c.hostsChecked, id)
	delete(c.hostsBehind, id)
	delete(c.surplusSince, id)
}

// clearLeft lists the pods of tj, whose MPIJob (child) is suspended, and
// stops what mpi-operator has left running of them (clearSuspended). It
// reports when to look again (0: nothing is left).
func (c *Controller) clearLeft(ctx context.Context, tj *v1alpha1.TrainingJob, id api.JobID, child *unstructured.Unstructured) (time.Duration, error) {
	var pods corev1.PodList
	if err := c.client.List(ctx, &pods, client.InNamespace(tj.Namespace), client.MatchingLabels{v1alpha1.JobLabel: tj.Name}); err != nil {
		return 0, err
	}
	if len(pods.Items) == 0 {
		c.noneLeft(id)
		return 0, nil
	}
	return c.clearSuspended(ctx, tj, id, child, pods.Items)
}

// noneLeft forgets when pods of job id's suspended MPIJob were first seen
// left, and when it was first found unrecorded: it resumes.
func (c *Controller) noneLeft(id api.JobID) {
	c.estMu.Lock()
	delete(c.leftSince, id)
	delete(c.unrecordedSince, id)
	c.estMu.Unlock()
}

// unrecorded returns how long to wait before resuming job id's suspended
// child (state st), whose pods are gone: while mpi-operator has not
// recorded the suspension (its condition Suspended), up to surplusGrace
// from when the controller first found it so (0: resume now).
func (c *Controller) unrecorded(rt *workload, id api.JobID, st childState) time.Duration {
	if !rt.lags || !st.suspended || st.recorded {
		return 0
	}
	wait, _ := c.lagging(c.unrecordedSince, id, time.Now())
	return max(wait, 0)
}

// graceLeft notes now in first as when job id was first seen lagging, if
// it has no note yet, and returns the grace left from then (≤ 0: none)
// and that moment. The caller holds estMu.
func graceLeft(first map[api.JobID]time.Time, id api.JobID, now time.Time, grace time.Duration) (time.Duration, time.Time) {
	since, ok := first[id]
	if !ok {
		since = now
		first[id] = now
	}
	return since.Add(grace).Sub(now), since
}

// lagging is graceLeft for surplusGrace under estMu: the grace left since
// job id was first seen in first, and that moment.
func (c *Controller) lagging(first map[api.JobID]time.Time, id api.JobID, now time.Time) (time.Duration, time.Time) {
	c.estMu.Lock()
	defer c.estMu.Unlock()
	return graceLeft(first, id, now, surplusGrace)
}

// regrace starts job id's grace in first again at now: a repair was
// made, and the cache may show what it removed a while longer.
func (c *Controller) regrace(first map[api.JobID]time.Time, id api.JobID, now time.Time) {
	c.estMu.Lock()
	first[id] = now
	c.estMu.Unlock()
}

// removeSurplus deletes the workers of job id that lie beyond its MPIJob's
// replicas, once it has seen them there for surplusGrace, and reports when
// to look again.
func (c *Controller) removeSurplus(ctx context.Context, id api.JobID, surplus []*corev1.Pod) (time.Duration, error) {
	now := time.Now()
	wait, since := c.lagging(c.surplusSince, id, now)
	if wait > 0 {
		return wait, nil
	}
	removed := 0
	for _, p := range surplus {
		if err := c.deletePod(ctx, p, &removed); err != nil {
			return 0, fmt.Errorf("remove %s, beyond the job's workers: %w", p.Name, err)
		}
	}
	if removed > 0 {
		c.log.Info("removed the workers mpi-operator had left beyond the job's count",
			"job", id, "pods", removed, "after", now.Sub(since).Round(time.Second))
	}
	// The cache may show them a while longer: they get another grace
	// before being deleted again.
	c.regrace(c.surplusSince, id, now)
	return time.Second, nil
}

// deletePod deletes pod p, if it is still the pod read, and counts it in
// removed; a pod already gone or replaced is no error.
func (c *Controller) deletePod(ctx context.Context, p *corev1.Pod, removed *int) error {
	switch err := c.client.Delete(ctx, p, client.Preconditions{UID: &p.UID}); {
	case err == nil:
		*removed++
	case !apierrors.IsNotFound(err) && !apierrors.IsConflict(err):
		return err
	}
	return nil
}

// clearSuspended does mpi-operator's part of suspending tj's MPIJob
// (child, suspended), whose pods are still there, once it has seen them
// there for surplusGrace: it suspends the launcher Job, so the Job
// controller deletes the launcher's pod, and deletes the workers. It
// reports when to look again.
func (c *Controller) clearSuspended(ctx context.Context, tj *v1alpha1.TrainingJob, id api.JobID, child *unstructured.Unstructured, pods []corev1.Pod) (time.Duration, error) {
	now := time.Now()
	wait, since := c.lagging(c.leftSince, id, now)
	if wait > 0 {
		return wait, nil
	}
	launcher, err := c.suspendLauncher(ctx, tj, child)
	if err != nil {
		return 0, err
	}
	removed := 0
	for i := range pods {
		p := &pods[i]
		if ref := metav1.GetControllerOf(p); p.DeletionTimestamp != nil || ref == nil || ref.UID != child.GetUID() {
			continue // being deleted, or not a worker: the launcher's pod goes with its Job's suspension
		}
		if err := c.deletePod(ctx, p, &removed); err != nil {
			return 0, fmt.Errorf("remove %s, a worker of the suspended job: %w", p.Name, err)
		}
	}
	if removed > 0 || launcher {
		c.log.Info("stopped what mpi-operator had left running of the suspended job",
			"job", id, "workers", removed, "launcherSuspended", launcher, "after", now.Sub(since).Round(time.Second))
	}
	// The cache may show the pods a while longer, and the Job controller
	// deletes the launcher's: they get another grace before this is done
	// again.
	c.regrace(c.leftSince, id, now)
	return time.Second, nil
}

// suspendLauncher suspends the launcher Job of tj's MPIJob (child) if it
// exists, is the MPIJob's and runs, and reports whether it did.
func (c *Controller) suspendLauncher(ctx context.Context, tj *v1alpha1.TrainingJob, child *unstructured.Unstructured) (bool, error) {
	var job batchv1.Job
	key := types.NamespacedName{Namespace: tj.Namespace, Name: tj.Name + launcherSuffix}
	switch err := c.reader.Get(ctx, key, &job); {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read the launcher of %s/%s: %w", tj.Namespace, tj.Name, err)
	}
	if ref := metav1.GetControllerOf(&job); ref == nil || ref.UID != child.GetUID() || job.Spec.Suspend != nil && *job.Spec.Suspend {
		return false, nil
	}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":true}}`))
	if err := c.client.Patch(ctx, &job, patch); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil // gone meanwhile: nothing left to suspend
		}
		return false, fmt.Errorf("suspend the launcher of %s/%s: %w", tj.Namespace, tj.Name, err)
	}
	return true, nil
}
