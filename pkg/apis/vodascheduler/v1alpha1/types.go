package v1alpha1

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vodascheduler/voda/pkg/api"
)

// Labels, annotations and names Voda puts on the objects it manages.
const (
	// AcceleratorLabel on a node names its GPU type; Voda schedules only
	// nodes that carry it.
	AcceleratorLabel = "vodascheduler/accelerator"
	// JobLabel on an MPIJob and its pods names the TrainingJob they belong to.
	JobLabel = "vodascheduler.io/job"
	// PlacementGate is the scheduling gate on worker pods; Voda removes it
	// once the pod has the node placement chose.
	PlacementGate = "vodascheduler.io/placement"
	// GPUResource is the extended resource of one GPU.
	GPUResource corev1.ResourceName = "nvidia.com/gpu"
)

// Phase is where a training job is in its life.
//
// +kubebuilder:validation:Enum=Submitted;Waiting;Starting;Running;Completed;Failed;Canceled
type Phase string

// The phases of a training job: the engine's (pkg/api), as the API spells
// them. Completed, Failed and Canceled are final.
const (
	PhaseSubmitted = Phase(api.PhaseSubmitted)
	PhaseWaiting   = Phase(api.PhaseWaiting)
	PhaseRunning   = Phase(api.PhaseRunning)
	PhaseCompleted = Phase(api.PhaseCompleted)
	PhaseFailed    = Phase(api.PhaseFailed)
	PhaseCanceled  = Phase(api.PhaseCanceled)
	// PhaseStarting is a job that holds GPUs but not all of whose planned
	// workers run yet (created, being placed, restarting, or stuck): the
	// message says how many run and why the others do not. The engine
	// counts it as running; only the status tells the two apart, so that
	// Running always means every planned worker runs.
	PhaseStarting Phase = "Starting"
)

// Final reports whether the phase is one a job never leaves.
func (p Phase) Final() bool { return api.Phase(p).Final() }

// TrainingJob is an elastic deep-learning training job that Voda schedules:
// it decides how many workers (of spec.gpusPerWorker GPUs each, all on one
// node) the job gets, within the spec's range, and on which nodes they run.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=tj,categories=voda
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Workers",type=integer,JSONPath=`.status.workers`
// +kubebuilder:printcolumn:name="GPUs",type=integer,JSONPath=`.status.gpus`,description="GPUs held: workers × GPUs per worker"
// +kubebuilder:printcolumn:name="GPU-Type",type=string,JSONPath=`.status.gpuType`,description="The GPU type the job is on (spec.gpuType, or the one Voda chose among spec.gpuTypes)"
// +kubebuilder:printcolumn:name="Batch",type=integer,JSONPath=`.status.batch.global`,description="The global batch size in force, for jobs that let Voda choose it (spec.batchSize)"
// +kubebuilder:printcolumn:name="Efficiency",type=integer,JSONPath=`.status.batch.efficiencyPercent`,priority=1,description="Statistical efficiency of the batch in force, percent of an epoch at the initial batch"
// +kubebuilder:printcolumn:name="Waiting",type=string,JSONPath=`.status.waiting`,description="Time spent waiting for GPUs"
// +kubebuilder:printcolumn:name="Running",type=string,JSONPath=`.status.running`,description="Time spent running"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type TrainingJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   TrainingJobSpec   `json:"spec"`
	Status TrainingJobStatus `json:"status,omitempty"`
}

// TrainingJobList is a list of TrainingJobs.
//
// +kubebuilder:object:root=true
type TrainingJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TrainingJob `json:"items"`
}

// TrainingJobSpec is what the user asks for. The scheduling fields cannot
// change once the job exists.
//
// +kubebuilder:validation:XValidation:rule="self.maxWorkers >= self.minWorkers",message="maxWorkers must be at least minWorkers"
// +kubebuilder:validation:XValidation:rule="(has(self.gpuType) && size(self.gpuType) > 0) != (has(self.gpuTypes) && size(self.gpuTypes) > 0)",message="set spec.gpuType (one GPU type) or spec.gpuTypes (several, in order of preference), not both"
// +kubebuilder:validation:XValidation:rule="!has(self.requestedWorkers) || self.requestedWorkers == 0 || (self.requestedWorkers >= self.minWorkers && self.requestedWorkers <= self.maxWorkers)",message="requestedWorkers must lie within [minWorkers, maxWorkers]"
type TrainingJobSpec struct {
	// GPUType selects the nodes (label vodascheduler/accelerator) and the
	// scheduler that runs the job. Set it or GPUTypes.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="gpuType is immutable"
	GPUType string `json:"gpuType,omitempty"`
	// GPUTypes are the GPU types the job accepts, in order of preference:
	// Voda runs it on one of them at a time, chosen from the job's speed
	// on each and each type's load, and may move it to another while it
	// waits (docs/controller.md). Set it or GPUType.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=set
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="gpuTypes is immutable"
	GPUTypes []string `json:"gpuTypes,omitempty"`
	// GPUTypeSpeeds are the job's relative speeds per GPU of each type in
	// GPUTypes, when the user knows them (e.g. v100: 3, k80: 1); a type
	// left out counts as 1.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	GPUTypeSpeeds map[string]resource.Quantity `json:"gpuTypeSpeeds,omitempty"`
	// MinWorkers is the smallest number of workers the job can run with.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="minWorkers is immutable"
	MinWorkers int32 `json:"minWorkers"`
	// MaxWorkers is the largest number of workers the job can use.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="maxWorkers is immutable"
	MaxWorkers int32 `json:"maxWorkers"`
	// GPUsPerWorker is the GPUs each worker holds, all on one node
	// (torchrun's --nproc-per-node). Unset, it is what the worker template
	// asks for (its containers' nvidia.com/gpu limits), or 1 if it asks for
	// none; set, the template must ask for exactly that many or nothing.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1024
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="gpusPerWorker is immutable"
	GPUsPerWorker int32 `json:"gpusPerWorker,omitempty"`
	// RequestedWorkers is the size for a rigid run; non-elastic policies give
	// exactly this many. Unset means minWorkers.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="requestedWorkers is immutable"
	RequestedWorkers int32 `json:"requestedWorkers,omitempty"`
	// Priority is the initial Tiresias queue, 0 being the highest. Other
	// policies ignore it.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="priority is immutable"
	Priority int32 `json:"priority,omitempty"`
	// Epochs is the total number of epochs, for remaining-time estimates.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Epochs int32 `json:"epochs,omitempty"`
	// Category groups similar jobs so that they share runtime history.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Category string `json:"category,omitempty"`
	// QueueName is the LocalQueue of the job's namespace whose
	// ClusterQueue's quota the job's GPUs count against
	// (docs/queues.md). Empty: the namespace's LocalQueue named
	// "default", if any; on a cluster without queues, none.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="queueName is immutable"
	QueueName string `json:"queueName,omitempty"`
	// Submitter is the user who submitted the job through Voda's REST API,
	// as that API authenticated them; it decides who may see and delete
	// the job there. Jobs created with kubectl leave it empty.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="submitter is immutable"
	Submitter string `json:"submitter,omitempty"`
	// BatchSize lets Voda choose the job's global batch size within a
	// range, by goodput (throughput times statistical efficiency, from the
	// gradient statistics the job reports; docs/batch-size.md). Voda
	// renders the batch for every worker count into the workers'
	// environment (VODA_BATCH_SIZES). Unset, the batch size is the job's
	// own business and Voda schedules it by throughput.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="batchSize is immutable"
	BatchSize *BatchSizeSpec `json:"batchSize,omitempty"`
	// Template is the training runtime Voda creates for the job.
	Template TrainingJobTemplate `json:"template"`
}

// BatchSizeSpec is the range of global batch sizes a job lets Voda choose
// from.
//
// +kubebuilder:validation:XValidation:rule="self.max >= self.initial",message="batchSize.max must be at least batchSize.initial"
type BatchSizeSpec struct {
	// Initial is the global batch size the job starts at and its work is
	// counted at: spec.epochs are epochs at this batch size, and a job at
	// a larger one reports the epochs at it its progress is worth.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000000
	Initial int32 `json:"initial"`
	// Max is the largest global batch size Voda may choose. It must give
	// every GPU at least one sample at maxWorkers.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000000
	Max int32 `json:"max"`
	// PerGPUMax is the most samples one GPU holds in a step; a larger
	// per-GPU batch runs as gradient accumulation, in up to 8 micro-steps.
	// Unset or 0: no limit.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000000000
	PerGPUMax int32 `json:"perGPUMax,omitempty"`
}

// TrainingJobTemplate describes the child workload. Exactly one runtime is
// set: mpiJob (Kubeflow mpi-operator, elastic Horovod) or pytorchJob
// (Kubeflow training-operator, PyTorch under torchrun, elastic).
//
// +kubebuilder:validation:XValidation:rule="has(self.mpiJob) != has(self.pytorchJob)",message="set exactly one of template.mpiJob and template.pytorchJob"
type TrainingJobTemplate struct {
	// MPIJob is the template of a kubeflow.org/v2beta1 MPIJob.
	// +optional
	MPIJob *MPIJobTemplate `json:"mpiJob,omitempty"`
	// PyTorchJob is the template of a kubeflow.org/v1 PyTorchJob run
	// elastic: torchrun's c10d rendezvous between minWorkers and maxWorkers
	// nodes, nproc-per-node the job's GPUs per worker.
	// +optional
	PyTorchJob *PyTorchJobTemplate `json:"pytorchJob,omitempty"`
}

// PyTorchContainer is the name the training-operator gives the container it
// passes torchrun's settings (PET_NNODES, PET_RDZV_ENDPOINT, …) to.
const PyTorchContainer = "pytorch"

// PyTorchRestartPolicy is the restart policy of a PyTorchJob's workers.
type PyTorchRestartPolicy string

// The restart policies Voda accepts for PyTorchJob workers.
const (
	PyTorchRestartExitCode  PyTorchRestartPolicy = "ExitCode"
	PyTorchRestartOnFailure PyTorchRestartPolicy = "OnFailure"
	PyTorchRestartNever     PyTorchRestartPolicy = "Never"
)

// PyTorchJobTemplate holds what Voda copies into the PyTorchJob it creates.
// Voda sets the worker replicas, the elastic policy (c10d rendezvous, min
// and max nodes from the worker range, nproc-per-node from the GPUs per
// worker), the scheduling gate and the node of every worker.
type PyTorchJobTemplate struct {
	// MaxRestarts is how many times torchrun restarts the worker group
	// (membership changes count, so every resize is one) before the job
	// fails; unset, 100.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxRestarts *int32 `json:"maxRestarts,omitempty"`
	// BackoffLimit is how many times failed pods are retried before the job
	// fails (runPolicy.backoffLimit; unset uses the operator's default).
	// +optional
	// +kubebuilder:validation:Minimum=0
	BackoffLimit *int32 `json:"backoffLimit,omitempty"`
	// RestartPolicy is what happens to a worker whose torchrun exits by
	// itself: ExitCode (the default) restarts it on an exit code of 128 or
	// more (SIGKILL, OOM kill) and fails the job on 1–127, since torchrun
	// has already spent its own restarts (it also exits 1 when worker 0's
	// rendezvous store goes, which is why Voda restarts the whole job
	// rather than move worker 0 alone); OnFailure restarts it in place
	// always, up to backoffLimit; Never fails the job at once.
	// +optional
	// +kubebuilder:validation:Enum=ExitCode;OnFailure;Never
	RestartPolicy PyTorchRestartPolicy `json:"restartPolicy,omitempty"`
	// RendezvousConf is torchrun's rendezvous configuration (--rdzv-conf,
	// the PyTorchJob's elasticPolicy.rdzvConf), key by key over Voda's
	// defaults: last_call_timeout is 3 (seconds) so that a resize is
	// training again within seconds, not torchrun's 30. Keys are passed on
	// as given; torchrun ignores the ones it does not know.
	// +optional
	RendezvousConf map[string]string `json:"rdzvConf,omitempty"`
	// Worker is the pod template of every worker (one per node, running
	// torchrun); its container named "pytorch" gets torchrun's settings.
	// Voda sets the job's GPUs per worker on that container unless the
	// template asks for GPUs itself.
	Worker corev1.PodTemplateSpec `json:"worker"`
}

// MPIJobTemplate holds what Voda copies into the MPIJob it creates. Voda
// sets the worker replicas, the scheduling gate and the node of every worker;
// the launcher starts once all workers run.
type MPIJobTemplate struct {
	// SlotsPerWorker is the number of MPI slots per worker: unset, one per
	// GPU of the worker (the job's GPUs per worker).
	// +optional
	// +kubebuilder:validation:Minimum=1
	SlotsPerWorker *int32 `json:"slotsPerWorker,omitempty"`
	// MPIImplementation is OpenMPI (the default), Intel or MPICH.
	// +optional
	// +kubebuilder:validation:Enum=OpenMPI;Intel;MPICH
	MPIImplementation string `json:"mpiImplementation,omitempty"`
	// SSHAuthMountPath is where the SSH keys are mounted.
	// +optional
	SSHAuthMountPath string `json:"sshAuthMountPath,omitempty"`
	// BackoffLimit is how many times a failed launcher is retried before
	// the job fails (runPolicy.backoffLimit; unset uses the operator's
	// default).
	// +optional
	// +kubebuilder:validation:Minimum=0
	BackoffLimit *int32 `json:"backoffLimit,omitempty"`
	// Launcher is the pod template of the launcher.
	Launcher corev1.PodTemplateSpec `json:"launcher"`
	// Worker is the pod template of every worker; Voda sets the job's GPUs
	// per worker on its first container unless the template asks for GPUs
	// itself.
	Worker corev1.PodTemplateSpec `json:"worker"`
}

// TrainingJobStatus is everything Voda decided and counted for the job.
// A restarted controller rebuilds its scheduler from it.
type TrainingJobStatus struct {
	// Phase is Submitted, Waiting, Starting, Running, Completed or Failed.
	// Canceled is reserved: Voda never sets it (deleting a job cancels it).
	// +optional
	Phase Phase `json:"phase,omitempty"`
	// GPUType is the type the job is on: spec.gpuType, or the one Voda
	// chose among spec.gpuTypes.
	// +optional
	GPUType string `json:"gpuType,omitempty"`
	// GPUTypeTime is when Voda last chose the type of a job of several
	// types.
	// +optional
	GPUTypeTime *metav1.Time `json:"gpuTypeTime,omitempty"`
	// GPUTypeMoves counts Voda's moves of the job between GPU types while
	// it waited; the least time between two moves doubles with each.
	// +optional
	GPUTypeMoves int32 `json:"gpuTypeMoves,omitempty"`
	// Message says why the job is where it is, e.g. why it waits.
	// +optional
	Message string `json:"message,omitempty"`
	// Workers is the current allocation, in workers.
	// +optional
	Workers int32 `json:"workers,omitempty"`
	// GPUs is the GPUs the allocation holds: workers × GPUs per worker.
	// +optional
	GPUs int32 `json:"gpus,omitempty"`
	// GPUsPerWorker is the GPUs each worker holds, as Voda counts them
	// (spec.gpusPerWorker, or what the worker template asks for).
	// +optional
	GPUsPerWorker int32 `json:"gpusPerWorker,omitempty"`
	// RunningWorkers is how many of the planned workers run on their
	// nodes, as last seen. The phase is Running only when all do.
	// +optional
	RunningWorkers int32 `json:"runningWorkers,omitempty"`
	// Placement is the node of every worker, by worker index.
	// +optional
	// +listType=atomic
	Placement []string `json:"placement,omitempty"`
	// Queue is the Tiresias queue, 0 being the highest.
	// +optional
	Queue int32 `json:"queue,omitempty"`
	// ClusterQueue is the ClusterQueue whose quota the job's GPUs count
	// against, as its LocalQueue named it when Voda admitted it.
	// +optional
	ClusterQueue string `json:"clusterQueue,omitempty"`

	// SubmitTime is when Voda first saw the job.
	// +optional
	SubmitTime *metav1.Time `json:"submitTime,omitempty"`
	// FirstStartTime, LastStartTime and FinishTime are when the job first
	// started, last (re)started and ended.
	// +optional
	FirstStartTime *metav1.Time `json:"firstStartTime,omitempty"`
	// +optional
	LastStartTime *metav1.Time `json:"lastStartTime,omitempty"`
	// +optional
	FinishTime *metav1.Time `json:"finishTime,omitempty"`

	// Counters, in milliseconds, as of AccountedTime.
	// WaitingMillis is the time spent without GPUs.
	// +optional
	WaitingMillis int64 `json:"waitingMillis,omitempty"`
	// RunningMillis is the time spent with GPUs.
	// +optional
	RunningMillis int64 `json:"runningMillis,omitempty"`
	// GPUMillis is the GPU time attained (GPU-milliseconds).
	// +optional
	GPUMillis int64 `json:"gpuMillis,omitempty"`
	// SinceStartGPUMillis is the GPU time since the last start or Tiresias
	// promotion.
	// +optional
	SinceStartGPUMillis int64 `json:"sinceStartGPUMillis,omitempty"`
	// LastRunMillis is the length of the last finished running period and
	// WaitingSinceRunMillis the time waited since then.
	// +optional
	LastRunMillis int64 `json:"lastRunMillis,omitempty"`
	// +optional
	WaitingSinceRunMillis int64 `json:"waitingSinceRunMillis,omitempty"`
	// AccountedTime is when the counters were last brought up to date.
	// +optional
	AccountedTime *metav1.Time `json:"accountedTime,omitempty"`
	// Waiting and Running are WaitingMillis and RunningMillis in words
	// ("5m3s"), for kubectl.
	// +optional
	Waiting string `json:"waiting,omitempty"`
	// +optional
	Running string `json:"running,omitempty"`

	// Rescales counts scale-ins and scale-outs; Restarts resumptions and
	// full migrations; Preemptions halts.
	// +optional
	Rescales int32 `json:"rescales,omitempty"`
	// +optional
	Restarts int32 `json:"restarts,omitempty"`
	// +optional
	Preemptions int32 `json:"preemptions,omitempty"`

	// RemainingSeconds is the estimated remaining time at one worker,
	// when known.
	// +optional
	RemainingSeconds *int64 `json:"remainingSeconds,omitempty"`
	// Progress is what the job reported of its training
	// (POST /api/v1/jobs/{name}/progress); the estimator learns from it.
	// +optional
	Progress *TrainingProgress `json:"progress,omitempty"`
	// Batch is the batch size in force, for a job with spec.batchSize.
	// +optional
	Batch *BatchStatus `json:"batch,omitempty"`
}

// BatchStatus is the batch size of a job that lets Voda choose it.
type BatchStatus struct {
	// Global is the batch size in force: Local × GPUs × Accumulation
	// samples per step (0 while the job holds no GPUs).
	Global int32 `json:"global"`
	// Local is the samples per GPU and micro-step.
	Local int32 `json:"local"`
	// Accumulation is the micro-steps per step.
	Accumulation int32 `json:"accumulation"`
	// EfficiencyPercent is the statistical efficiency at Global: the
	// progress an epoch at it makes, in percent of an epoch at
	// spec.batchSize.initial, as the job's gradient noise scale says.
	EfficiencyPercent int32 `json:"efficiencyPercent"`
	// Sizes is what the workers were given (VODA_BATCH_SIZES): the batch
	// at every worker count, "workers:global:local:accumulation" separated
	// by spaces. It is chosen at each start and whole restart and holds
	// through resizes, so that every worker agrees.
	// +optional
	Sizes string `json:"sizes,omitempty"`
	// Retunes counts the whole restarts for a batch change alone.
	// +optional
	Retunes int32 `json:"retunes,omitempty"`
}

// TrainingProgress sums up a job's progress reports.
type TrainingProgress struct {
	// Epoch is the number of epochs done, as last reported.
	Epoch int32 `json:"epoch"`
	// Reports counts the reports received.
	Reports int32 `json:"reports"`
	// LastReportTime is when the last report arrived.
	// +optional
	LastReportTime *metav1.Time `json:"lastReportTime,omitempty"`
	// EpochTimes is the mean epoch time at each worker count and GPU type
	// reported (one entry per pair; a job of several types may have run at
	// one count on two of them).
	// +optional
	// +listType=atomic
	EpochTimes []EpochTime `json:"epochTimes,omitempty"`
	// NoiseScale is the job's gradient noise scale in samples, from the
	// gradient statistics its reports carry (gradVar / gradSqr), each
	// report weighing as much as all earlier ones together.
	// +optional
	NoiseScale *resource.Quantity `json:"noiseScale,omitempty"`
	// EquivalentEpochs is, for a job that lets Voda choose its batch
	// size, the epochs at spec.batchSize.initial its training is worth,
	// as last reported.
	// +optional
	EquivalentEpochs *resource.Quantity `json:"equivalentEpochs,omitempty"`
}

// EpochTime is the mean time of an epoch at a worker count.
type EpochTime struct {
	// +kubebuilder:validation:Minimum=1
	Workers int32 `json:"workers"`
	// Millis is the mean epoch time in milliseconds.
	// +kubebuilder:validation:Minimum=1
	Millis int64 `json:"millis"`
	// Epochs is how many epochs the mean is over.
	// +kubebuilder:validation:Minimum=1
	Epochs int32 `json:"epochs"`
	// GPUType is the type the epochs ran on, for jobs of several types;
	// empty when not known (the original's metrics files).
	// +optional
	GPUType string `json:"gpuType,omitempty"`
	// Batch is the global batch size the epochs ran at, when reported; a
	// job that lets Voda choose its batch has one entry per batch too.
	// +optional
	Batch int32 `json:"batch,omitempty"`
	// Nodes is how many nodes the workers were on when the epochs were
	// reported (from status.placement, when it held as many workers as the
	// report); 0 when not known. A job's steps are learnt where they ran.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Nodes int32 `json:"nodes,omitempty"`
}

// AcceptedGPUTypes are the types the job may run on, in order of
// preference: spec.gpuTypes, or spec.gpuType alone.
func (s *TrainingJobSpec) AcceptedGPUTypes() []string {
	if len(s.GPUTypes) > 0 {
		return s.GPUTypes
	}
	if s.GPUType == "" {
		return nil
	}
	return []string{s.GPUType}
}

// Speed is the job's relative speed per GPU of type t: spec.gpuTypeSpeeds,
// else 1.
func (s *TrainingJobSpec) Speed(t string) float64 {
	if q, ok := s.GPUTypeSpeeds[t]; ok {
		if v := q.AsApproximateFloat64(); v > 0 {
			return v
		}
	}
	return 1
}

// CurrentGPUType is the type the job is on: the one in its status if the
// job accepts it, else its first accepted type (a job of one type is always
// on it). A job of several types has none until Voda chooses.
func (tj *TrainingJob) CurrentGPUType() string {
	acc := tj.Spec.AcceptedGPUTypes()
	if t := tj.Status.GPUType; t != "" && slices.Contains(acc, t) {
		return t
	}
	if len(acc) == 1 {
		return acc[0]
	}
	return ""
}
