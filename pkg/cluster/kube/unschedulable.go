package kube

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/scheduler"
)

// A job whose workers no node of its GPU type could ever run, whatever GPUs
// it is given — a resource no node offers, or a taint on every node that
// its workers do not tolerate — is held out of scheduling (the engine's
// JobUnschedulable): a running one gives its GPUs back at the next round
// rather than after the gang timeout, and none is started again until its
// spec changes or a node appears that could run it. Whether a node could is
// decided from the node's allocatable resources and taints, not from what
// other pods use there: what no allocation of GPUs can fix.

// ignoredTaintPrefixes are the taints Kubernetes itself puts on nodes for
// passing conditions (not ready, unreachable, under pressure, not yet
// initialised): they come and go, and say nothing about what a node can
// ever run.
var ignoredTaintPrefixes = []string{"node.kubernetes.io/", "node.cloudprovider.kubernetes.io/"}

// workerRequests is what one worker asks of a node: its containers'
// requests (or limits, where a resource has no request), summed, or its
// largest init container's where that is more, and the units of its GPU
// type's resource Voda sets on every worker (none for res "": a launcher).
func workerRequests(spec *corev1.PodSpec, res corev1.ResourceName, units int) corev1.ResourceList {
	of := func(c *corev1.Container) corev1.ResourceList {
		out := corev1.ResourceList{}
		for r, q := range c.Resources.Limits {
			out[r] = q
		}
		for r, q := range c.Resources.Requests {
			out[r] = q
		}
		return out
	}
	sum := corev1.ResourceList{}
	for i := range spec.Containers {
		for r, q := range of(&spec.Containers[i]) {
			v := sum[r]
			v.Add(q)
			sum[r] = v
		}
	}
	for i := range spec.InitContainers {
		for r, q := range of(&spec.InitContainers[i]) {
			if v, ok := sum[r]; !ok || q.Cmp(v) > 0 {
				sum[r] = q
			}
		}
	}
	switch res {
	case "":
	case corev1.ResourceCPU:
		sum[res] = *resource.NewMilliQuantity(int64(units)*1000, resource.DecimalSI)
	default:
		sum[res] = *resource.NewQuantity(int64(units), resource.DecimalSI)
	}
	return sum
}

// cannotRun says why a node could never run a pod of the spec that asks
// for want, or "" if it could: a resource it does not offer enough of, a
// label its node selector wants, or a taint it does not tolerate.
func cannotRun(n *corev1.Node, want corev1.ResourceList, spec *corev1.PodSpec) string {
	for _, k := range slices.Sorted(maps.Keys(spec.NodeSelector)) {
		if v, ok := n.Labels[k]; !ok || v != spec.NodeSelector[k] {
			return fmt.Sprintf("lack the label %s=%s", k, spec.NodeSelector[k])
		}
	}
	tols := spec.Tolerations
	for _, r := range slices.Sorted(maps.Keys(want)) {
		q := want[r]
		if q.IsZero() {
			continue
		}
		have, ok := n.Status.Allocatable[r]
		switch {
		case !ok || have.IsZero():
			return fmt.Sprintf("offer no %s", r)
		case have.Cmp(q) < 0:
			return fmt.Sprintf("offer less %s than a worker asks for (%s)", r, q.String())
		}
	}
	for i := range n.Spec.Taints {
		t := &n.Spec.Taints[i]
		if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		if slices.ContainsFunc(ignoredTaintPrefixes, func(p string) bool { return strings.HasPrefix(t.Key, p) }) {
			continue
		}
		if !slices.ContainsFunc(tols, func(tol corev1.Toleration) bool { return tol.ToleratesTaint(t) }) {
			return fmt.Sprintf("have taint %s, which the workers do not tolerate", t.ToString())
		}
	}
	return ""
}

// unschedulableReason says why no node of a job's GPU type could run its
// workers, or "" if one could, or if the type has no node Voda schedules
// (the engine says that itself).
func (c *Controller) unschedulableReason(ctx context.Context, tj *v1alpha1.TrainingJob) (string, error) {
	gt := tj.CurrentGPUType()
	worker := tj.Spec.Template.Worker()
	if gt == "" || worker == nil {
		return "", nil
	}
	units, err := c.workerUnits(tj)
	if err != nil {
		return "", nil // refused elsewhere
	}
	// Read from the cache without copies, and never changed: every
	// reconcile of every job reads them.
	var nodes corev1.NodeList
	if err := c.client.List(ctx, &nodes, client.MatchingLabels{v1alpha1.AcceleratorLabel: gt}, client.UnsafeDisableDeepCopy); err != nil {
		return "", err
	}
	want := workerRequests(&worker.Spec, c.resourceOf(tj), units)
	why := map[string]int{}
	usable := 0
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if !nodeInfoOf(n, c.opts.Accelerators).usable() {
			continue
		}
		usable++
		r := cannotRun(n, want, &worker.Spec)
		if r == "" {
			usable = -1
			break
		}
		why[r]++
	}
	switch {
	case usable < 0:
		return c.launcherUnschedulable(ctx, tj)
	case usable == 0:
		return "", nil
	}
	return fmt.Sprintf("no node of GPU type %s can run a worker: %s", gt, summary(why)), nil
}

// launcherUnschedulable says why no node of the cluster could run an
// MPIJob's launcher, or "": its workers would hold their GPUs while the
// job waits for a launcher that never starts.
func (c *Controller) launcherUnschedulable(ctx context.Context, tj *v1alpha1.TrainingJob) (string, error) {
	m := tj.Spec.Template.MPIJob
	if m == nil {
		return "", nil
	}
	var nodes corev1.NodeList
	if err := c.client.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return "", err
	}
	want := workerRequests(&m.Launcher.Spec, "", 0)
	why := map[string]int{}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if n.DeletionTimestamp != nil || n.Spec.Unschedulable {
			continue
		}
		r := cannotRun(n, want, &m.Launcher.Spec)
		if r == "" {
			return "", nil
		}
		why[r]++
	}
	if len(why) == 0 {
		return "", nil // no node at all: nothing runs, and the engine says so
	}
	return "no node can run the launcher: " + summary(why), nil
}

// summary counts the nodes by why they cannot run a pod, most common
// reason first, at most three reasons.
func summary(why map[string]int) string {
	reasons := slices.SortedFunc(maps.Keys(why), func(a, b string) int {
		if c := cmp.Compare(why[b], why[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	var parts []string
	for _, r := range reasons[:min(len(reasons), 3)] {
		if why[r] == 1 {
			r = strings.NewReplacer("offer ", "offers ", "have ", "has ", "lack ", "lacks ").Replace(r)
			parts = append(parts, "1 node "+r)
		} else {
			parts = append(parts, fmt.Sprintf("%d nodes %s", why[r], r))
		}
	}
	if len(reasons) > 3 {
		parts = append(parts, "…")
	}
	return strings.Join(parts, "; ")
}

// checkSchedulable holds a job its type's nodes cannot run, or lets it go
// once they can, telling its engine when that changed.
func (c *Controller) checkSchedulable(ctx context.Context, tj *v1alpha1.TrainingJob) error {
	why, err := c.unschedulableReason(ctx, tj)
	if err != nil {
		return err
	}
	return c.setSchedulable(ctx, tj, why)
}

// setSchedulable is checkSchedulable with the reason found (empty: the
// job can run).
func (c *Controller) setSchedulable(ctx context.Context, tj *v1alpha1.TrainingJob, why string) error {
	id := jobID(client.ObjectKeyFromObject(tj))
	c.heldMu.Lock()
	defer c.heldMu.Unlock()
	if why == c.held[id] {
		return nil
	}
	e := c.engineFor(api.GPUType(tj.CurrentGPUType()))
	err := e.loop.Do(ctx, func(en *scheduler.Engine) error {
		if _, ok := en.Job(id); !ok {
			return nil
		}
		if err := en.Step(scheduler.JobUnschedulable{ID: id, Reason: why}); err != nil {
			return err
		}
		j, _ := en.Job(id)
		return e.persist(ctx, j, true)
	})
	if err != nil {
		return err
	}
	if why == "" {
		delete(c.held, id)
	} else {
		c.held[id] = why
	}
	if why != "" {
		c.event(id, corev1.EventTypeWarning, "Unschedulable", why+"; it waits until its spec changes or such a node appears")
		c.log.Info("job unschedulable", "job", id, "reason", why)
	} else {
		c.event(id, corev1.EventTypeNormal, "Schedulable", "a node of its GPU type can run its workers again")
	}
	return nil
}

// recheckHeld checks again, after a node changed, every job held for
// want of a node that could run it.
func (c *Controller) recheckHeld(ctx context.Context) error {
	c.heldMu.Lock()
	ids := slices.Collect(maps.Keys(c.held))
	c.heldMu.Unlock()
	slices.Sort(ids)
	for _, id := range ids {
		var tj v1alpha1.TrainingJob
		if err := c.client.Get(ctx, jobKey(id), &tj); err != nil {
			if client.IgnoreNotFound(err) == nil {
				continue // deleted: its reconciler forgets it
			}
			return err
		}
		if err := c.checkSchedulable(ctx, &tj); err != nil {
			return err
		}
	}
	return nil
}
