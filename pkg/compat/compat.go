// Package compat converts the original Voda's job format — a Kubeflow
// MPIJob whose launcher carries the scheduling parameters as environment
// variables — into a TrainingJob, so existing job files keep working
// (`voda create -f mpijob.yaml`, POST /api/v1/jobs).
//
// The original read NUM_PROC (or NP), MIN_NUM_PROC (MIN_NP), MAX_NUM_PROC
// (MAX_NP), EPOCHS and JOB_PRIORITY from the launcher's first container, and
// the GPU type from the worker's nodeSelector vodascheduler/accelerator; it
// named the job <metadata.name>-<YYYYMMDD>-<hhmmss> on a 12-hour clock and
// set JOB_NAME to that name. Here the clock is 24-hour, missing or malformed
// values are errors that name the variable, and metadata.name becomes the
// job's category, as in the original. MAX_BATCH_SIZE, which the original
// did not have, lets Voda choose the batch size from BATCH_SIZE up
// (spec.batchSize).
package compat

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
)

// The launcher environment variables of the original format.
const (
	EnvNumProc     = "NUM_PROC"
	EnvNP          = "NP"
	EnvMinNumProc  = "MIN_NUM_PROC"
	EnvMinNP       = "MIN_NP"
	EnvMaxNumProc  = "MAX_NUM_PROC"
	EnvMaxNP       = "MAX_NP"
	EnvEpochs      = "EPOCHS"
	EnvJobPriority = "JOB_PRIORITY"
	EnvJobName     = "JOB_NAME"
	// MAX_BATCH_SIZE (with BATCH_SIZE, and optionally
	// PER_GPU_MAX_BATCH_SIZE) lets Voda choose the job's batch size
	// (spec.batchSize); the original had no such variables.
	EnvBatchSize      = "BATCH_SIZE"
	EnvMaxBatchSize   = "MAX_BATCH_SIZE"
	EnvPerGPUMaxBatch = "PER_GPU_MAX_BATCH_SIZE"
)

// NameLayout is the suffix appended to the original job's name: 24-hour
// clock, in UTC.
const NameLayout = "20060102-150405"

// mpiJob holds the fields of a kubeflow.org/v1 or v2beta1 MPIJob that may
// appear in a job file; anything else is an unknown field and an error.
type mpiJob struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       struct {
		SlotsPerWorker         *int32                  `json:"slotsPerWorker,omitempty"`
		CleanPodPolicy         string                  `json:"cleanPodPolicy,omitempty"`
		RunPolicy              map[string]any          `json:"runPolicy,omitempty"`
		MainContainer          string                  `json:"mainContainer,omitempty"`
		SSHAuthMountPath       string                  `json:"sshAuthMountPath,omitempty"`
		MPIImplementation      string                  `json:"mpiImplementation,omitempty"`
		LauncherCreationPolicy string                  `json:"launcherCreationPolicy,omitempty"`
		RunLauncherAsWorker    *bool                   `json:"runLauncherAsWorker,omitempty"`
		MPIReplicaSpecs        map[string]*replicaSpec `json:"mpiReplicaSpecs"`
	} `json:"spec"`
	Status map[string]any `json:"status,omitempty"`
}

type replicaSpec struct {
	Replicas      *int32                 `json:"replicas,omitempty"`
	RestartPolicy string                 `json:"restartPolicy,omitempty"`
	Template      corev1.PodTemplateSpec `json:"template"`
}

// IsMPIJob reports whether a YAML or JSON document declares kind MPIJob.
func IsMPIJob(data []byte) bool {
	var head struct {
		Kind string `json:"kind"`
	}
	return yaml.Unmarshal(data, &head) == nil && head.Kind == "MPIJob"
}

// FromMPIJob converts an original-format MPIJob document (YAML or JSON) into
// a TrainingJob submitted at now. Every problem is reported, each naming
// the field or variable to fix.
func FromMPIJob(data []byte, now time.Time) (*v1alpha1.TrainingJob, error) {
	var m mpiJob
	if err := yaml.UnmarshalStrict(data, &m); err != nil {
		return nil, fmt.Errorf("not a valid MPIJob: %w", err)
	}
	if m.Kind != "MPIJob" || !strings.HasPrefix(m.APIVersion, "kubeflow.org/") {
		return nil, fmt.Errorf("kind is %q, apiVersion %q: want an MPIJob of kubeflow.org/v1 or v2beta1", m.Kind, m.APIVersion)
	}
	var errs []error
	base := m.Metadata.Name
	if base == "" {
		errs = append(errs, errors.New("metadata.name is missing"))
	}
	name := base + "-" + now.UTC().Format(NameLayout)
	// The name also names the MPIJob's Service and labels its pods: a
	// DNS-1035 label of at most 63 characters, date suffix included.
	if msgs := validation.IsDNS1035Label(name); len(msgs) > 0 && base != "" {
		errs = append(errs, fmt.Errorf("metadata.name %q does not make a valid job name %q: %s", base, name, strings.Join(msgs, "; ")))
	}
	launcher, worker := m.Spec.MPIReplicaSpecs["Launcher"], m.Spec.MPIReplicaSpecs["Worker"]
	if launcher == nil || len(launcher.Template.Spec.Containers) == 0 {
		errs = append(errs, errors.New("spec.mpiReplicaSpecs.Launcher with a container is missing"))
	}
	if worker == nil || len(worker.Template.Spec.Containers) == 0 {
		errs = append(errs, errors.New("spec.mpiReplicaSpecs.Worker with a container is missing"))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}

	env := envOf(launcher.Template.Spec.Containers[0])
	spec := api.JobSpec{GPUType: api.GPUType(worker.Template.Spec.NodeSelector[v1alpha1.AcceleratorLabel]), Category: base}
	gpuTypes := acceleratorAffinity(worker.Template.Spec.Affinity)
	switch {
	case spec.GPUType != "" && gpuTypes != nil:
		errs = append(errs, fmt.Errorf("the worker names its GPU type twice, in nodeSelector %s and in a node affinity on it: keep one", v1alpha1.AcceleratorLabel))
	case len(gpuTypes) == 1:
		spec.GPUType, gpuTypes = api.GPUType(gpuTypes[0]), nil
	case len(gpuTypes) > 1:
		spec.GPUType = api.GPUType(gpuTypes[0]) // for the checks below; the job gets gpuTypes
	case spec.GPUType == "":
		errs = append(errs, fmt.Errorf("the worker's nodeSelector %s (the GPU type) is missing; or, for several types, a required node affinity %s In [TYPE, …]", v1alpha1.AcceleratorLabel, v1alpha1.AcceleratorLabel))
	}
	var err error
	if spec.MinWorkers, err = env.number(true, EnvMinNumProc, EnvMinNP); err != nil {
		errs = append(errs, err)
	}
	if spec.MaxWorkers, err = env.number(true, EnvMaxNumProc, EnvMaxNP); err != nil {
		errs = append(errs, err)
	}
	if spec.RequestedWorkers, err = env.number(false, EnvNumProc, EnvNP); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, m.unhonoured(&spec, env)...)
	if spec.Epochs, err = env.number(false, EnvEpochs); err != nil {
		errs = append(errs, err)
	}
	if spec.Priority, err = env.number(false, EnvJobPriority); err != nil {
		errs = append(errs, err)
	}
	batch, err := env.batchSize()
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		if err := spec.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("launcher environment: %w", err))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}

	var backoff *int32
	if v, ok := m.Spec.RunPolicy["backoffLimit"]; ok {
		n, _ := wholeNumber(v)
		b := int32(n)
		backoff = &b
	}
	lt, wt := launcher.Template.DeepCopy(), worker.Template.DeepCopy()
	setEnv(&lt.Spec.Containers[0], EnvJobName, name)
	if acceleratorAffinity(wt.Spec.Affinity) != nil {
		wt.Spec.Affinity = nil // honoured as spec.gpuType(s)
	}
	tj := &v1alpha1.TrainingJob{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "TrainingJob"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: m.Metadata.Namespace,
			Labels: m.Metadata.Labels, Annotations: m.Metadata.Annotations,
		},
		Spec: v1alpha1.TrainingJobSpec{
			GPUType:          string(spec.GPUType),
			GPUTypes:         gpuTypes,
			MinWorkers:       int32(spec.MinWorkers),
			MaxWorkers:       int32(spec.MaxWorkers),
			RequestedWorkers: int32(spec.RequestedWorkers),
			Priority:         int32(spec.Priority),
			Epochs:           int32(spec.Epochs),
			Category:         base,
			BatchSize:        batch,
			Template: v1alpha1.TrainingJobTemplate{MPIJob: &v1alpha1.MPIJobTemplate{
				SlotsPerWorker:    m.Spec.SlotsPerWorker,
				MPIImplementation: m.Spec.MPIImplementation,
				SSHAuthMountPath:  m.Spec.SSHAuthMountPath,
				BackoffLimit:      backoff,
				Launcher:          *lt,
				Worker:            *wt,
			}},
		},
	}
	if len(gpuTypes) > 1 {
		tj.Spec.GPUType = ""
	}
	if err := conflicts(tj, "spec.template.mpiJob.worker.", "spec.mpiReplicaSpecs.Worker.template.",
		"spec.template.mpiJob.launcher.", "spec.mpiReplicaSpecs.Launcher.template."); err != nil {
		return nil, err
	}
	return tj, nil
}

// acceleratorAffinity reads the GPU types of a worker whose affinity is
// exactly one required node selector term with one expression, the
// accelerator label In a list: the original format's way to accept several
// types. Any other affinity gives nil (and is refused by name later).
func acceleratorAffinity(a *corev1.Affinity) []string {
	if a == nil || a.PodAffinity != nil || a.PodAntiAffinity != nil || a.NodeAffinity == nil {
		return nil
	}
	na := a.NodeAffinity
	req := na.RequiredDuringSchedulingIgnoredDuringExecution
	if len(na.PreferredDuringSchedulingIgnoredDuringExecution) > 0 || req == nil || len(req.NodeSelectorTerms) != 1 {
		return nil
	}
	t := req.NodeSelectorTerms[0]
	if len(t.MatchFields) > 0 || len(t.MatchExpressions) != 1 {
		return nil
	}
	e := t.MatchExpressions[0]
	if e.Key != v1alpha1.AcceleratorLabel || e.Operator != corev1.NodeSelectorOpIn || len(e.Values) == 0 {
		return nil
	}
	return e.Values
}

// conflicts is the converted job's TemplateConflicts, with the fields
// named as the user's file names them (pairs of TrainingJob path, file
// path).
func conflicts(tj *v1alpha1.TrainingJob, paths ...string) error {
	err := tj.Spec.TemplateConflicts(v1alpha1.GPUResource)
	if err == nil {
		return nil
	}
	return errors.New(strings.NewReplacer(paths...).Replace(err.Error()))
}

// unhonoured reports every field of the MPIJob that Voda would otherwise
// drop or override, naming it and saying what to do; where Voda can honour
// a field it does (Worker.replicas is the requested worker count when
// NUM_PROC is not set; runPolicy.backoffLimit is kept). Fields Voda sets
// itself are accepted only at the value Voda uses.
func (m *mpiJob) unhonoured(spec *api.JobSpec, env environment) []error {
	var errs []error
	sp := &m.Spec
	launcher, worker := sp.MPIReplicaSpecs["Launcher"], sp.MPIReplicaSpecs["Worker"]
	for name := range sp.MPIReplicaSpecs {
		if name != "Launcher" && name != "Worker" {
			errs = append(errs, fmt.Errorf("spec.mpiReplicaSpecs.%s: an MPIJob has only a Launcher and Workers; remove it", name))
		}
	}
	if r := launcher.Replicas; r != nil && *r != 1 {
		errs = append(errs, fmt.Errorf("spec.mpiReplicaSpecs.Launcher.replicas is %d: an MPIJob has exactly one launcher; set 1 or remove it", *r))
	}
	if r := worker.Replicas; r != nil {
		_, np := env[EnvNumProc]
		_, short := env[EnvNP]
		switch {
		case !np && !short:
			spec.RequestedWorkers = int(*r) // the original format's other way to say it
		case int(*r) != spec.RequestedWorkers:
			errs = append(errs, fmt.Errorf("spec.mpiReplicaSpecs.Worker.replicas is %d but the launcher's %s is %d: Voda starts the job with %s workers and resizes it within %s–%s; make them equal or remove replicas",
				*r, EnvNumProc, spec.RequestedWorkers, EnvNumProc, EnvMinNumProc, EnvMaxNumProc))
		}
	}
	// The operator's defaults, which Voda's MPIJobs use.
	for _, rp := range []struct {
		name, want string
		spec       *replicaSpec
	}{{"Launcher", "OnFailure", launcher}, {"Worker", "Never", worker}} {
		if p := rp.spec.RestartPolicy; p != "" && p != rp.want {
			errs = append(errs, fmt.Errorf("spec.mpiReplicaSpecs.%s.restartPolicy is %s: Voda runs the %s with %s and restarts workers itself when it resizes or moves them; remove it or set %s",
				rp.name, p, strings.ToLower(rp.name), rp.want, rp.want))
		}
	}
	if p := sp.CleanPodPolicy; p != "" && p != "Running" {
		errs = append(errs, fmt.Errorf("spec.cleanPodPolicy is %s: Voda removes the pods still running when a job ends (Running); remove it or set Running", p))
	}
	for _, k := range slices.Sorted(maps.Keys(sp.RunPolicy)) {
		v := sp.RunPolicy[k]
		switch k {
		case "cleanPodPolicy":
			if v != "Running" {
				errs = append(errs, fmt.Errorf("spec.runPolicy.cleanPodPolicy is %v: Voda removes the pods still running when a job ends (Running); remove it or set Running", v))
			}
		case "backoffLimit":
			if n, ok := wholeNumber(v); !ok || n > 1<<20 {
				errs = append(errs, fmt.Errorf("spec.runPolicy.backoffLimit is %v: want a whole number", v))
			}
		case "suspend":
			if v != false {
				errs = append(errs, fmt.Errorf("spec.runPolicy.suspend is %v: Voda decides when the job runs (it suspends and resumes it to preempt); remove it", v))
			}
		default:
			errs = append(errs, fmt.Errorf("spec.runPolicy.%s is not supported by Voda; remove it", k))
		}
	}
	if sp.MainContainer != "" {
		errs = append(errs, errors.New("spec.mainContainer is not supported: Voda reads the launcher's first container and runs the workers' first container; remove it"))
	}
	if p := sp.LauncherCreationPolicy; p != "" {
		errs = append(errs, fmt.Errorf("spec.launcherCreationPolicy is %s: Voda sets it (the launcher starts once the workers are ready, or at once with gang scheduling); remove it", p))
	}
	if sp.RunLauncherAsWorker != nil && *sp.RunLauncherAsWorker {
		errs = append(errs, errors.New("spec.runLauncherAsWorker: Voda counts and places only workers; remove it"))
	}
	if len(m.Status) > 0 {
		errs = append(errs, errors.New("status: a new job has no status; remove it (e.g. from the output of kubectl get -o yaml)"))
	}
	return errs
}

// wholeNumber reads a JSON or YAML number that is a whole number ≥ 0.
func wholeNumber(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, n >= 0
	case float64:
		return int64(n), n >= 0 && n == float64(int64(n))
	case int:
		return int64(n), n >= 0
	}
	return 0, false
}

// Rename gives a job converted by FromMPIJob another name, JOB_NAME
// included: for a second submission of the same file within one second,
// whose generated name is taken.
func Rename(tj *v1alpha1.TrainingJob, name string) {
	tj.Name = name
	if m := tj.Spec.Template.MPIJob; m != nil && len(m.Launcher.Spec.Containers) > 0 {
		setEnv(&m.Launcher.Spec.Containers[0], EnvJobName, name)
	}
}

// environment is a container's literal environment variables.
type environment map[string]string

func envOf(c corev1.Container) environment {
	env := environment{}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			env[e.Name] = e.Value
		}
	}
	return env
}

// int reads the first of names that is set, as a non-negative integer that
// fits the API. A required variable must be set.
func (env environment) number(required bool, names ...string) (int, error) {
	for _, n := range names {
		v, ok := env[n]
		if !ok {
			continue
		}
		i, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || i < 0 || i > 1<<20 {
			return 0, fmt.Errorf("launcher env %s=%q: want a whole number from 0 to %d", n, v, 1<<20)
		}
		return i, nil
	}
	if required {
		return 0, fmt.Errorf("launcher env %s is missing (the original also accepted %s)", names[0], strings.Join(names[1:], ", "))
	}
	return 0, nil
}

// batchSize reads the batch range of a job that lets Voda choose its batch
// size: MAX_BATCH_SIZE, from BATCH_SIZE, at most PER_GPU_MAX_BATCH_SIZE
// per GPU; nil without MAX_BATCH_SIZE (BATCH_SIZE alone is the script's
// own, and stays in its environment).
func (env environment) batchSize() (*v1alpha1.BatchSizeSpec, error) {
	most, err := env.number(false, EnvMaxBatchSize)
	if err != nil {
		return nil, err
	}
	perGPU, err := env.number(false, EnvPerGPUMaxBatch)
	if err != nil {
		return nil, err
	}
	if most == 0 {
		if _, ok := env[EnvPerGPUMaxBatch]; ok {
			return nil, fmt.Errorf("launcher env %s is set without %s: set %s (and %s) to let Voda choose the batch size, or remove it",
				EnvPerGPUMaxBatch, EnvMaxBatchSize, EnvMaxBatchSize, EnvBatchSize)
		}
		return nil, nil
	}
	initial, err := env.number(false, EnvBatchSize)
	if err != nil {
		return nil, err
	}
	if initial == 0 {
		return nil, fmt.Errorf("launcher env %s is missing: %s lets Voda choose the batch size from %s up", EnvBatchSize, EnvMaxBatchSize, EnvBatchSize)
	}
	return &v1alpha1.BatchSizeSpec{Initial: int32(initial), Max: int32(most), PerGPUMax: int32(perGPU)}, nil
}

// setEnv sets or replaces a literal environment variable.
func setEnv(c *corev1.Container, name, value string) {
	for i := range c.Env {
		if c.Env[i].Name == name {
			c.Env[i] = corev1.EnvVar{Name: name, Value: value}
			return
		}
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: value})
}
