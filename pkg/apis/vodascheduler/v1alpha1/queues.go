package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultLocalQueue is the LocalQueue a namespace's jobs use when they name
// none (spec.queueName empty), if the namespace has one of that name.
const DefaultLocalQueue = "default"

// ClusterQueue is a team's share of the cluster's GPUs: a nominal quota per
// GPU type that its jobs get whenever they want it, and what it may borrow
// from and lend to the other queues of its cohort. Names follow Kueue's
// ClusterQueue (docs/queues.md says where Voda differs).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=cq,categories=voda
// +kubebuilder:printcolumn:name="Cohort",type=string,JSONPath=`.spec.cohort`
// +kubebuilder:printcolumn:name="Nominal",type=integer,JSONPath=`.status.nominal`,description="Nominal quota, GPUs of every type"
// +kubebuilder:printcolumn:name="Used",type=integer,JSONPath=`.status.used`,description="GPUs its jobs hold"
// +kubebuilder:printcolumn:name="Borrowed",type=integer,JSONPath=`.status.borrowed`,description="GPUs held above the nominal quota"
// +kubebuilder:printcolumn:name="Pending",type=integer,JSONPath=`.status.pending`,description="GPUs its waiting jobs need to start"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterQueue struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ClusterQueueSpec   `json:"spec"`
	Status ClusterQueueStatus `json:"status,omitempty"`
}

// ClusterQueueList is a list of ClusterQueues.
//
// +kubebuilder:object:root=true
type ClusterQueueList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterQueue `json:"items"`
}

// ClusterQueueSpec is a queue's quotas and how it shares them.
//
// +kubebuilder:validation:XValidation:rule="(has(self.cohort) && size(self.cohort) > 0) || !has(self.quotas) || self.quotas.all(q, !has(q.borrowingLimit) && !has(q.lendingLimit))",message="borrowingLimit and lendingLimit need spec.cohort: a queue outside a cohort neither borrows nor lends"
type ClusterQueueSpec struct {
	// Cohort is the group of queues that lend each other their idle
	// quota. A queue without one neither lends nor borrows.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Cohort string `json:"cohort,omitempty"`
	// NamespaceSelector chooses the namespaces whose LocalQueues may point
	// at the queue. Empty (or absent) means every namespace.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	// Quotas gives the queue's GPUs per GPU type. A GPU type not listed
	// has a nominal quota of 0: the queue's jobs run on it only on
	// borrowed GPUs.
	// +optional
	// +listType=map
	// +listMapKey=gpuType
	// +kubebuilder:validation:MaxItems=16
	Quotas []GPUQuota `json:"quotas,omitempty"`
	// FairSharing weighs the queue's share of borrowed GPUs.
	// +optional
	FairSharing *FairSharing `json:"fairSharing,omitempty"`
	// Preemption says how the queue takes its quota back.
	// +optional
	Preemption *QueuePreemption `json:"preemption,omitempty"`
}

// GPUQuota is a queue's quota of one GPU type, in GPUs.
//
// +kubebuilder:validation:XValidation:rule="!has(self.lendingLimit) || self.lendingLimit <= self.nominalQuota",message="lendingLimit must not exceed nominalQuota: a queue lends only its own quota"
type GPUQuota struct {
	// GPUType is the type, as nodes' vodascheduler/accelerator label names
	// it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	GPUType string `json:"gpuType"`
	// NominalQuota is the GPUs the queue's jobs get whenever they want
	// them.
	// +kubebuilder:validation:Minimum=0
	NominalQuota int32 `json:"nominalQuota"`
	// BorrowingLimit is the most GPUs above NominalQuota the queue may
	// hold. Absent: any its cohort can lend. Needs a cohort.
	// +optional
	// +kubebuilder:validation:Minimum=0
	BorrowingLimit *int32 `json:"borrowingLimit,omitempty"`
	// LendingLimit is the most of its idle NominalQuota other queues may
	// hold. Absent: all of it. Needs a cohort.
	// +optional
	// +kubebuilder:validation:Minimum=0
	LendingLimit *int32 `json:"lendingLimit,omitempty"`
}

// FairSharing is a queue's weight in sharing what the cohort lends.
type FairSharing struct {
	// Weight scales the queue's share of borrowed GPUs: a queue of weight
	// 2 borrows twice what one of weight 1 does. 0 borrows only what no
	// other queue wants. Default 1.
	// +optional
	Weight *resource.Quantity `json:"weight,omitempty"`
}

// ReclaimPolicy says whether a queue takes back quota others borrowed.
//
// +kubebuilder:validation:Enum=Any;Never
type ReclaimPolicy string

// WithinQueuePolicy says whether a queue's job may be stopped for another
// job of the same queue.
//
// +kubebuilder:validation:Enum=Policy;Never
type WithinQueuePolicy string

// The preemption settings' values.
const (
	ReclaimAny          ReclaimPolicy     = "Any"
	ReclaimNever        ReclaimPolicy     = "Never"
	WithinQueueByPolicy WithinQueuePolicy = "Policy"
	WithinQueueNever    WithinQueuePolicy = "Never"
)

// QueuePreemption says how a queue takes GPUs back.
type QueuePreemption struct {
	// ReclaimWithinCohort is Any (default): when the queue's jobs want
	// quota others borrowed, the borrowers' jobs shrink (their workers
	// above their minimums, the least useful first) and only then stop,
	// within one rescheduling. Never: the queue waits for the borrowers
	// to give the GPUs back as their jobs end. (Kueue's LowerPriority has
	// no meaning here: Voda's jobs have no preemption priority.)
	// +optional
	ReclaimWithinCohort ReclaimPolicy `json:"reclaimWithinCohort,omitempty"`
	// WithinClusterQueue is Policy (default): inside the queue the GPU
	// type's policy orders, sizes and stops jobs as it does on a cluster
	// without queues. Never: a running job of the queue is never stopped
	// for another job of the queue (it may still shrink to its minimum).
	// +optional
	WithinClusterQueue WithinQueuePolicy `json:"withinClusterQueue,omitempty"`
	// ReclaimMinRunTime protects borrowed workers for this long after they
	// started from being taken back for fair sharing between borrowers.
	// It never delays giving a queue its nominal quota back.
	// +optional
	ReclaimMinRunTime *metav1.Duration `json:"reclaimMinRunTime,omitempty"`
}

// ClusterQueueStatus is what the queue's jobs hold and want.
type ClusterQueueStatus struct {
	// Nominal, Used, Borrowed, Lent and Pending add up the GPU types'
	// figures below.
	// +optional
	Nominal int32 `json:"nominal"`
	// +optional
	Used int32 `json:"used"`
	// +optional
	Borrowed int32 `json:"borrowed"`
	// +optional
	Lent int32 `json:"lent"`
	// +optional
	Pending int32 `json:"pending"`
	// RunningJobs and WaitingJobs count the queue's jobs.
	// +optional
	RunningJobs int32 `json:"runningJobs"`
	// +optional
	WaitingJobs int32 `json:"waitingJobs"`
	// GPUTypes is the queue's use of each GPU type that has nodes or a
	// quota in the queue.
	// +optional
	GPUTypes []QueueUsage `json:"gpuTypes,omitempty"`
	// Warnings says what in the spec may not work as meant (a GPU type no
	// node has yet).
	// +optional
	Warnings []string `json:"warnings,omitempty"`
	// ObservedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// QueueUsage is a queue's use of one GPU type, in GPUs.
type QueueUsage struct {
	GPUType string `json:"gpuType"`
	// Nominal is the quota; Used what its jobs hold; Borrowed what they
	// hold above the quota; Lent the part of its idle quota others hold;
	// Pending what its waiting jobs need to start; Budget the most its
	// jobs could hold at the last rescheduling.
	Nominal  int32 `json:"nominal"`
	Used     int32 `json:"used"`
	Borrowed int32 `json:"borrowed"`
	Lent     int32 `json:"lent"`
	Pending  int32 `json:"pending"`
	Budget   int32 `json:"budget"`
	// WeightedShare is its use above its quota as a share of what its
	// cohort can lend, divided by its weight (Kueue's weighted share).
	// +optional
	WeightedShare string `json:"weightedShare,omitempty"`
}

// LocalQueue is a namespace's door to a ClusterQueue: a TrainingJob names
// a LocalQueue of its namespace in spec.queueName (or uses the one named
// "default"), and its GPUs count against that ClusterQueue.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=lq,categories=voda
// +kubebuilder:printcolumn:name="ClusterQueue",type=string,JSONPath=`.spec.clusterQueue`
// +kubebuilder:printcolumn:name="Running",type=integer,JSONPath=`.status.runningJobs`
// +kubebuilder:printcolumn:name="Waiting",type=integer,JSONPath=`.status.waitingJobs`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type LocalQueue struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   LocalQueueSpec   `json:"spec"`
	Status LocalQueueStatus `json:"status,omitempty"`
}

// LocalQueueList is a list of LocalQueues.
//
// +kubebuilder:object:root=true
type LocalQueueList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LocalQueue `json:"items"`
}

// LocalQueueSpec names the ClusterQueue.
type LocalQueueSpec struct {
	// ClusterQueue is the ClusterQueue the namespace's jobs use through
	// this LocalQueue.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ClusterQueue string `json:"clusterQueue"`
}

// LocalQueueStatus counts the jobs that use the LocalQueue.
type LocalQueueStatus struct {
	// +optional
	RunningJobs int32 `json:"runningJobs"`
	// +optional
	WaitingJobs int32 `json:"waitingJobs"`
	// Message says why the queue's jobs cannot run, when they cannot (its
	// ClusterQueue is missing or does not admit the namespace).
	// +optional
	Message string `json:"message,omitempty"`
}
