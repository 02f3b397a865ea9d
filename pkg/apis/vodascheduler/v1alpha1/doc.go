// Package v1alpha1 holds the TrainingJob API (group vodascheduler.io, version
// v1alpha1): the Go types, their generated deep copies, and the scheme
// registration. The CRD YAML generated from these types lives in
// deploy/crds.
//
// A TrainingJob is the source of truth for one elastic training job: its spec
// says what the user asked for, its status everything the scheduler decided
// and counted, so a restarted controller rebuilds its state from TrainingJobs
// alone.
//
// +kubebuilder:object:generate=true
// +groupName=vodascheduler.io
package v1alpha1
