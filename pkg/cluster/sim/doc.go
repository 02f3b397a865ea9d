// Package sim is the simulated cluster backend: it carries out the engine's
// actions in virtual time and models how fast each job trains under its
// allocation. Every start, resize or migration makes a job idle for a
// restart delay (GPU time is still charged); otherwise a job advances at
// one optimizer step per StepSeconds of its current placement shape, or,
// for a job with a Plan (one that tunes its batch size), at the speeds its
// plan gives, segment by segment.
//
// Import rule: the standard library and pkg/api only; it knows nothing of
// Kubernetes, the engine's internals or the data files.
package sim
