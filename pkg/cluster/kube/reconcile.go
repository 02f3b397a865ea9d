package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/scheduler"
)

// Setup registers the controller and its reconcilers with a manager.
func (c *Controller) Setup(mgr ctrl.Manager) error {
	if err := mgr.Add(c); err != nil {
		return err
	}
	if c.opts.MetricsDir != "" {
		if err := mgr.Add(&metricsDir{c: c, dir: c.opts.MetricsDir, seen: map[api.JobID]time.Time{}}); err != nil {
			return err
		}
	}
	jobs := ctrl.NewControllerManagedBy(mgr).
		Named("trainingjob").
		For(&v1alpha1.TrainingJob{})
	for _, r := range runtimes {
		// Only the runtimes whose operator's CRD is installed: watching a
		// kind the API server does not serve would stop the manager.
		if _, err := mgr.GetRESTMapper().RESTMapping(r.gvk.GroupKind(), r.gvk.Version); err != nil {
			c.log.Info("runtime not installed: its jobs are refused", "kind", r.kind, "reason", err.Error())
			continue
		}
		c.installed[r.kind] = true
		jobs = jobs.Owns(r.object())
	}
	if err := c.watchOperators(mgr); err != nil {
		return err
	}
	err := jobs.Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(podToJob)).
		WithOptions(controller.Options{MaxConcurrentReconciles: c.opts.WriteConcurrency}).
		Complete(reconcile.Func(c.reconcileJob))
	if err != nil {
		return err
	}
	nodes := ctrl.NewControllerManagedBy(mgr).
		Named("node").
		For(&corev1.Node{})
	if c.foreign != nil {
		nodes = nodes.WatchesRawSource(c.foreignPodSource())
	}
	err = nodes.Complete(reconcile.Func(c.reconcileNode))
	if err != nil {
		return err
	}
	if c.queuesInstalled = queueCRDsInstalled(mgr.GetRESTMapper()); c.queuesInstalled {
		toQueues := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
			return []reconcile.Request{queuesKey}
		})
		err := ctrl.NewControllerManagedBy(mgr).
			Named("queues").
			Watches(&v1alpha1.ClusterQueue{}, toQueues).
			Watches(&v1alpha1.LocalQueue{}, toQueues).
			Complete(reconcile.Func(c.reconcileQueues))
		if err != nil {
			return err
		}
	} else {
		c.log.Info("the queue CRDs are not installed: every job shares every GPU (docs/queues.md)")
	}
	if c.opts.ConfigNamespace == "" {
		return nil
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("settings").
		For(&corev1.ConfigMap{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetNamespace() == c.opts.ConfigNamespace && o.GetName() == ConfigMapName
		}))).
		Complete(reconcile.Func(c.reconcileConfig))
}

// podToJob maps a pod of a TrainingJob (worker or launcher) to its job.
func podToJob(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[v1alpha1.JobLabel]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
}

// reconcileJob keeps one TrainingJob, its engine's record and its MPIJob
// and pods in step.
func (c *Controller) reconcileJob(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if !c.waitReady(ctx) {
		return reconcile.Result{}, ctx.Err()
	}
	id := jobID(req.NamespacedName)
	var tj v1alpha1.TrainingJob
	err := c.client.Get(ctx, req.NamespacedName, &tj)
	if apierrors.IsNotFound(err) || (err == nil && tj.DeletionTimestamp != nil) {
		if err := c.forget(ctx, id); err != nil {
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, c.deleteOrphan(ctx, req.NamespacedName)
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	gt := api.GPUType(tj.CurrentGPUType())
	c.mu.Lock()
	_, moving := c.moving[id]
	c.mu.Unlock()
	switch {
	case moving:
		// Being moved to another type: the move admits it there.
		return reconcile.Result{RequeueAfter: time.Second}, nil
	case gt == "" && len(tj.Spec.GPUTypes) > 0 && !tj.Status.Phase.Final():
		return reconcile.Result{}, c.chooseType(ctx, &tj)
	}
	if !c.handles(gt) {
		return reconcile.Result{}, nil
	}
	c.mu.Lock()
	c.jobTypes[id] = gt
	c.mu.Unlock()
	rt, err := runtimeOf(&tj)
	if err != nil {
		return reconcile.Result{}, err // the API server's schema refuses such a job
	}
	if (tj.Status.Phase == "" || tj.Status.Phase == v1alpha1.PhaseSubmitted) && !c.engineFor(gt).knows(id) {
		if err := c.admissible(&tj, rt); err != nil {
			return reconcile.Result{}, c.refuse(ctx, &tj, err)
		}
	}
	var unschedulable string
	if !tj.Status.Phase.Final() {
		if unschedulable, err = c.unschedulableReason(ctx, &tj); err != nil {
			return reconcile.Result{}, err
		}
	}
	var q queueOf
	if !tj.Status.Phase.Final() {
		if q, err = c.resolveQueue(ctx, &tj, c.currentQueues()); err != nil {
			return reconcile.Result{}, err
		}
	}
	e := c.engineFor(gt)
	if err := e.admit(ctx, &tj, unschedulable, q); err != nil {
		return reconcile.Result{}, fmt.Errorf("admit %s: %w", id, err)
	}
	if tj.Status.Phase.Final() {
		return reconcile.Result{}, nil
	}
	if err := c.setSchedulable(ctx, &tj, unschedulable); err != nil {
		return reconcile.Result{}, err
	}
	if err := e.learn(ctx, &tj); err != nil {
		return reconcile.Result{}, err
	}
	child := rt.object()
	switch err := c.client.Get(ctx, req.NamespacedName, child); {
	case apierrors.IsNotFound(err):
		child = nil
	case err != nil:
		return reconcile.Result{}, err
	}
	if child != nil {
		if ref := metav1.GetControllerOf(child); ref == nil || ref.UID != tj.UID {
			return c.foreignChild(ctx, &tj, child, ref)
		}
		if st := rt.read(child); st.succeeded || st.failed {
			return reconcile.Result{}, e.finish(ctx, id, st.failed, st.message)
		}
	}
	switch tj.Status.Phase {
	case v1alpha1.PhaseRunning, v1alpha1.PhaseStarting:
		recheck, err := c.convergeRunning(ctx, &tj, rt, child)
		return reconcile.Result{RequeueAfter: recheck}, err
	case v1alpha1.PhaseWaiting:
		if child == nil {
			break
		}
		if st := rt.read(child); !st.suspended {
			return reconcile.Result{}, c.patchChild(ctx, rt, child, true, st.replicas)
		}
		if rt.lags {
			recheck, err := c.clearLeft(ctx, &tj, id, child)
			return reconcile.Result{RequeueAfter: recheck}, err
		}
	}
	return reconcile.Result{}, nil
}

// admissible says why a new job cannot be scheduled, if it cannot: its
// runtime's operator is not installed, its GPUs per worker are in error, or
// its templates ask for what Voda decides or for another accelerator.
func (c *Controller) admissible(tj *v1alpha1.TrainingJob, rt *workload) error {
	if !c.installed[rt.kind] {
		return fmt.Errorf("the %s kind (%s) is not installed in this cluster: install its operator (docs/install.md) and restart Voda's controller, or use another runtime",
			rt.kind, rt.gvk.GroupVersion())
	}
	k, err := c.workerUnits(tj)
	if err != nil {
		return err
	}
	if err := tj.Spec.BatchConflicts(k); err != nil {
		return err
	}
	res := c.resourceOf(tj)
	return errors.Join(tj.Spec.TemplateConflicts(res), tj.Spec.AcceleratorConflicts(res, c.opts.Accelerators.Resources()))
}

// workerUnits is the units of its GPU type's resource each worker of a job
// holds (see TrainingJobSpec.WorkerAccelerators).
func (c *Controller) workerUnits(tj *v1alpha1.TrainingJob) (int, error) {
	return tj.Spec.WorkerAccelerators(c.resourceOf(tj))
}

// resourceOf is the node resource a job's GPU type schedules.
func (c *Controller) resourceOf(tj *v1alpha1.TrainingJob) corev1.ResourceName {
	return c.opts.Accelerators.Of(tj.CurrentGPUType())
}

// refuse ends a new job whose spec Voda cannot honour (the REST API refuses
// such a job; kubectl and other clients reach the API server directly): its
// status says Failed and why, naming the field, and a Warning Event says
// the same. Nothing is created for it.
func (c *Controller) refuse(ctx context.Context, tj *v1alpha1.TrainingJob, reason error) error {
	// Once per job: a reconcile that reads the job from a cache not yet
	// showing the Failed status (or the restore at start, then the
	// reconciler) must not refuse it twice.
	id := jobID(client.ObjectKeyFromObject(tj))
	c.mu.Lock()
	done := c.refused[id] == tj.UID
	c.mu.Unlock()
	if done {
		return nil
	}
	now := metav1.Now()
	s := v1alpha1.TrainingJobStatus{Phase: v1alpha1.PhaseFailed, Message: "refused: " + reason.Error(),
		SubmitTime: &now, FinishTime: &now, AccountedTime: &now}
	data, err := statusPatch(s)
	if err != nil {
		return err
	}
	if err := c.client.Status().Patch(ctx, tj, client.RawPatch(types.MergePatchType, data)); err != nil {
		return client.IgnoreNotFound(err)
	}
	c.mu.Lock()
	c.refused[id] = tj.UID
	c.mu.Unlock()
	c.recorder.Event(tj, corev1.EventTypeWarning, "InvalidSpec", s.Message)
	return nil
}

// forget tells the engine of a deleted job.
func (c *Controller) forget(ctx context.Context, id api.JobID) error {
	c.mu.Lock()
	gt, ok := c.jobTypes[id]
	delete(c.jobTypes, id)
	delete(c.refused, id)
	c.mu.Unlock()
	c.heldMu.Lock()
	delete(c.held, id)
	c.heldMu.Unlock()
	c.mu.Lock()
	delete(c.jobQueues, id)
	c.mu.Unlock()
	if !ok {
		return nil
	}
	return c.engineFor(gt).forget(ctx, id)
}

// deleteOrphan deletes the child workload of a deleted TrainingJob at once
// rather than leaving it to the garbage collector, which may not have
// discovered the TrainingJob kind yet and would keep the GPUs busy
// meanwhile. The job is gone, so every installed runtime is looked at.
func (c *Controller) deleteOrphan(ctx context.Context, key types.NamespacedName) error {
	for _, rt := range runtimes {
		if !c.installed[rt.kind] {
			continue
		}
		if err := c.deleteOrphanOf(ctx, rt, key); err != nil {
			return err
		}
	}
	return nil
}

func (c *Controller) deleteOrphanOf(ctx context.Context, rt *workload, key types.NamespacedName) error {
	child := rt.object()
	if err := c.client.Get(ctx, key, child); err != nil {
		return client.IgnoreNotFound(err)
	}
	ref := metav1.GetControllerOf(child)
	if ref == nil || ref.Kind != "TrainingJob" || ref.Name != key.Name {
		return nil // not ours
	}
	var tj v1alpha1.TrainingJob
	if err := c.client.Get(ctx, key, &tj); err == nil && tj.UID == ref.UID && tj.DeletionTimestamp == nil {
		return nil // its owner still exists
	}
	uid := child.GetUID()
	err := c.client.Delete(ctx, child, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	return client.IgnoreNotFound(err)
}

// foreignChild handles a child workload that has the job's name but is not
// its own: one left by a deleted job of the same name is deleted; any other
// is a conflict the user must resolve, reported as a Warning Event.
func (c *Controller) foreignChild(ctx context.Context, tj *v1alpha1.TrainingJob, child *unstructured.Unstructured, ref *metav1.OwnerReference) (reconcile.Result, error) {
	if ref != nil && ref.Kind == "TrainingJob" && ref.Name == tj.Name {
		uid := child.GetUID()
		err := c.client.Delete(ctx, child, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
		return reconcile.Result{RequeueAfter: time.Second}, client.IgnoreNotFound(err)
	}
	msg := fmt.Sprintf("%s %s/%s exists and does not belong to this TrainingJob; delete it or rename the job", child.GetKind(), child.GetNamespace(), child.GetName())
	c.event(jobID(client.ObjectKeyFromObject(tj)), corev1.EventTypeWarning, "NameConflict", msg)
	return reconcile.Result{RequeueAfter: 30 * time.Second}, nil
}

// convergeRunning makes the child workload run the status's allocation and
// its workers sit on the status's placement.
//
// It returns when to look again if the gang is not all running yet: a gang
// still not running GangTimeout after its start, resize or migration gives
// its GPUs back and is requeued.
func (c *Controller) convergeRunning(ctx context.Context, tj *v1alpha1.TrainingJob, rt *workload, child *unstructured.Unstructured) (time.Duration, error) {
	n := tj.Status.Workers
	placement := tj.Status.Placement
	if int(n) != len(placement) || n < 1 {
		return 0, fmt.Errorf("status of %s/%s runs %d workers but places %d", tj.Namespace, tj.Name, n, len(placement))
	}
	// The PodGroup first. Scaling in, minMember drops before the operator
	// deletes workers, so the group never has fewer pods than it needs;
	// scaling out, it rises before the new workers exist, so they are
	// bound only with the whole group present.
	pg, err := c.ensurePodGroup(ctx, tj, rt.minMember(n))
	if err != nil {
		return 0, err
	}
	var pods corev1.PodList
	if err := c.client.List(ctx, &pods, client.InNamespace(tj.Namespace), client.MatchingLabels{v1alpha1.JobLabel: tj.Name}); err != nil {
		return 0, err
	}
	id := jobID(client.ObjectKeyFromObject(tj))
	c.recoverBatch(tj, rt, child)
	if child == nil {
		u, err := rt.build(tj, n, c.opts.Gang, c.resourceOf(tj), c.childEnv(tj))
		if err != nil {
			return 0, err
		}
		if sizes := c.batchSizes(tj); sizes != "" {
			if err := rt.annotate(u, sizes); err != nil {
				return 0, err
			}
		}
		if err := c.client.Create(ctx, u); err != nil && !apierrors.IsAlreadyExists(err) {
			return 0, fmt.Errorf("create %s: %w", rt.kind, err)
		}
	} else if st := rt.read(child); c.suspendUnseen(id, st) {
		// The cache is behind the controller's own suspension of the
		// child (a whole restart): acting on the old child and pods would
		// restart the job again.
		return time.Second, nil
	} else if st.suspended && len(pods.Items) > 0 {
		// Resuming (after a preemption or a whole-job restart) waits for
		// the old pods to go: a new worker 0 must not meet the old one's
		// rendezvous, nor a new worker an old one's node. Pods that never
		// go (a node that died under them) count against the gang's
		// timeout, which then gives the GPUs back.
		msg := fmt.Sprintf("restarting: waiting for %d pods of the last run to end", len(pods.Items))
		if err := c.showRunning(ctx, tj, id, seen{why: msg}); err != nil {
			return 0, err
		}
		if recheck, err := c.checkGang(ctx, tj, rt, id, int(n), 0, 0); recheck <= 0 || err != nil {
			return 0, err
		}
		if rt.lags {
			if _, err := c.clearSuspended(ctx, tj, id, child, pods.Items); err != nil {
				return 0, err
			}
		}
		return time.Second, nil
	} else if why := c.rendezvousLost(tj, rt, pods.Items); why != "" && !st.suspended {
		return time.Second, c.restartWhole(ctx, tj, rt, child, why,
			"worker 0 holds torchrun's rendezvous, so the job restarts from its checkpoint rather than lose it")
	} else if why := c.retuneDue(tj, id, n, st); why != "" {
		return time.Second, c.restartWhole(ctx, tj, rt, child, why,
			"its workers read their batch size when they start, so the job restarts from its checkpoint")
	} else if wait := c.unrecorded(rt, id, st); wait > 0 {
		// Resumed before the operator recorded the suspension, the write
		// would meet the operator's status write for it (see lag.go).
		msg := "restarting: waiting for mpi-operator to record the suspension"
		if err := c.showRunning(ctx, tj, id, seen{why: msg}); err != nil {
			return 0, err
		}
		if recheck, err := c.checkGang(ctx, tj, rt, id, int(n), 0, 0); recheck <= 0 || err != nil {
			return 0, err
		}
		return min(wait, time.Second), nil
	} else if st.suspended {
		c.noneLeft(id)
		if err := c.resumeChild(ctx, tj, rt, child, n); err != nil {
			return 0, err
		}
	} else if st.replicas != n {
		if err := c.patchChild(ctx, rt, child, false, n); err != nil {
			return 0, err
		}
	}

	present := make([]bool, n)
	var waiting []*corev1.Pod
	running := 0              // workers running on their node
	leaving := 0              // workers beyond n or being deleted
	var surplus []*corev1.Pod // workers beyond n, not being deleted
	why := map[int]string{}
	for i := range pods.Items {
		p := &pods.Items[i]
		idx, ok := workerIndex(tj.Name, p.Name)
		if !ok {
			continue
		}
		if idx >= int(n) || p.DeletionTimestamp != nil {
			leaving++
			if p.DeletionTimestamp == nil {
				surplus = append(surplus, p)
			}
			continue
		}
		present[idx] = true
		want := c.hostname(placement[idx])
		if gated(p) {
			waiting = append(waiting, p)
			continue
		}
		if on := c.podHost(p); on != "" && on != want {
			// A worker on the wrong node: delete it, the operator recreates
			// it gated, and it is ungated onto its new node.
			if err := c.client.Delete(ctx, p); err != nil && !apierrors.IsNotFound(err) {
				return 0, fmt.Errorf("migrate %s: %w", p.Name, err)
			}
			present[idx] = false
			why[idx] = fmt.Sprintf("worker %d is moving to %s", idx, want)
		} else if p.Status.Phase == corev1.PodRunning && p.Spec.NodeName != "" {
			running++
		} else {
			why[idx] = workerState(idx, p, want, false)
		}
	}
	for idx, ok := range present {
		if !ok && why[idx] == "" {
			why[idx] = workerState(idx, nil, "", false)
		}
	}
	for _, p := range waiting {
		idx, _ := workerIndex(tj.Name, p.Name)
		why[idx] = workerState(idx, p, c.hostname(placement[idx]), slices.Contains(present, false))
	}
	if err := c.showRunning(ctx, tj, id, seen{running: running, why: firstReason(why)}); err != nil {
		return 0, err
	}
	if len(waiting) == 0 && !slices.Contains(present, false) && running == int(n) {
		c.runningAgain(id, api.GPUType(tj.CurrentGPUType()), true)
		switch {
		case !rt.lags:
		case len(surplus) > 0 && child != nil && rt.read(child).replicas == n:
			return c.removeSurplus(ctx, id, surplus)
		case leaving == 0:
			return c.keepHostsCurrent(ctx, tj, id, n)
		}
		return 0, nil
	}
	noPod := 0
	for _, ok := range present {
		if !ok {
			noPod++
		}
	}
	if recheck, err := c.checkGang(ctx, tj, rt, id, int(n)-running, noPod, len(waiting)); recheck <= 0 || err != nil {
		return 0, err
	}
	if noPod > 0 {
		return c.opts.GangTimeout, nil // gang: nothing is ungated before every worker has a pod
	}
	if len(waiting) == 0 { // all ungated, not all running yet
		if again, err := c.released(ctx, pg, false); again > 0 || err != nil {
			return again, err
		}
		return c.opts.GangTimeout, nil
	}
	for _, p := range waiting {
		idx, _ := workerIndex(tj.Name, p.Name)
		if err := c.ungate(ctx, p, c.hostname(placement[idx])); err != nil {
			return 0, err
		}
	}
	c.ungated(id)
	if again, err := c.released(ctx, pg, true); again > 0 || err != nil {
		return again, err
	}
	return c.opts.GangTimeout, nil
}

// showRunning records what a reconciler saw of a job's workers and, when it
// changed, rewrites the job's status so it says it (Starting or Running).
func (c *Controller) showRunning(ctx context.Context, tj *v1alpha1.TrainingJob, id api.JobID, s seen) error {
	if !c.sawWorkers(id, s) {
		return nil
	}
	e := c.engineFor(api.GPUType(tj.CurrentGPUType()))
	// The status is computed on the loop, and written off it: the loop
	// goes on scheduling meanwhile (a later status of the job is never
	// overwritten by this one, see engine.send), and mere progress is
	// written at most every progressEvery (engine.sendProgress).
	return e.update(ctx, e.sendProgress, func(en *scheduler.Engine) (*pending, error) {
		if j, ok := en.Job(id); ok && j.Phase == api.PhaseRunning {
			return e.pendingFor(j, true), nil
		}
		return nil, nil
	})
}

// podHost is the hostname a pod runs on or is bound for, if any.
func (c *Controller) podHost(p *corev1.Pod) string {
	if p.Spec.NodeName != "" {
		return c.hostname(p.Spec.NodeName)
	}
	return p.Spec.NodeSelector[corev1.LabelHostname]
}

// ungate pins a gated worker to its node and lets the scheduler bind it. A
// JSON patch rather than an update: the kubelet side (here kwok) and the
// operator touch the pod too, and the gate list is all Voda changes.
func (c *Controller) ungate(ctx context.Context, p *corev1.Pod, host string) error {
	sel := maps.Clone(p.Spec.NodeSelector)
	if sel == nil {
		sel = map[string]string{}
	}
	sel[corev1.LabelHostname] = host
	gates := slices.DeleteFunc(slices.Clone(p.Spec.SchedulingGates), func(g corev1.PodSchedulingGate) bool {
		return g.Name == v1alpha1.PlacementGate
	})
	ops := []map[string]any{
		{"op": "test", "path": "/metadata/uid", "value": p.UID},
		{"op": "add", "path": "/spec/nodeSelector", "value": sel},
		{"op": "add", "path": "/spec/schedulingGates", "value": gates},
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	if err := c.client.Patch(ctx, p, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		return fmt.Errorf("ungate %s onto %s: %w", p.Name, host, err)
	}
	return nil
}
