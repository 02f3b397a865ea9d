package v1alpha1

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Accelerators names, per GPU type, the node resource its scheduler hands
// out: an extended resource such as amd.com/gpu or a MIG profile such as
// nvidia.com/mig-1g.10gb, or cpu for a type of CPU nodes (whole cores). A
// type it does not name schedules GPUResource (nvidia.com/gpu).
type Accelerators map[string]corev1.ResourceName

// Of returns the resource of a GPU type.
func (a Accelerators) Of(gpuType string) corev1.ResourceName {
	if r, ok := a[gpuType]; ok {
		return r
	}
	return GPUResource
}

// Resources returns every resource the types use, GPUResource included,
// sorted.
func (a Accelerators) Resources() []corev1.ResourceName {
	out := []corev1.ResourceName{GPUResource}
	for _, r := range a {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out
}

// ParseAccelerators reads TYPE=RESOURCE pairs (the controller's --accelerator
// flag, the chart's scheduler.accelerators). Every problem is reported.
func ParseAccelerators(pairs []string) (Accelerators, error) {
	a := Accelerators{}
	var errs []string
	for _, p := range pairs {
		t, r, ok := strings.Cut(strings.TrimSpace(p), "=")
		t, r = strings.TrimSpace(t), strings.TrimSpace(r)
		switch {
		case !ok || t == "" || r == "":
			errs = append(errs, fmt.Sprintf("%q: want GPU_TYPE=RESOURCE, e.g. amd-mi300x=amd.com/gpu", p))
		case len(validation.IsValidLabelValue(t)) > 0:
			errs = append(errs, fmt.Sprintf("%q: %q is not a valid GPU type (a label value)", p, t))
		case a[t] != "":
			errs = append(errs, fmt.Sprintf("%q: GPU type %s is named twice", p, t))
		default:
			if err := validResource(corev1.ResourceName(r)); err != nil {
				errs = append(errs, fmt.Sprintf("%q: %v", p, err))
				continue
			}
			a[t] = corev1.ResourceName(r)
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("accelerators: %s", strings.Join(errs, "; "))
	}
	return a, nil
}

// validResource accepts cpu and extended resources (a domain-prefixed name
// outside kubernetes.io), the resources a node counts in whole units.
func validResource(r corev1.ResourceName) error {
	if r == corev1.ResourceCPU {
		return nil
	}
	s := string(r)
	domain, _, ok := strings.Cut(s, "/")
	if !ok || len(validation.IsQualifiedName(s)) > 0 {
		return fmt.Errorf("%q is not a resource Voda can schedule: want cpu or an extended resource such as nvidia.com/gpu, amd.com/gpu or nvidia.com/mig-1g.10gb", s)
	}
	if domain == "kubernetes.io" || strings.HasSuffix(domain, ".kubernetes.io") {
		return fmt.Errorf("%q is a native resource: want cpu or an extended resource", s)
	}
	return nil
}

// Units is how many whole units of a resource a quantity holds: cores for
// cpu (rounded down: a node's 3.5 allocatable cores hold 3 one-core
// workers), the count otherwise.
func Units(q resource.Quantity, r corev1.ResourceName) int64 {
	if r == corev1.ResourceCPU {
		return q.MilliValue() / 1000
	}
	return q.Value()
}
