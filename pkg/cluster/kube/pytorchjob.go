package kube

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
)

// defaultMaxRestarts is torchrun's --max-restarts when the template leaves
// it unset. Every resize is a membership change and counts as a restart, so
// it must cover the resizes of a long job, not only its failures.
const defaultMaxRestarts = 100

// The rendezvous settings Voda gives torchrun unless the template says
// otherwise. torchrun's own defaults make every resize below the job's
// maximum wait out a 30 s last call for more nodes, and notice a
// membership change up to 5 s late (its monitor interval); measured with
// real torchrun (docs/design-notes.md, "Resize cost"), these bring such a
// resize from 36–43 s to 8–21 s.
var defaultRendezvousConf = map[string]string{"last_call_timeout": "3"}

const (
	envMonitorInterval     = "PET_MONITOR_INTERVAL"
	defaultMonitorInterval = "1"
)

// rendezvousConf is the job's elasticPolicy.rdzvConf: Voda's defaults
// overridden key by key by the template's, in key order.
func rendezvousConf(t *v1alpha1.PyTorchJobTemplate) []any {
	conf := maps.Clone(defaultRendezvousConf)
	maps.Copy(conf, t.RendezvousConf)
	var out []any
	for _, k := range slices.Sorted(maps.Keys(conf)) {
		out = append(out, map[string]any{"key": k, "value": conf[k]})
	}
	return out
}

// buildPyTorchJob returns the PyTorchJob that runs tj with the given number
// of workers, elastic: the operator passes torchrun a c10d rendezvous on
// worker 0 between the job's minWorkers and maxWorkers nodes
// (PET_NNODES=min:max) and nproc-per-node the GPUs per worker. Scaling then
// only changes the worker replicas, and torchrun re-forms the group. Like
// the MPIJob, it carries Voda's label, placement gate and GPUs on its
// workers, has the TrainingJob as controlling owner, and joins the job's
// PodGroup under a gang scheduler.
func buildPyTorchJob(tj *v1alpha1.TrainingJob, workers int32, g Gang, res corev1.ResourceName, env []corev1.EnvVar) (*unstructured.Unstructured, error) {
	t := tj.Spec.Template.PyTorchJob
	if t == nil {
		return nil, fmt.Errorf("training job %s/%s has no template.pytorchJob", tj.Namespace, tj.Name)
	}
	k, err := tj.Spec.WorkerAccelerators(res)
	if err != nil {
		return nil, err
	}
	worker := workerTemplate(tj.Name, t.Worker, k, res, v1alpha1.PyTorchContainer)
	g.join(worker, tj.Name)
	for i := range worker.Spec.Containers {
		ct := &worker.Spec.Containers[i]
		ct.Env = append(ct.Env, env...)
		if ct.Name == v1alpha1.PyTorchContainer && !slices.ContainsFunc(ct.Env, func(e corev1.EnvVar) bool { return e.Name == envMonitorInterval }) {
			ct.Env = append(ct.Env, corev1.EnvVar{Name: envMonitorInterval, Value: defaultMonitorInterval})
		}
	}
	wt, err := runtime.DefaultUnstructuredConverter.ToUnstructured(worker)
	if err != nil {
		return nil, fmt.Errorf("worker template: %w", err)
	}
	maxRestarts := int64(defaultMaxRestarts)
	if t.MaxRestarts != nil {
		maxRestarts = int64(*t.MaxRestarts)
	}
	restart := t.RestartPolicy
	if restart == "" {
		restart = v1alpha1.PyTorchRestartExitCode
	}
	runPolicy := map[string]any{"suspend": false, "cleanPodPolicy": "Running"}
	if t.BackoffLimit != nil {
		runPolicy["backoffLimit"] = int64(*t.BackoffLimit)
	}
	spec := map[string]any{
		"runPolicy": runPolicy,
		"elasticPolicy": map[string]any{
			"rdzvBackend": "c10d",
			"minReplicas": int64(tj.Spec.MinWorkers),
			"maxReplicas": int64(tj.Spec.MaxWorkers),
			"maxRestarts": maxRestarts,
			"rdzvConf":    rendezvousConf(t),
		},
		"nprocPerNode": strconv.Itoa(k),
		"pytorchReplicaSpecs": map[string]any{
			"Worker": map[string]any{"replicas": int64(workers), "restartPolicy": string(restart), "template": wt},
		},
	}
	return childOf(tj, PyTorchJobGVK, spec), nil
}
