// Package simulator replays a workload through Voda's real engine
// (pkg/scheduler with pkg/algorithm and pkg/placement) on a simulated
// cluster (pkg/cluster/sim) in virtual time, and measures the result: job
// completion times, queueing, makespan, utilisation, rescales, restarts, and
// the lower bound the policy's class cannot beat.
//
// Events are kept in a heap ordered by (time, sequence); ties are broken by
// job name, so the same inputs always give byte-identical results. Policies
// see oracle information by default: each job's true speedup curve and its
// true remaining time at one GPU, from the model catalog; placement then
// also gets the job's step time on every layout (placement.Input.Throughput).
//
// Import rule: the core packages, pkg/cluster/sim and the standard library;
// no Kubernetes, no net/http.
package simulator
