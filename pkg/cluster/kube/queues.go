package kube

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/vodascheduler/voda/internal/parallel"
	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/quota"
	"github.com/vodascheduler/voda/pkg/scheduler"
)

// queueView is what the controller last read of the queue objects.
type queueView struct {
	// cqs are the valid ClusterQueues by name; invalid says what is wrong
	// with the others.
	cqs     map[string]*v1alpha1.ClusterQueue
	invalid map[string]string
}

// queueOf is where a job's GPUs count: a ClusterQueue, or why none.
type queueOf struct{ clusterQueue, problem string }

// queuesKey is the one request of the queue reconciler: any change to a
// queue object is looked at as a whole.
var queuesKey = reconcile.Request{NamespacedName: types.NamespacedName{Name: "queues"}}

// readQueues lists the ClusterQueues; with the CRDs not installed there
// are none.
func (c *Controller) readQueues(ctx context.Context) (queueView, error) {
	v := queueView{cqs: map[string]*v1alpha1.ClusterQueue{}, invalid: map[string]string{}}
	if !c.queuesInstalled {
		return v, nil
	}
	var list v1alpha1.ClusterQueueList
	if err := c.client.List(ctx, &list); err != nil {
		return v, fmt.Errorf("list cluster queues: %w", err)
	}
	for i := range list.Items {
		cq := &list.Items[i]
		if cq.DeletionTimestamp != nil {
			continue
		}
		if err := cq.Validate(); err != nil {
			v.invalid[cq.Name] = err.Error()
			continue
		}
		v.cqs[cq.Name] = cq
	}
	return v, nil
}

// quotasFor is the engine of GPU type t's view of the queues.
func (v queueView) quotasFor(t api.GPUType) []quota.Queue {
	out := make([]quota.Queue, 0, len(v.cqs))
	for _, name := range slices.Sorted(maps.Keys(v.cqs)) {
		out = append(out, v.cqs[name].QuotaFor(string(t)))
	}
	return out
}

// hasQueues reports whether the cluster shares its GPUs through queues.
func (v queueView) hasQueues() bool { return len(v.cqs)+len(v.invalid) > 0 }

// resolveQueue finds the ClusterQueue a job's GPUs count against: its
// spec.queueName (or its namespace's LocalQueue "default"), that
// LocalQueue's ClusterQueue, which must admit the job's namespace. On a
// cluster without queues a job that names none has none.
func (c *Controller) resolveQueue(ctx context.Context, tj *v1alpha1.TrainingJob, v queueView) (queueOf, error) {
	name := tj.Spec.QueueName
	if name == "" {
		name = v1alpha1.DefaultLocalQueue
	}
	var lq v1alpha1.LocalQueue
	err := errors.New("the queue CRDs are not installed")
	if c.queuesInstalled {
		err = c.client.Get(ctx, types.NamespacedName{Namespace: tj.Namespace, Name: name}, &lq)
	}
	switch {
	case err != nil && !apierrors.IsNotFound(err) && c.queuesInstalled:
		return queueOf{}, err
	case err != nil && tj.Spec.QueueName == "" && !v.hasQueues():
		return queueOf{}, nil
	case err != nil && tj.Spec.QueueName == "":
		return queueOf{problem: fmt.Sprintf("the cluster shares its GPUs through queues and namespace %s has no LocalQueue %q: set spec.queueName to one of its LocalQueues (voda get queues)",
			tj.Namespace, v1alpha1.DefaultLocalQueue)}, nil
	case err != nil:
		return queueOf{problem: fmt.Sprintf("LocalQueue %s does not exist in namespace %s: create it, or set spec.queueName to one that exists (voda get queues)", name, tj.Namespace)}, nil
	}
	cq := lq.Spec.ClusterQueue
	if why, bad := v.invalid[cq]; bad {
		return queueOf{clusterQueue: cq, problem: why}, nil
	}
	obj, ok := v.cqs[cq]
	if !ok {
		return queueOf{clusterQueue: cq, problem: fmt.Sprintf("LocalQueue %s points at ClusterQueue %s, which does not exist", name, cq)}, nil
	}
	if sel := obj.Spec.NamespaceSelector; sel != nil {
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			return queueOf{clusterQueue: cq, problem: fmt.Sprintf("ClusterQueue %s has an invalid namespaceSelector: %v", cq, err)}, nil
		}
		var ns corev1.Namespace
		if err := c.client.Get(ctx, types.NamespacedName{Name: tj.Namespace}, &ns); err != nil {
			return queueOf{}, fmt.Errorf("namespace %s: %w", tj.Namespace, err)
		}
		if !s.Matches(labels.Set(ns.Labels)) {
			return queueOf{clusterQueue: cq, problem: fmt.Sprintf("ClusterQueue %s does not admit namespace %s (its spec.namespaceSelector)", cq, tj.Namespace)}, nil
		}
	}
	return queueOf{clusterQueue: cq}, nil
}

// currentQueues is the queue view the engines were last given.
func (c *Controller) currentQueues() queueView {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.queues
}

// setJobQueue tells a job's engine where its GPUs count, when that
// changed; the caller made sure the engine knows the job.
func (c *Controller) setJobQueue(ctx context.Context, e *engine, id api.JobID, q queueOf) error {
	c.mu.Lock()
	old, ok := c.jobQueues[id]
	c.mu.Unlock()
	if ok && old == q {
		return nil
	}
	err := e.loop.Do(ctx, func(en *scheduler.Engine) error {
		return en.Step(scheduler.JobQueue{ID: id, ClusterQueue: q.clusterQueue, Problem: q.problem})
	})
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.jobQueues[id] = q
	c.mu.Unlock()
	return nil
}

// reconcileQueues gives every engine the queues as they now are, moves
// every job to the queue it now resolves to, and writes the queues'
// status; it runs again every sync period, for the status.
func (c *Controller) reconcileQueues(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	if !c.waitReady(ctx) {
		return reconcile.Result{}, ctx.Err()
	}
	v, err := c.readQueues(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	c.mu.Lock()
	c.queues = v
	engines := slices.Collect(maps.Values(c.engines))
	c.mu.Unlock()
	for _, e := range engines {
		qs := v.quotasFor(e.gpuType)
		if err := e.loop.Do(ctx, func(en *scheduler.Engine) error { return en.Step(scheduler.SetQueues{Queues: qs}) }); err != nil {
			return reconcile.Result{}, err
		}
	}
	var jobs v1alpha1.TrainingJobList
	if err := c.client.List(ctx, &jobs); err != nil {
		return reconcile.Result{}, err
	}
	for i := range jobs.Items {
		tj := &jobs.Items[i]
		id := jobID(client.ObjectKeyFromObject(tj))
		c.mu.Lock()
		gt, ok := c.jobTypes[id]
		c.mu.Unlock()
		if !ok || tj.Status.Phase.Final() || !c.engineFor(gt).knows(id) {
			continue
		}
		q, err := c.resolveQueue(ctx, tj, v)
		if err != nil {
			return reconcile.Result{}, err
		}
		if err := c.setJobQueue(ctx, c.engineFor(gt), id, q); err != nil {
			return reconcile.Result{}, err
		}
	}
	if err := c.writeQueueStatus(ctx, v, jobs.Items); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: c.opts.SyncPeriod}, nil
}

// Queues describes every ClusterQueue's use of every GPU type, for the
// status, the API and the metrics: per queue, per GPU type, sorted.
func (c *Controller) Queues(ctx context.Context) (map[string][]TypedQueueStatus, error) {
	c.mu.Lock()
	engines := slices.Collect(maps.Values(c.engines))
	c.mu.Unlock()
	// All engines at once (see Schedulers), each into its own list.
	per := make([][]TypedQueueStatus, len(engines))
	errs := make([]error, len(engines))
	parallel.For(len(engines), len(engines), func(i int) {
		e := engines[i]
		errs[i] = e.loop.Do(ctx, func(en *scheduler.Engine) error {
			for _, q := range en.Queues() {
				per[i] = append(per[i], TypedQueueStatus{GPUType: e.gpuType, QueueStatus: q, GPUs: en.GPUs()})
			}
			return nil
		})
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	out := map[string][]TypedQueueStatus{}
	for _, qs := range per {
		for _, q := range qs {
			out[q.Name] = append(out[q.Name], q)
		}
	}
	for _, qs := range out {
		slices.SortFunc(qs, func(a, b TypedQueueStatus) int { return cmp.Compare(a.GPUType, b.GPUType) })
	}
	return out, nil
}

// TypedQueueStatus is a queue's use of one GPU type, which has GPUs.
type TypedQueueStatus struct {
	GPUType api.GPUType
	GPUs    int
	scheduler.QueueStatus
}

// writeQueueStatus writes every ClusterQueue's and LocalQueue's status
// where it changed.
func (c *Controller) writeQueueStatus(ctx context.Context, v queueView, jobs []v1alpha1.TrainingJob) error {
	if !c.queuesInstalled {
		return nil
	}
	usage, err := c.Queues(ctx)
	if err != nil {
		return err
	}
	var cqs v1alpha1.ClusterQueueList
	if err := c.client.List(ctx, &cqs); err != nil {
		return err
	}
	for i := range cqs.Items {
		cq := &cqs.Items[i]
		s := clusterQueueStatus(cq, usage[cq.Name], v.invalid[cq.Name])
		if err := c.patchQueueStatus(ctx, cq, cq.Status, s); err != nil {
			return err
		}
	}
	var lqs v1alpha1.LocalQueueList
	if err := c.client.List(ctx, &lqs); err != nil {
		return err
	}
	for i := range lqs.Items {
		lq := &lqs.Items[i]
		s := v1alpha1.LocalQueueStatus{}
		if _, ok := v.cqs[lq.Spec.ClusterQueue]; !ok {
			s.Message = fmt.Sprintf("ClusterQueue %s does not exist: the jobs of this queue wait", lq.Spec.ClusterQueue)
			if why, bad := v.invalid[lq.Spec.ClusterQueue]; bad {
				s.Message = why
			}
		}
		for j := range jobs {
			tj := &jobs[j]
			name := tj.Spec.QueueName
			if name == "" {
				name = v1alpha1.DefaultLocalQueue
			}
			if tj.Namespace != lq.Namespace || name != lq.Name {
				continue
			}
			switch tj.Status.Phase {
			case v1alpha1.PhaseRunning, v1alpha1.PhaseStarting:
				s.RunningJobs++
			case v1alpha1.PhaseWaiting, v1alpha1.PhaseSubmitted, "":
				s.WaitingJobs++
			}
		}
		if err := c.patchQueueStatus(ctx, lq, lq.Status, s); err != nil {
			return err
		}
	}
	return nil
}

// clusterQueueStatus is a ClusterQueue's status from its engines' view.
func clusterQueueStatus(cq *v1alpha1.ClusterQueue, usage []TypedQueueStatus, invalid string) v1alpha1.ClusterQueueStatus {
	s := v1alpha1.ClusterQueueStatus{ObservedGeneration: cq.Generation}
	if invalid != "" {
		s.Warnings = append(s.Warnings, "ignored: "+invalid)
	}
	seen := map[string]bool{}
	for _, u := range usage {
		seen[string(u.GPUType)] = true
		if u.Nominal == 0 && u.Used == 0 && u.Pending == 0 && u.Lent == 0 {
			continue // a type the queue neither has nor uses
		}
		t := v1alpha1.QueueUsage{GPUType: string(u.GPUType), Nominal: int32(u.Nominal), Used: int32(u.QueueStatus.Used),
			Borrowed: int32(max(u.QueueStatus.Used-u.Nominal, 0)), Lent: int32(u.Lent), Pending: int32(u.Pending), Budget: int32(u.Budget)}
		if u.WeightedShare > 0 {
			t.WeightedShare = strconv.FormatFloat(u.WeightedShare, 'f', 3, 64)
		}
		s.GPUTypes = append(s.GPUTypes, t)
		s.Nominal += t.Nominal
		s.Used += t.Used
		s.Borrowed += t.Borrowed
		s.Lent += t.Lent
		s.Pending += t.Pending
		s.RunningJobs += int32(u.Running)
		s.WaitingJobs += int32(u.Waiting)
	}
	for _, q := range cq.Spec.Quotas {
		if !seen[q.GPUType] {
			s.Warnings = append(s.Warnings, fmt.Sprintf("GPU type %s has no nodes yet (none is labelled %s=%s): its quota applies once some join",
				q.GPUType, v1alpha1.AcceleratorLabel, q.GPUType))
			s.Nominal += q.NominalQuota
		}
	}
	return s
}

// patchQueueStatus writes a queue object's status when it changed, with
// the fields gone to zero nulled (a merge patch would keep them).
func (c *Controller) patchQueueStatus(ctx context.Context, obj client.Object, old, s any) error {
	if apiequality.Semantic.DeepEqual(old, s) {
		return nil
	}
	fields := func(v any) (map[string]any, error) {
		m := map[string]any{}
		data, err := json.Marshal(v)
		if err == nil {
			err = json.Unmarshal(data, &m)
		}
		return m, err
	}
	now, err := fields(s)
	if err != nil {
		return err
	}
	before, err := fields(old)
	if err != nil {
		return err
	}
	for k := range before {
		if _, ok := now[k]; !ok {
			now[k] = nil
		}
	}
	data, err := json.Marshal(map[string]any{"status": now})
	if err != nil {
		return err
	}
	err = c.client.Status().Patch(ctx, obj, client.RawPatch(types.MergePatchType, data))
	return client.IgnoreNotFound(err)
}

// queueCRDsInstalled reports whether the API server serves the queue kinds.
func queueCRDsInstalled(mapper meta.RESTMapper) bool {
	for _, kind := range []string{"ClusterQueue", "LocalQueue"} {
		if _, err := mapper.RESTMapping(v1alpha1.GroupVersion.WithKind(kind).GroupKind(), v1alpha1.GroupVersion.Version); err != nil {
			return false
		}
	}
	return true
}
