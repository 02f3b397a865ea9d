package v1alpha1

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// vendorDomains are the resource domains of accelerator vendors' device
// plugins (NVIDIA's GPUs and MIG profiles, AMD, Intel's GPUs and Gaudi,
// AWS Neuron, Google TPUs, and others). A pod that asks for one of them
// runs only on a node whose device plugin offers it.
var vendorDomains = []string{
	"nvidia.com", "amd.com", "gpu.intel.com", "habana.ai", "google.com", "cloud-tpus.google.com",
	"xilinx.com", "qualcomm.com", "tenstorrent.com", "furiosa.ai", "rebellions.ai", "huawei.com",
	"cambricon.com", "iluvatar.ai", "metax-tech.com", "hygon.com", "mthreads.com", "enflame.com", "sophgo.com",
}

// IsAccelerator reports whether a resource is an accelerator: one of the
// configured accelerators (Accelerators.Resources), or a resource of an
// accelerator vendor's device plugin (AWS's Neuron ones, not AWS's other
// resources). cpu and the other native resources never are.
func IsAccelerator(r corev1.ResourceName, configured []corev1.ResourceName) bool {
	s := string(r)
	domain, name, ok := strings.Cut(s, "/")
	if !ok || domain == "kubernetes.io" || strings.HasSuffix(domain, ".kubernetes.io") {
		return false
	}
	if slices.Contains(configured, r) {
		return true
	}
	if domain == "aws.amazon.com" {
		return strings.HasPrefix(name, "neuron")
	}
	return slices.Contains(vendorDomains, domain)
}

// AcceleratorConflicts refuses a job whose pod templates ask for an
// accelerator other than res, the one its GPU type schedules (and that
// Voda sets on each worker itself): another configured type's resource
// (configured, from Accelerators.Resources) or any accelerator vendor's.
// No node of the job's type offers it, so its workers would stay Pending
// on the GPUs Voda gave them. nvidia.com/gpu, when res is another
// resource, is WorkerAccelerators' and TemplateConflicts' to refuse. Each
// problem names its field.
func (s *TrainingJobSpec) AcceleratorConflicts(res corev1.ResourceName, configured []corev1.ResourceName) error {
	var errs []error
	check := func(field string, spec *corev1.PodSpec) {
		for kind, cs := range map[string][]corev1.Container{"initContainers": spec.InitContainers, "containers": spec.Containers} {
			for i := range cs {
				for list, rl := range map[string]corev1.ResourceList{"requests": cs[i].Resources.Requests, "limits": cs[i].Resources.Limits} {
					for r := range rl {
						if r == res || r == GPUResource || !IsAccelerator(r, configured) {
							continue
						}
						errs = append(errs, fmt.Errorf("%s.spec.%s[%d].resources.%s[%s]: %s is another GPU type's or vendor's accelerator; the job's GPU type schedules %s, which Voda sets on each worker itself, and no node of it offers %s: remove it",
							field, kind, i, list, r, r, res, r))
					}
				}
			}
		}
	}
	if field, worker := s.Template.workerTemplate(); worker != nil {
		check(field, &worker.Spec)
	}
	if m := s.Template.MPIJob; m != nil {
		check("spec.template.mpiJob.launcher", &m.Launcher.Spec)
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errors.Join(errs...)
}
