// Package algorithm holds Voda's scheduling policies: pure functions from a
// Snapshot (the time, the GPUs, and a view of every waiting or running job)
// to a Result (GPUs per job, each 0 or within the job's [Min, Max], plus a
// reason per job). Allocate returns it keyed by job ID; Decide returns it
// as a Decision, in snapshot order, reusing the Decision's buffers from one
// call to the next, which is what the engine uses at 100 000 jobs.
//
// The nine policies are FIFO, ElasticFIFO, SRJF, ElasticSRJF, Tiresias,
// ElasticTiresias, FfDLOptimizer and AFS-L, from the original Voda and its
// papers, and HeSRPT, Voda's own. Each type's comment cites its
// source and lists where Voda deviates from it and from the original Voda
// scheduler. New and Canonical resolve user-supplied names.
//
// Import rule: the standard library and pkg/api only. No clock, no logging,
// no goroutines, no Kubernetes, no net/http. Policies never panic on bad
// input: an invalid snapshot, configuration or result is an error, and the
// engine keeps its previous plan.
package algorithm
