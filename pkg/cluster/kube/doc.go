// Package kube is Voda's Kubernetes backend, run by `voda controller`: it
// feeds one scheduler engine per GPU type with what it watches (nodes
// labelled vodascheduler/accelerator, TrainingJobs, their MPIJobs and worker
// pods) and carries out the engines' plans.
//
// The TrainingJob status is the scheduler's record and its desired state:
// an action first writes the job's new phase, allocation and per-worker
// placement into the status, then the job's reconciler converges the child
// MPIJob (create, scale, suspend, resume) and the worker pods (ungate onto
// their nodes once the whole allocation has pods; delete a worker that sits
// on the wrong node, which is a migration). Because every decision is
// persisted before it is carried out, a controller that restarts at any
// moment rebuilds its engines from TrainingJobs alone and carries on.
//
// This is the only package besides the test environment that talks to the
// API server.
package kube
