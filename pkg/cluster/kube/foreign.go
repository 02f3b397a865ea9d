package kube

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
)

// Pods that are not Voda's may hold GPUs of Voda's nodes too (a notebook,
// an inference server, another scheduler's job). Voda counts a node's GPUs
// as its allocatable ones minus those held by such pods, so that it never
// plans a gang onto GPUs somebody else has: the gang would stay partly
// pending. A second cache watches them, in every namespace, keeping only
// what the count needs.

// nodeNameField indexes foreign pods by the node they are bound to.
const nodeNameField = "spec.nodeName"

// foreignSelectors select the pods that count: without Voda's job label,
// not finished.
func foreignSelectors() (labels.Selector, fields.Selector, error) {
	notJob, err := labels.NewRequirement(v1alpha1.JobLabel, selection.DoesNotExist, nil)
	if err != nil {
		return nil, nil, err
	}
	return labels.NewSelector().Add(*notJob), fields.AndSelectors(
		fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
		fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed))), nil
}

// newForeignCache returns the cache of pods without Voda's job label that
// are not finished, indexed by node.
func newForeignCache(ctx context.Context, cfg *rest.Config, opts cache.Options, resources []corev1.ResourceName) (cache.Cache, error) {
	lsel, fsel, err := foreignSelectors()
	if err != nil {
		return nil, err
	}
	opts.DefaultNamespaces = nil
	opts.ByObject = map[client.Object]cache.ByObject{
		&corev1.Pod{}: {Label: lsel, Field: fsel, Transform: slimPod(resources)},
	}
	c, err := cache.New(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("cache of other pods: %w", err)
	}
	err = c.IndexField(ctx, &corev1.Pod{}, nodeNameField, func(o client.Object) []string {
		if n := o.(*corev1.Pod).Spec.NodeName; n != "" {
			return []string{n}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// slimPod keeps of a pod what the counts of the given resources need: its
// node, phase and one container asking for what the pod takes of each.
func slimPod(resources []corev1.ResourceName) func(o any) (any, error) {
	return func(o any) (any, error) {
		p, ok := o.(*corev1.Pod)
		if !ok {
			return o, nil
		}
		slim := &corev1.Pod{
			ObjectMeta: p.ObjectMeta,
			Spec:       corev1.PodSpec{NodeName: p.Spec.NodeName},
			Status:     corev1.PodStatus{Phase: p.Status.Phase},
		}
		slim.ManagedFields, slim.Annotations = nil, nil
		requests := corev1.ResourceList{}
		for _, r := range resources {
			if n, _ := v1alpha1.PodGPUs(&p.Spec, r); n > 0 {
				requests[r] = *resourceQuantity(n)
			}
		}
		if len(requests) > 0 {
			slim.Spec.Containers = []corev1.Container{{Name: "held", Resources: corev1.ResourceRequirements{Requests: requests}}}
		}
		return slim, nil
	}
}

// foreignGPUs is the units of res other pods hold on a node.
func (c *Controller) foreignGPUs(ctx context.Context, node string, res corev1.ResourceName) (int, error) {
	if c.foreign == nil {
		return 0, nil
	}
	var pods corev1.PodList
	if err := c.foreign.List(ctx, &pods, client.MatchingFields{nodeNameField: node}); err != nil {
		return 0, err
	}
	var n int64
	for i := range pods.Items {
		held, _ := v1alpha1.PodGPUs(&pods.Items[i].Spec, res)
		n += held
	}
	return int(n), nil
}

// ForeignGPUsByNode lists, straight from r, the units of its resource (resOf
// the node's name) that pods which are not Voda's hold on each node — the
// same pods the controller leaves out of its plans. Nodes without such
// units are left out.
func ForeignGPUsByNode(ctx context.Context, r client.Reader, resOf func(node string) corev1.ResourceName) (map[string]int, error) {
	lsel, fsel, err := foreignSelectors()
	if err != nil {
		return nil, err
	}
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.MatchingLabelsSelector{Selector: lsel}, client.MatchingFieldsSelector{Selector: fsel}); err != nil {
		return nil, err
	}
	return gpusByNode(pods.Items, resOf), nil
}

// OtherGPUsByNode is ForeignGPUsByNode read from the controller's cache of
// those pods, without a request to the API server; with no such cache it
// counts none, as the controller does.
func (c *Controller) OtherGPUsByNode(ctx context.Context, resOf func(node string) corev1.ResourceName) (map[string]int, error) {
	if c.foreign == nil {
		return map[string]int{}, nil
	}
	var pods corev1.PodList
	if err := c.foreign.List(ctx, &pods, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	return gpusByNode(pods.Items, resOf), nil
}

// gpusByNode sums what pods bound to a node hold of its resource.
func gpusByNode(pods []corev1.Pod, resOf func(node string) corev1.ResourceName) map[string]int {
	out := map[string]int{}
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName == "" {
			continue
		}
		if n, _ := v1alpha1.PodGPUs(&p.Spec, resOf(p.Spec.NodeName)); n > 0 {
			out[p.Spec.NodeName] += int(n)
		}
	}
	return out
}

// foreignPodSource wakes the node reconciler when another pod arrives on,
// changes on or leaves a node.
func (c *Controller) foreignPodSource() source.Source {
	return source.Kind(c.foreign, &corev1.Pod{}, handler.TypedEnqueueRequestsFromMapFunc(
		func(_ context.Context, p *corev1.Pod) []reconcile.Request {
			if p.Spec.NodeName == "" {
				return nil
			}
			return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: p.Spec.NodeName}}}
		}))
}

func resourceQuantity(n int64) *resource.Quantity { return resource.NewQuantity(n, resource.DecimalSI) }
