// Package rest holds the request and response bodies of Voda's REST API
// (/api/v1, served by pkg/server, spoken by pkg/client). Jobs travel as
// TrainingJob objects (pkg/apis/vodascheduler/v1alpha1); everything else is
// defined here. The OpenAPI document at /api/v1/openapi.json describes the
// same shapes.
package rest

import (
	"time"

	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
)

// Error is the body of every response with a status code of 400 or more.
type Error struct {
	// Error says what went wrong and, where it can, what to do about it.
	Error string `json:"error"`
}

// JobList is the body of GET /api/v1/jobs: one page of jobs, sorted by name.
type JobList struct {
	Items []v1alpha1.TrainingJob `json:"items"`
	// Continue, when set, asks for the next page: pass it back as the
	// continue parameter with the same filters.
	Continue string `json:"continue,omitempty"`
}

// Event is one Kubernetes Event about a job.
type Event struct {
	Type    string `json:"type"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
	// Count is how many times it happened between FirstTime and LastTime.
	Count     int32     `json:"count"`
	FirstTime time.Time `json:"firstTime"`
	LastTime  time.Time `json:"lastTime"`
}

// EventList is the body of GET /api/v1/jobs/{name}/events, oldest first.
type EventList struct {
	Items []Event `json:"items"`
}

// Scheduler describes the scheduler of one GPU type.
type Scheduler struct {
	GPUType string `json:"gpuType"`
	// Algorithm and RateLimit are the settings in force: the runtime
	// settings if set and valid, else the controller's defaults.
	Algorithm string `json:"algorithm"`
	RateLimit string `json:"rateLimit"`
	// Parameters are the policy parameters in force that Algorithm reads
	// and that differ from the defaults, as NAME=VALUE: the controller's
	// (--policy-param) with PolicyParams on top.
	Parameters []string `json:"parameters,omitempty"`
	// PolicyParams are the GPU type's own runtime parameters, as set
	// (SchedulerUpdate.PolicyParams).
	PolicyParams []string `json:"policyParams,omitempty"`
	// SettingsError, if set, says why the runtime settings of this GPU type
	// are ignored.
	SettingsError string `json:"settingsError,omitempty"`
	// Nodes and GPUs count the schedulable nodes of the type and their GPUs;
	// AllocatedGPUs the GPUs held by jobs; OtherGPUs the GPUs that pods
	// which are not Voda's hold on those nodes, which Voda leaves alone.
	// GPUs − AllocatedGPUs − OtherGPUs are free.
	Nodes         int `json:"nodes"`
	GPUs          int `json:"gpus"`
	AllocatedGPUs int `json:"allocatedGPUs"`
	OtherGPUs     int `json:"otherGPUs"`
	// Jobs counts the type's jobs per phase (Submitted, Waiting, Running,
	// Completed, Failed, Canceled); phases without jobs are left out.
	Jobs map[string]int `json:"jobs"`
}

// SchedulerList is the body of GET /api/v1/schedulers, sorted by GPU type.
type SchedulerList struct {
	Items []Scheduler `json:"items"`
}

// SchedulerUpdate is the body of PUT /api/v1/schedulers/{gpuType}. A field
// left out keeps its current value.
type SchedulerUpdate struct {
	// Algorithm is a policy name (see `voda policies`), case-insensitive.
	Algorithm string `json:"algorithm,omitempty"`
	// RateLimit is a Go duration such as "30s": the minimum time between two
	// reschedulings.
	RateLimit string `json:"rateLimit,omitempty"`
	// PolicyParams, when present, replace the GPU type's own policy
	// parameters (NAME=VALUE, as `voda policies` lists them); each
	// overrides the controller's value for this type, and an empty list
	// removes them all.
	PolicyParams *[]string `json:"policyParams,omitempty"`
}

// Version is the body of GET /api/v1/version.
type Version struct {
	Version string `json:"version"`
	// Namespace is where jobs submitted through the API are created.
	Namespace string `json:"namespace"`
}

// Deleted is the body of DELETE /api/v1/jobs/{name}.
type Deleted struct {
	Name string `json:"name"`
}

// Queue is one LocalQueue of the API's namespace and the ClusterQueue it
// leads to: what the queue's jobs may hold and hold now (docs/queues.md).
type Queue struct {
	// Name is the LocalQueue's, as a job's spec.queueName names it;
	// Default says it is the one jobs naming none use.
	Name    string `json:"name"`
	Default bool   `json:"default,omitempty"`
	// ClusterQueue is the queue whose quota its jobs count against, and
	// Cohort the group of queues that lend each other idle quota.
	ClusterQueue string `json:"clusterQueue"`
	Cohort       string `json:"cohort,omitempty"`
	// Nominal, Used, Borrowed, Lent and Pending are the ClusterQueue's
	// totals over GPU types, in GPUs; GPUTypes the same per type.
	Nominal  int                   `json:"nominal"`
	Used     int                   `json:"used"`
	Borrowed int                   `json:"borrowed"`
	Lent     int                   `json:"lent"`
	Pending  int                   `json:"pending"`
	GPUTypes []v1alpha1.QueueUsage `json:"gpuTypes,omitempty"`
	// RunningJobs and WaitingJobs count the jobs of this LocalQueue.
	RunningJobs int `json:"runningJobs"`
	WaitingJobs int `json:"waitingJobs"`
	// Message says why the queue's jobs cannot run, when they cannot.
	Message string `json:"message,omitempty"`
}

// QueueList is the body of GET /api/v1/queues, sorted by name.
type QueueList struct {
	Items []Queue `json:"items"`
}
