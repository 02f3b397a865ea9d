package v1alpha1

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestAcceleratorConflicts(t *testing.T) {
	limits := func(pairs ...string) corev1.ResourceRequirements {
		rl := corev1.ResourceList{}
		for i := 0; i < len(pairs); i += 2 {
			rl[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
		}
		return corev1.ResourceRequirements{Limits: rl}
	}
	pytorch := func(r corev1.ResourceRequirements) TrainingJobSpec {
		return TrainingJobSpec{Template: TrainingJobTemplate{PyTorchJob: &PyTorchJobTemplate{
			Worker: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "pytorch", Resources: r}}}}}}}
	}
	mpiLauncher := func(r corev1.ResourceRequirements) TrainingJobSpec {
		return TrainingJobSpec{Template: TrainingJobTemplate{MPIJob: &MPIJobTemplate{
			Launcher: corev1.PodTemplateSpec{Spec: corev1.PodSpec{InitContainers: []corev1.Container{{Name: "i", Resources: r}}}}}}}
	}
	configured := []corev1.ResourceName{GPUResource, "example.com/npu", corev1.ResourceCPU}
	for name, c := range map[string]struct {
		spec TrainingJobSpec
		res  corev1.ResourceName
		want string // "" for no error
	}{
		"AMD GPUs on an NVIDIA type": {pytorch(limits("amd.com/gpu", "2")), GPUResource,
			"spec.template.pytorchJob.worker.spec.containers[0].resources.limits[amd.com/gpu]: amd.com/gpu is another GPU type's or vendor's accelerator; the job's GPU type schedules nvidia.com/gpu"},
		"another configured type's resource":  {pytorch(limits("example.com/npu", "1")), GPUResource, "resources.limits[example.com/npu]"},
		"Gaudi in the launcher":               {mpiLauncher(limits("habana.ai/gaudi", "1")), GPUResource, "spec.template.mpiJob.launcher.spec.initContainers[0].resources.limits[habana.ai/gaudi]"},
		"AWS Neuron":                          {pytorch(limits("aws.amazon.com/neuroncore", "2")), GPUResource, "aws.amazon.com/neuroncore"},
		"MIG on a full-GPU type":              {pytorch(limits("nvidia.com/mig-1g.10gb", "1")), GPUResource, "nvidia.com/mig-1g.10gb"},
		"its own accelerator":                 {pytorch(limits("amd.com/gpu", "2")), "amd.com/gpu", ""},
		"cpu, memory and other resources":     {pytorch(limits("cpu", "4", "memory", "8Gi", "example.com/fpga-net", "1", "aws.amazon.com/efa", "1")), GPUResource, ""},
		"a CPU type among the accelerators":   {pytorch(limits("cpu", "4")), "example.com/npu", ""},
		"nvidia.com/gpu is refused elsewhere": {pytorch(limits("nvidia.com/gpu", "1")), "amd.com/gpu", ""},
	} {
		t.Run(name, func(t *testing.T) {
			err := c.spec.AcceleratorConflicts(c.res, configured)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("got %v, want no error", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}
