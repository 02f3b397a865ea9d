package v1alpha1

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/vodascheduler/voda/pkg/api"
)

// Validate checks a new TrainingJob as a client would want it checked before
// anything is created: every problem is reported, each naming the field to
// fix. The API server's schema checks the same rules and more; this gives
// the REST API and the CLI messages in the job's own terms.
func (tj *TrainingJob) Validate() error {
	var errs []error
	if tj.Kind != "" && tj.Kind != "TrainingJob" {
		errs = append(errs, fmt.Errorf("kind is %q, want TrainingJob", tj.Kind))
	}
	if tj.APIVersion != "" && tj.APIVersion != GroupVersion.String() {
		errs = append(errs, fmt.Errorf("apiVersion is %q, want %s", tj.APIVersion, GroupVersion))
	}
	switch {
	case tj.Name == "":
		errs = append(errs, errors.New("metadata.name is missing"))
	default:
		// The name also names the MPIJob's Service and labels its pods.
		if msgs := validation.IsDNS1035Label(tj.Name); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("metadata.name %q: %s", tj.Name, strings.Join(msgs, "; ")))
		}
	}
	s := tj.Spec
	switch {
	case s.GPUType == "" && len(s.GPUTypes) == 0:
		errs = append(errs, errors.New("spec.gpuType is missing (the GPU type the job runs on, a value of the node label "+AcceleratorLabel+"; or spec.gpuTypes, several in order of preference)"))
	case s.GPUType != "" && len(s.GPUTypes) > 0:
		errs = append(errs, errors.New("spec.gpuType and spec.gpuTypes are both set: set gpuType for one GPU type, or gpuTypes for several in order of preference"))
	case s.GPUType != "":
		if msgs := validation.IsValidLabelValue(s.GPUType); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("spec.gpuType %q: %s", s.GPUType, strings.Join(msgs, "; ")))
		}
	}
	if len(s.GPUTypes) > 16 {
		errs = append(errs, fmt.Errorf("spec.gpuTypes lists %d types, at most 16 allowed", len(s.GPUTypes)))
	}
	for i, t := range s.GPUTypes {
		if msgs := validation.IsValidLabelValue(t); len(msgs) > 0 || t == "" {
			errs = append(errs, fmt.Errorf("spec.gpuTypes[%d] %q: not a GPU type (a value of the node label %s)", i, t, AcceleratorLabel))
		} else if slices.Contains(s.GPUTypes[:i], t) {
			errs = append(errs, fmt.Errorf("spec.gpuTypes[%d] %q is listed twice", i, t))
		}
	}
	for _, t := range slices.Sorted(maps.Keys(s.GPUTypeSpeeds)) {
		q := s.GPUTypeSpeeds[t]
		switch {
		case !slices.Contains(s.GPUTypes, t):
			errs = append(errs, fmt.Errorf("spec.gpuTypeSpeeds.%s: %s is not in spec.gpuTypes; give speeds only for the types the job lists", t, t))
		case q.Sign() <= 0:
			errs = append(errs, fmt.Errorf("spec.gpuTypeSpeeds.%s is %s: a speed must be positive (e.g. 3 for three times as fast as a type of speed 1)", t, q.String()))
		}
	}
	js := api.JobSpec{
		GPUType: "t", MinWorkers: int(s.MinWorkers), MaxWorkers: int(s.MaxWorkers),
		RequestedWorkers: int(s.RequestedWorkers), Priority: int(s.Priority), Epochs: int(s.Epochs),
	}
	if err := js.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("spec: %w", err))
	}
	if len(s.Category) > 253 {
		errs = append(errs, fmt.Errorf("spec.category is %d characters long, at most 253 allowed", len(s.Category)))
	}
	if k, err := s.WorkerGPUs(); err != nil {
		errs = append(errs, err)
	} else if err := s.BatchConflicts(k); err != nil {
		errs = append(errs, err)
	}
	if err := s.TemplateConflicts(GPUResource); err != nil {
		errs = append(errs, err)
	}
	m, pt := s.Template.MPIJob, s.Template.PyTorchJob
	switch {
	case m == nil && pt == nil:
		errs = append(errs, errors.New("spec.template sets no runtime: set spec.template.mpiJob (elastic Horovod) or spec.template.pytorchJob (torchrun)"))
	case m != nil && pt != nil:
		errs = append(errs, errors.New("spec.template sets both mpiJob and pytorchJob: a job has exactly one runtime"))
	case pt != nil:
		if !slices.ContainsFunc(pt.Worker.Spec.Containers, func(c corev1.Container) bool { return c.Name == PyTorchContainer }) {
			errs = append(errs, fmt.Errorf("spec.template.pytorchJob.worker has no container named %q: the training-operator passes torchrun's rendezvous settings only to that container", PyTorchContainer))
		}
	default:
		if len(m.Launcher.Spec.Containers) == 0 {
			errs = append(errs, errors.New("spec.template.mpiJob.launcher has no container"))
		}
		if len(m.Worker.Spec.Containers) == 0 {
			errs = append(errs, errors.New("spec.template.mpiJob.worker has no container"))
		}
	}
	return errors.Join(errs...)
}

// TemplateConflicts reports what a job's pod templates set that Voda
// cannot honour: it decides every worker's node itself (a scheduling gate
// it lifts once it has chosen, and a hostname nodeSelector), so a worker
// template may not choose nodes or a scheduler of its own, and only the
// workers hold the job's accelerators (res, and nvidia.com/gpu). Each
// problem names the field to remove and why.
func (s *TrainingJobSpec) TemplateConflicts(res corev1.ResourceName) error {
	field, worker := s.Template.workerTemplate()
	if worker == nil {
		return nil
	}
	var errs []error
	w := &worker.Spec
	bad := func(what, why string) {
		errs = append(errs, fmt.Errorf("%s.spec.%s: %s", field, what, why))
	}
	if w.NodeName != "" {
		bad("nodeName", "Voda chooses each worker's node; remove it")
	}
	if w.SchedulerName != "" {
		bad("schedulerName", "Voda's workers are bound by the cluster's scheduler (or the gang scheduler Voda is configured with) once Voda lifts their scheduling gate; remove it")
	}
	for _, k := range slices.Sorted(maps.Keys(w.NodeSelector)) {
		switch {
		case k != AcceleratorLabel:
			bad("nodeSelector."+k, "Voda places workers on the nodes of spec.gpuType and selects the node itself; a further selector can leave a worker Pending on the node Voda chose. Remove it (label the GPU type's nodes instead)")
		case len(s.GPUTypes) > 0:
			bad("nodeSelector."+k, "selects one GPU type but spec.gpuTypes lists several: remove it (Voda selects the nodes of the type it chooses)")
		case w.NodeSelector[k] != s.GPUType:
			bad("nodeSelector."+k, fmt.Sprintf("is %q but spec.gpuType is %q: remove it or make them equal", w.NodeSelector[k], s.GPUType))
		}
	}
	if a := w.Affinity; a != nil && (a.NodeAffinity != nil || a.PodAffinity != nil || a.PodAntiAffinity != nil) {
		bad("affinity", "Voda chooses each worker's node (keeping a job on as few nodes as it can); node and pod affinity would fight that choice. Remove it")
	}
	if len(w.TopologySpreadConstraints) > 0 {
		bad("topologySpreadConstraints", "Voda chooses each worker's node; remove them")
	}
	for _, g := range w.SchedulingGates {
		if g.Name != PlacementGate {
			bad("schedulingGates", fmt.Sprintf("gate %q: Voda lifts only its own gate, so the workers would never start; remove it", g.Name))
		}
	}
	if m := s.Template.MPIJob; m != nil {
		for _, r := range []corev1.ResourceName{GPUResource, res} {
			if n, _ := PodGPUs(&m.Launcher.Spec, r); n > 0 && r != corev1.ResourceCPU {
				errs = append(errs, fmt.Errorf("spec.template.mpiJob.launcher.spec asks for %d %s: only workers hold the job's accelerators (the launcher runs mpirun); remove it", n, r))
				break
			}
		}
	}
	if pt := s.Template.PyTorchJob; pt != nil {
		errs = append(errs, rendezvousConfProblems(pt.RendezvousConf)...)
	}
	return errors.Join(errs...)
}

// PodGPUs is the units of a resource a pod spec asks for: the larger of its
// containers' sum and its largest init container, requests or else limits
// (extended resources cannot be overcommitted, so the two are equal when
// both are set). CPU is counted in millicores and rounded up to whole
// cores, so a pod is never counted as taking less than it does. asked is
// false when no container names the resource.
func PodGPUs(spec *corev1.PodSpec, res corev1.ResourceName) (n int64, asked bool) {
	of := func(c *corev1.Container) int64 {
		q, ok := c.Resources.Requests[res]
		if !ok {
			q, ok = c.Resources.Limits[res]
		}
		if !ok {
			return 0
		}
		asked = true
		if res == corev1.ResourceCPU {
			return (q.MilliValue() + 999) / 1000
		}
		return q.Value()
	}
	var sum, init int64
	for i := range spec.Containers {
		sum += of(&spec.Containers[i])
	}
	for i := range spec.InitContainers {
		init = max(init, of(&spec.InitContainers[i]))
	}
	return max(sum, init), asked
}

// WorkerGPUs is WorkerAccelerators of GPUResource (nvidia.com/gpu), the
// resource of every GPU type that names no other.
func (s *TrainingJobSpec) WorkerGPUs() (int, error) { return s.WorkerAccelerators(GPUResource) }

// WorkerAccelerators is the units of its GPU type's resource (GPUs, or
// cores of a CPU type) each worker of the job holds, as Voda counts them:
// spec.gpusPerWorker, else what the worker template asks for, else 1. A
// template that asks for a different number than spec.gpusPerWorker, or
// for none at all, is an error naming both fields: Voda never counts a
// worker as holding fewer than its pod takes.
func (s *TrainingJobSpec) WorkerAccelerators(res corev1.ResourceName) (int, error) {
	field, worker := s.Template.workerTemplate()
	if s.GPUsPerWorker < 0 || s.GPUsPerWorker > api.MaxGPUsPerWorker {
		return 0, fmt.Errorf("spec.gpusPerWorker is %d, must be between 1 and %d", s.GPUsPerWorker, api.MaxGPUsPerWorker)
	}
	if worker == nil {
		return max(int(s.GPUsPerWorker), 1), nil
	}
	if n, _ := PodGPUs(&worker.Spec, GPUResource); res != GPUResource && n > 0 {
		return 0, fmt.Errorf("%s.spec asks for %d %s, but the job's GPU type schedules %s: ask for that instead", field, n, GPUResource, res)
	}
	asked, ok := PodGPUs(&worker.Spec, res)
	switch {
	case !ok:
		return max(int(s.GPUsPerWorker), 1), nil
	case asked < 1:
		return 0, fmt.Errorf("%s.spec asks for %d %s: a worker needs at least one (remove the resource and set spec.gpusPerWorker, or ask for 1 or more)", field, asked, res)
	case asked > api.MaxGPUsPerWorker:
		return 0, fmt.Errorf("%s.spec asks for %d %s per worker, more than %d", field, asked, res, api.MaxGPUsPerWorker)
	case s.GPUsPerWorker != 0 && int64(s.GPUsPerWorker) != asked:
		return 0, fmt.Errorf("spec.gpusPerWorker is %d but %s.spec asks for %d %s per worker: make them equal, or leave one out", s.GPUsPerWorker, field, asked, res)
	}
	return int(asked), nil
}

// workerTemplate returns the worker pod template of the job's runtime and
// the path that names it, nil if there is none.
func (t *TrainingJobTemplate) workerTemplate() (string, *corev1.PodTemplateSpec) {
	if t.MPIJob != nil {
		return "spec.template.mpiJob.worker", &t.MPIJob.Worker
	}
	if t.PyTorchJob != nil {
		return "spec.template.pytorchJob.worker", &t.PyTorchJob.Worker
	}
	return "", nil
}

// Worker returns the worker pod template of the job's runtime, nil if the
// template sets no runtime.
func (t *TrainingJobTemplate) Worker() *corev1.PodTemplateSpec {
	_, w := t.workerTemplate()
	return w
}

// Runtime names the job's runtime: "MPIJob" (Kubeflow mpi-operator, elastic
// Horovod), "PyTorchJob" (Kubeflow training-operator, torchrun), or "" when
// the template sets none.
func (t *TrainingJobTemplate) Runtime() string {
	switch {
	case t.MPIJob != nil:
		return "MPIJob"
	case t.PyTorchJob != nil:
		return "PyTorchJob"
	}
	return ""
}

// rendezvousConfProblems checks torchrun's rendezvous settings: the
// operator joins them as key=value,key=value, so neither part may hold a
// comma (nor a key an equals sign or space), and is_host would take the
// store away from worker 0, where Voda's restarts expect it.
func rendezvousConfProblems(conf map[string]string) []error {
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(conf)) {
		v := conf[k]
		switch {
		case k == "" || strings.ContainsAny(k, ",= \t"):
			errs = append(errs, fmt.Errorf("spec.template.pytorchJob.rdzvConf key %q: want a torchrun rendezvous setting such as last_call_timeout (no commas, equals signs or spaces)", k))
		case k == "is_host":
			errs = append(errs, errors.New("spec.template.pytorchJob.rdzvConf.is_host: Voda keeps torchrun's store on worker 0 (it restarts the whole job when worker 0 must move); remove it"))
		case v == "" || strings.Contains(v, ","):
			errs = append(errs, fmt.Errorf("spec.template.pytorchJob.rdzvConf.%s %q: want a value without commas, e.g. 10", k, v))
		}
	}
	return errs
}

// MaxAccumulation is the most micro-steps Voda splits a step's per-GPU
// batch into when it exceeds spec.batchSize.perGPUMax.
const MaxAccumulation = 8

// BatchConflicts reports what makes a job's batch range impossible on its
// workers of k GPUs each, naming the field: a maximum below the initial
// size, a maximum that cannot give every GPU one sample at maxWorkers, or
// an initial size that minWorkers' GPUs cannot hold in MaxAccumulation
// micro-steps of perGPUMax samples. Nil without spec.batchSize.
func (s *TrainingJobSpec) BatchConflicts(k int) error {
	b := s.BatchSize
	if b == nil {
		return nil
	}
	var errs []error
	if b.Initial < 1 {
		errs = append(errs, fmt.Errorf("spec.batchSize.initial is %d: want the global batch size the job starts at, 1 or more", b.Initial))
	}
	if b.PerGPUMax < 0 {
		errs = append(errs, fmt.Errorf("spec.batchSize.perGPUMax is %d: want the most samples one GPU holds, or 0 for no limit", b.PerGPUMax))
	}
	if b.Max < b.Initial {
		errs = append(errs, fmt.Errorf("spec.batchSize.max %d is below spec.batchSize.initial %d: the range is initial to max", b.Max, b.Initial))
	}
	if len(errs) > 0 || k < 1 {
		return errors.Join(errs...)
	}
	if most := int64(s.MaxWorkers) * int64(k); int64(b.Max) < most {
		errs = append(errs, fmt.Errorf("spec.batchSize.max %d cannot give each of the %d GPUs of maxWorkers %d one sample: raise it to at least %d or lower maxWorkers",
			b.Max, most, s.MaxWorkers, most))
	}
	if b.PerGPUMax > 0 {
		gpus := int64(max(s.MinWorkers, 1)) * int64(k)
		if hold := gpus * int64(b.PerGPUMax) * MaxAccumulation; int64(b.Initial) > hold {
			errs = append(errs, fmt.Errorf("spec.batchSize.initial %d does not fit the %d GPUs of minWorkers %d: at perGPUMax %d in up to %d accumulation steps they hold %d; raise minWorkers or perGPUMax, or lower initial",
				b.Initial, gpus, s.MinWorkers, b.PerGPUMax, MaxAccumulation, hold))
		}
	}
	return errors.Join(errs...)
}
