package kube

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
)

// MPIJobGVK is the Kubeflow MPIJob kind Voda creates for a TrainingJob.
var MPIJobGVK = schema.GroupVersionKind{Group: "kubeflow.org", Version: "v2beta1", Kind: "MPIJob"}

// buildMPIJob returns the MPIJob that runs tj with the given number of
// workers: the user's template plus Voda's label, the placement gate and the
// job's GPUs per worker (one MPI slot each unless the template sets
// slotsPerWorker). It has the TrainingJob as controlling owner, so deleting
// the TrainingJob deletes it.
//
// With a gang scheduler, both pod templates join the job's PodGroup and the
// launcher is created with the workers: it is a member of the gang, which
// starts all its members or none (waiting for the workers to be ready
// before creating it would leave the gang one short for ever).
//
// env, if any, is added to every container of the launcher and the workers
// (the progress URL and token).
func buildMPIJob(tj *v1alpha1.TrainingJob, workers int32, g Gang, res corev1.ResourceName, env []corev1.EnvVar) (*unstructured.Unstructured, error) {
	t := tj.Spec.Template.MPIJob
	if t == nil {
		return nil, fmt.Errorf("training job %s/%s has no template.mpiJob", tj.Namespace, tj.Name)
	}
	k, err := tj.Spec.WorkerAccelerators(res)
	if err != nil {
		return nil, err
	}
	worker := workerTemplate(tj.Name, t.Worker, k, res, "")
	launcher := t.Launcher.DeepCopy()
	addLabel(&launcher.ObjectMeta, v1alpha1.JobLabel, tj.Name)
	g.join(worker, tj.Name)
	g.join(launcher, tj.Name)
	launcherPolicy := "WaitForWorkersReady"
	if g.enabled() {
		launcherPolicy = "AtStartup"
	}
	for _, spec := range []*corev1.PodSpec{&worker.Spec, &launcher.Spec} {
		for i := range spec.Containers {
			spec.Containers[i].Env = append(spec.Containers[i].Env, env...)
		}
	}

	wt, err := runtime.DefaultUnstructuredConverter.ToUnstructured(worker)
	if err != nil {
		return nil, fmt.Errorf("worker template: %w", err)
	}
	lt, err := runtime.DefaultUnstructuredConverter.ToUnstructured(launcher)
	if err != nil {
		return nil, fmt.Errorf("launcher template: %w", err)
	}
	spec := map[string]any{
		"slotsPerWorker":         int64(k),
		"launcherCreationPolicy": launcherPolicy,
		"runPolicy": map[string]any{
			"suspend":        false,
			"cleanPodPolicy": "Running",
		},
		"mpiReplicaSpecs": map[string]any{
			"Launcher": map[string]any{"replicas": int64(1), "template": lt},
			"Worker":   map[string]any{"replicas": int64(workers), "template": wt},
		},
	}
	if t.SlotsPerWorker != nil {
		spec["slotsPerWorker"] = int64(*t.SlotsPerWorker)
	}
	if t.MPIImplementation != "" {
		spec["mpiImplementation"] = t.MPIImplementation
	}
	if t.SSHAuthMountPath != "" {
		spec["sshAuthMountPath"] = t.SSHAuthMountPath
	}
	if t.BackoffLimit != nil {
		spec["runPolicy"].(map[string]any)["backoffLimit"] = int64(*t.BackoffLimit)
	}
	return childOf(tj, MPIJobGVK, spec), nil
}

// workerTemplate adds Voda's label and scheduling gate to the worker pod
// template, and k units of res to its container named container (or its
// first) unless it asks for res (then it asks for k: see
// TrainingJobSpec.WorkerAccelerators).
func workerTemplate(job string, in corev1.PodTemplateSpec, k int, res corev1.ResourceName, container string) *corev1.PodTemplateSpec {
	t := in.DeepCopy()
	addLabel(&t.ObjectMeta, v1alpha1.JobLabel, job)
	gated := false
	for _, g := range t.Spec.SchedulingGates {
		gated = gated || g.Name == v1alpha1.PlacementGate
	}
	if !gated {
		t.Spec.SchedulingGates = append(t.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: v1alpha1.PlacementGate})
	}
	if _, asked := v1alpha1.PodGPUs(&t.Spec, res); !asked && len(t.Spec.Containers) > 0 {
		c := &t.Spec.Containers[0]
		for i := range t.Spec.Containers {
			if t.Spec.Containers[i].Name == container {
				c = &t.Spec.Containers[i]
			}
		}
		if c.Resources.Limits == nil {
			c.Resources.Limits = corev1.ResourceList{}
		}
		c.Resources.Limits[res] = *resource.NewQuantity(int64(k), resource.DecimalSI)
	}
	return t
}

func addLabel(m *metav1.ObjectMeta, k, v string) {
	if m.Labels == nil {
		m.Labels = map[string]string{}
	}
	m.Labels[k] = v
}

// workerIndex returns the worker index of a pod the operator named
// <job>-worker-<i>.
func workerIndex(job, pod string) (int, bool) {
	rest, ok := strings.CutPrefix(pod, job+"-worker-")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(rest)
	return i, err == nil && i >= 0
}

// gated reports whether the pod still carries Voda's scheduling gate.
func gated(p *corev1.Pod) bool {
	for _, g := range p.Spec.SchedulingGates {
		if g.Name == v1alpha1.PlacementGate {
			return true
		}
	}
	return false
}

// fromUnstructured decodes an unstructured map into a typed object.
func fromUnstructured(m map[string]any, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(m, into)
}
