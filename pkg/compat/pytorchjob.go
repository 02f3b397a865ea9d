package compat

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
)

// pytorchJob holds the fields of a kubeflow.org/v1 PyTorchJob that may appear
// in a job file; anything else is an unknown field and an error.
type pytorchJob struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       struct {
		RunPolicy           map[string]any          `json:"runPolicy,omitempty"`
		ElasticPolicy       *elasticPolicy          `json:"elasticPolicy,omitempty"`
		NprocPerNode        *string                 `json:"nprocPerNode,omitempty"`
		PyTorchReplicaSpecs map[string]*replicaSpec `json:"pytorchReplicaSpecs"`
	} `json:"spec"`
	Status map[string]any `json:"status,omitempty"`
}

type elasticPolicy struct {
	MinReplicas  *int32           `json:"minReplicas,omitempty"`
	MaxReplicas  *int32           `json:"maxReplicas,omitempty"`
	RDZVBackend  string           `json:"rdzvBackend,omitempty"`
	RDZVPort     *int32           `json:"rdzvPort,omitempty"`
	RDZVHost     string           `json:"rdzvHost,omitempty"`
	RDZVID       string           `json:"rdzvId,omitempty"`
	RDZVConf     []rdzvEntry      `json:"rdzvConf,omitempty"`
	Standalone   *bool            `json:"standalone,omitempty"`
	NProcPerNode *int32           `json:"nProcPerNode,omitempty"`
	MaxRestarts  *int32           `json:"maxRestarts,omitempty"`
	Metrics      []map[string]any `json:"metrics,omitempty"`
}

// FromPyTorchJob converts a Kubeflow PyTorchJob (kubeflow.org/v1) with an
// elastic policy into a TrainingJob of the same name: the worker range is
// elasticPolicy.minReplicas–maxReplicas, the requested size Worker.replicas,
// the GPU type the worker's nodeSelector vodascheduler/accelerator, and the
// GPUs per worker nprocPerNode (or the worker's GPU limit). Voda renders the
// rendezvous and decides the replicas, so a field that would fight it
// (rendezvous host, port, id or settings, autoscaling metrics, a Master,
// most of runPolicy) is refused with a message naming it; nothing is
// dropped silently.
func FromPyTorchJob(data []byte) (*v1alpha1.TrainingJob, error) {
	var p pytorchJob
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		return nil, fmt.Errorf("not a valid PyTorchJob: %w", err)
	}
	if p.Kind != "PyTorchJob" || p.APIVersion != "kubeflow.org/v1" {
		return nil, fmt.Errorf("kind is %q, apiVersion %q: want a PyTorchJob of kubeflow.org/v1", p.Kind, p.APIVersion)
	}
	var errs []error
	if p.Metadata.Name == "" {
		errs = append(errs, errors.New("metadata.name is missing"))
	}
	if len(p.Status) > 0 {
		errs = append(errs, errors.New("status: a new job has no status; remove it (e.g. from the output of kubectl get -o yaml)"))
	}
	for name := range p.Spec.PyTorchReplicaSpecs {
		if name != "Worker" {
			errs = append(errs, fmt.Errorf("spec.pytorchReplicaSpecs.%s: an elastic PyTorchJob has only workers (torchrun's c10d rendezvous runs on worker 0); remove it", name))
		}
	}
	worker := p.Spec.PyTorchReplicaSpecs["Worker"]
	if worker == nil || len(worker.Template.Spec.Containers) == 0 {
		errs = append(errs, errors.New("spec.pytorchReplicaSpecs.Worker with a container is missing"))
	}
	e := p.Spec.ElasticPolicy
	if e == nil || e.MinReplicas == nil || e.MaxReplicas == nil {
		errs = append(errs, errors.New("spec.elasticPolicy.minReplicas and maxReplicas are required: Voda schedules elastic jobs (for a fixed size, set both to it)"))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	errs = append(errs, refusedElastic(e)...)
	tmpl := &v1alpha1.PyTorchJobTemplate{MaxRestarts: e.MaxRestarts, Worker: *worker.Template.DeepCopy()}
	for i, c := range e.RDZVConf {
		if tmpl.RendezvousConf == nil {
			tmpl.RendezvousConf = map[string]string{}
		}
		if _, dup := tmpl.RendezvousConf[c.Key]; dup {
			errs = append(errs, fmt.Errorf("spec.elasticPolicy.rdzvConf[%d]: key %q is given twice", i, c.Key))
		}
		tmpl.RendezvousConf[c.Key] = c.Value
	}
	switch worker.RestartPolicy {
	case "", "ExitCode", "OnFailure", "Never":
		tmpl.RestartPolicy = v1alpha1.PyTorchRestartPolicy(worker.RestartPolicy)
	default:
		errs = append(errs, fmt.Errorf("spec.pytorchReplicaSpecs.Worker.restartPolicy %q: Voda accepts ExitCode, OnFailure or Never", worker.RestartPolicy))
	}
	for key, v := range p.Spec.RunPolicy {
		switch key {
		case "backoffLimit":
			n, ok := v.(float64)
			if !ok || n < 0 || n != float64(int32(n)) {
				errs = append(errs, fmt.Errorf("spec.runPolicy.backoffLimit %v: want a whole number, 0 or more", v))
				continue
			}
			b := int32(n)
			tmpl.BackoffLimit = &b
		default:
			errs = append(errs, fmt.Errorf("spec.runPolicy.%s: Voda runs, suspends and cleans up the job itself; remove it", key))
		}
	}
	k, err := perNode(p.Spec.NprocPerNode, e.NProcPerNode)
	if err != nil {
		errs = append(errs, err)
	}
	spec := api.JobSpec{
		GPUType:    api.GPUType(worker.Template.Spec.NodeSelector[v1alpha1.AcceleratorLabel]),
		MinWorkers: int(*e.MinReplicas),
		MaxWorkers: int(*e.MaxReplicas),
	}
	if worker.Replicas != nil {
		spec.RequestedWorkers = int(*worker.Replicas)
	}
	if spec.GPUType == "" {
		errs = append(errs, fmt.Errorf("the worker's nodeSelector %s (the GPU type) is missing", v1alpha1.AcceleratorLabel))
	}
	if err := spec.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("spec.elasticPolicy and Worker.replicas: %w", err))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	tj := &v1alpha1.TrainingJob{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "TrainingJob"},
		ObjectMeta: metav1.ObjectMeta{
			Name: p.Metadata.Name, Namespace: p.Metadata.Namespace,
			Labels: p.Metadata.Labels, Annotations: p.Metadata.Annotations,
		},
		Spec: v1alpha1.TrainingJobSpec{
			GPUType:          string(spec.GPUType),
			MinWorkers:       int32(spec.MinWorkers),
			MaxWorkers:       int32(spec.MaxWorkers),
			RequestedWorkers: int32(spec.RequestedWorkers),
			GPUsPerWorker:    int32(k),
			Category:         p.Metadata.Name,
			Template:         v1alpha1.TrainingJobTemplate{PyTorchJob: tmpl},
		},
	}
	if err := conflicts(tj, "spec.template.pytorchJob.worker.", "spec.pytorchReplicaSpecs.Worker.template."); err != nil {
		return nil, err
	}
	return tj, nil
}

// refusedElastic names the elastic-policy fields Voda cannot honour: it
// renders the rendezvous (c10d on worker 0) and decides the replicas.
// rdzvConf is carried over (TrainingJob's template.pytorchJob.rdzvConf).
func refusedElastic(e *elasticPolicy) []error {
	var errs []error
	refuse := func(set bool, field, why string) {
		if set {
			errs = append(errs, fmt.Errorf("spec.elasticPolicy.%s: %s; remove it", field, why))
		}
	}
	const rdzv = "Voda renders the rendezvous itself (c10d on worker 0)"
	refuse(e.RDZVBackend != "" && e.RDZVBackend != "c10d", "rdzvBackend "+strconv.Quote(e.RDZVBackend), rdzv)
	refuse(e.RDZVPort != nil, "rdzvPort", rdzv)
	refuse(e.RDZVHost != "", "rdzvHost", rdzv)
	refuse(e.RDZVID != "", "rdzvId", rdzv)
	refuse(e.Standalone != nil && *e.Standalone, "standalone", "a standalone rendezvous cannot span nodes")
	refuse(len(e.Metrics) > 0, "metrics", "Voda decides the workers, not an autoscaler")
	return errs
}

// perNode reads the GPUs per worker from spec.nprocPerNode or the older
// elasticPolicy.nProcPerNode: a number, or auto/gpu (or unset) to take the
// worker's GPU limit. It returns 0 for "take the limit".
func perNode(spec *string, elastic *int32) (int, error) {
	n := 0
	if spec != nil {
		switch v := strings.TrimSpace(*spec); {
		case slices.Contains([]string{"", "auto", "gpu"}, v):
		default:
			i, err := strconv.Atoi(v)
			if err != nil || i < 1 || i > api.MaxGPUsPerWorker {
				return 0, fmt.Errorf("spec.nprocPerNode %q: want the GPUs (processes) per worker, 1 to %d, or auto", v, api.MaxGPUsPerWorker)
			}
			n = i
		}
	}
	if elastic == nil {
		return n, nil
	}
	if e := int(*elastic); e < 1 || e > api.MaxGPUsPerWorker || n != 0 && e != n {
		return 0, fmt.Errorf("spec.elasticPolicy.nProcPerNode %d disagrees with spec.nprocPerNode or is out of range: set one, 1 to %d", e, api.MaxGPUsPerWorker)
	}
	return int(*elastic), nil
}

// rdzvEntry is one of elasticPolicy.rdzvConf's settings.
type rdzvEntry struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// IsPyTorchJob reports whether a YAML or JSON document declares kind
// PyTorchJob.
func IsPyTorchJob(data []byte) bool {
	var head struct {
		Kind string `json:"kind"`
	}
	return yaml.Unmarshal(data, &head) == nil && head.Kind == "PyTorchJob"
}
