package kube

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/scheduler"
)

// nodeInfo is what an engine knows of a node.
type nodeInfo struct {
	gpuType  api.GPUType
	gpus     int
	hostname string
}

func (n nodeInfo) usable() bool { return n.gpuType != "" && n.gpus > 0 }

func (n nodeInfo) node(name string) api.Node { return api.Node{Name: api.NodeName(name), GPUs: n.gpus} }

// nodeInfoOf reads a node: its GPU type from the accelerator label and its
// GPUs from the allocatable resource of that type (nvidia.com/gpu unless acc
// names another; whole cores for cpu). A cordoned or deleted node offers
// nothing.
func nodeInfoOf(n *corev1.Node, acc v1alpha1.Accelerators) nodeInfo {
	info := nodeInfo{hostname: n.Labels[corev1.LabelHostname]}
	if info.hostname == "" {
		info.hostname = n.Name
	}
	// A node that stops being Ready keeps its place: Kubernetes evicts its
	// pods only after a grace period, and a short flap must not preempt
	// jobs. Cordoning a node is how an operator moves jobs off it.
	if n.DeletionTimestamp != nil || n.Spec.Unschedulable {
		return info
	}
	t := n.Labels[v1alpha1.AcceleratorLabel]
	res := acc.Of(t)
	q, ok := n.Status.Allocatable[res]
	if !ok {
		return info
	}
	info.gpuType = api.GPUType(t)
	info.gpus = int(v1alpha1.Units(q, res))
	return info
}

// NodeGPUs is what the scheduler counts of a node: its GPU type and its
// GPUs (the units of its type's resource in acc). A node the scheduler does
// not use (no label, no GPUs, cordoned, being deleted) has none.
func NodeGPUs(n *corev1.Node, acc v1alpha1.Accelerators) (api.GPUType, int) {
	info := nodeInfoOf(n, acc)
	if !info.usable() {
		return "", 0
	}
	return info.gpuType, info.gpus
}

// nodeInfo is what the engines see of a node: nodeInfoOf, less the GPUs
// other pods hold there.
func (c *Controller) nodeInfo(ctx context.Context, n *corev1.Node) (nodeInfo, error) {
	info := nodeInfoOf(n, c.opts.Accelerators)
	if info.gpus == 0 {
		return info, nil
	}
	taken, err := c.foreignGPUs(ctx, n.Name, c.opts.Accelerators.Of(string(info.gpuType)))
	if err != nil {
		return info, err
	}
	info.gpus = max(info.gpus-taken, 0)
	return info, nil
}

// reconcileNode tells the engines about a node that joined, left or
// changed GPU type or capacity.
func (c *Controller) reconcileNode(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if !c.waitReady(ctx) {
		return reconcile.Result{}, ctx.Err()
	}
	var n corev1.Node
	info := nodeInfo{}
	switch err := c.client.Get(ctx, req.NamespacedName, &n); {
	case apierrors.IsNotFound(err):
		if err := c.releaseDeletedNode(ctx, req.Name); err != nil {
			return reconcile.Result{}, err
		}
	case err != nil:
		return reconcile.Result{}, err
	default:
		if info, err = c.nodeInfo(ctx, &n); err != nil {
			return reconcile.Result{}, err
		}
	}
	if !c.handles(info.gpuType) {
		info.gpuType, info.gpus = "", 0
	}
	c.mu.Lock()
	old := c.nodes[req.Name]
	c.nodes[req.Name] = info
	c.mu.Unlock()
	if old.gpuType == info.gpuType && old.gpus == info.gpus {
		// Its taints or other resources may have changed.
		return reconcile.Result{}, c.recheckHeld(ctx)
	}
	if old.usable() && (old.gpuType != info.gpuType || !info.usable()) {
		if err := c.engineFor(old.gpuType).loop.Send(ctx, scheduler.NodeRemoved{Name: api.NodeName(req.Name)}); err != nil {
			return reconcile.Result{}, err
		}
		c.log.Info("node left", "node", req.Name, "gpuType", old.gpuType)
	}
	if info.usable() {
		if err := c.engineFor(info.gpuType).loop.Send(ctx, scheduler.NodeSet{Node: info.node(req.Name)}); err != nil {
			return reconcile.Result{}, err
		}
		c.log.Info("node joined", "node", req.Name, "gpuType", info.gpuType, "gpus", info.gpus)
	}
	return reconcile.Result{}, c.recheckHeld(ctx)
}

// releaseDeletedNode removes, without waiting for a kubelet, the pods of
// Voda's jobs still bound to a node whose Node object was deleted. No
// kubelet will ever confirm their end, so they would stay Terminating
// until the pod garbage collector's quarantine runs out (about a minute),
// and their names, which the operators reuse, would keep the jobs' new
// workers from being created. Voda has already counted the node's GPUs
// gone and planned the jobs elsewhere; this is the decision the garbage
// collector makes for pods on deleted nodes, made when Voda sees it.
func (c *Controller) releaseDeletedNode(ctx context.Context, node string) error {
	var pods corev1.PodList
	if err := c.client.List(ctx, &pods, client.HasLabels{v1alpha1.JobLabel}); err != nil {
		return err
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName != node {
			continue
		}
		if err := c.client.Delete(ctx, p, client.GracePeriodSeconds(0), client.Preconditions{UID: &p.UID}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("remove pod %s/%s of deleted node %s: %w", p.Namespace, p.Name, node, err)
		}
		c.log.Info("removed a pod of a deleted node", "pod", p.Namespace+"/"+p.Name, "node", node)
	}
	return nil
}

// hostname returns the kubernetes.io/hostname of a node.
func (c *Controller) hostname(node string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h := c.nodes[node].hostname; h != "" {
		return h
	}
	return node
}
