// Package server is Voda's REST API: submit, list, inspect and delete
// training jobs (also in the original Voda's MPIJob format), and view and
// change the scheduler of each GPU type. It is a thin, stateless layer
// over the Kubernetes API — jobs are TrainingJobs, scheduler settings the
// controller's ConfigMap — served by `voda controller` on every replica.
//
// Callers authenticate with a bearer token, checked by the Kubernetes
// TokenReview API or against a static token file. A job records its
// submitter; users see and delete only their own jobs, members of the admin
// groups everything, and only they change schedulers.
//
// Import rule: pkg/api, pkg/apis, pkg/compat, pkg/cluster/kube (for the
// settings format), client-go and controller-runtime's client; nothing in
// the core imports it.
package server
