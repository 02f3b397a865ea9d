// Package model is the simulator's catalog of training job types: for each
// model of the Pollux OSDI'21 simulator study (bert, cifar10, deepspeech2,
// imagenet, ncf, yolov3) it says how long one optimizer step takes on a
// placement at a global batch size (StepSeconds), how many steps finish
// training (Steps) and, for jobs that adapt their batch size, the
// statistical efficiency of a batch as training goes (Efficiency,
// Goodput). LoadProfiles reads the measured profiles; Builtin is a small
// fitted catalog generated from them that needs no data files.
//
// Import rule: the standard library only (go/format, for GenerateBuiltin).
// No clock, no randomness, no goroutines; the only I/O is LoadProfiles
// reading the directory it is given. Catalogs and models are immutable once
// built and safe for concurrent use.
//
// Sources: the Pollux artifact (Qiao et al., "Pollux: Co-adaptive Cluster
// Scheduling for Goodput-Optimized Deep Learning", OSDI'21; github.com/
// petuum/adaptdl, branch osdi21-artifact, commit c793c70, simulator/) as
// restated in shared/traces/pollux-adaptdl/README.md, and
// docs/research/algorithms.md §4.2a. No code was taken from the artifact.
// The per-model constants (local batch range, epochs to finish) are facts
// from its simulator/applications.py; they live in constants.go.
//
// # Step time
//
// On n GPUs the per-GPU batch is local = ceil(B/n). When local exceeds
// MaxLocalBatch, the job accumulates gradients over accum =
// ceil(local/MaxLocalBatch) - 1 extra micro-batches and local becomes
// ceil(B/(n*(accum+1))). A 1-GPU job whose B exceeds the smallest traced
// batch M0 always accumulates at least once (so local = ceil(B/2)), as the
// artifact does. A step then takes
//
//	step_time + accum*(step_time - sync_time)
//
// seconds, an extra micro-batch costing the step without its gradient
// synchronisation. With measured profiles, step_time and sync_time come
// from placements.csv when the placement was measured: placements of up to
// 4 nodes with up to 4 GPUs each, stored under the lexicographically
// smallest rotation of the per-node digit string (see PlacementKey; node
// orders that are not rotations of each other, like 123 and 132, are
// separate measurements and keep their own values). Between measured local
// batches the times are interpolated linearly, and beyond the measured ends
// held at the end values. Nodes with no GPUs are ignored.
//
// # Unmeasured placements
//
// Other placements (more than 4 nodes, or a node with more than 4 GPUs) use
// scalability.csv, measured by (nodes, GPUs) for 6, 8, 12 and 16 nodes: a
// measured (nodes, GPUs) pair is used exactly. Otherwise the artifact
// interpolates linearly over (nodes, GPUs, local batch) through both files;
// this package does a simpler, documented blend instead. Every measured
// (nodes, GPUs) configuration is a curve over the local batch (for 1 to 4
// nodes, the average of the placements with those counts). With the node
// count capped at 16, as the artifact caps it, the blend takes the measured
// node counts just below and just above (the nearest one at the ends), at
// each the two configurations with the nearest GPUs per node (clamped to
// the measured range), and interpolates linearly in GPUs per node, then in
// node count. For example 5 full nodes (20 GPUs) average 4 full nodes and
// 6 full nodes, and one 8-GPU node reads one full 4-GPU node. Numbers for
// such placements may differ slightly from the artifact's.
//
// # Work
//
// Steps(B) applies the artifact's statistical-progress rule: epoch e ends
// when progress, counted in steps at M0, reaches target_e, the smallest
// cumulative `progress` any traced batch reached by the end of epoch e, and
// a step at batch B makes gain_e(B) = (var + sqr) / (var/(B/M0) + sqr)
// progress, with grad_var and grad_sqr of epoch e interpolated linearly in
// the batch between the two nearest traced batches (clamped outside them).
// So
//
//	Steps(B) = Σ_e (target_e - target_{e-1}) / gain_e(B)
//
// over the model's epochs to finish. For a job that keeps one batch size
// this is exactly the number of steps the rule needs (the artifact's
// simulator, advancing in 60-second steps, can differ slightly where a step
// crosses an epoch boundary). The README's
// shortcut, the `iteration` column at the last epoch, is within 2.5% of it
// at 30 of the 33 traced batches of bert, cifar10, deepspeech2, imagenet
// and ncf; the exact rule needs 5.2% and 6.6% more steps for cifar10 at
// 2048 and 4096 and 4.7% more for imagenet at 6400, and for yolov3 3.8%
// more at 32 and 1.10x (B=64) up to 1.58x (B=512) the shortcut's steps.
//
// MaxWorkers(B) is the largest n with B/n >= MinLocalBatch, between 1 and
// 64; ncf, which the artifact pins to one GPU, always gets 1
// (algorithms.md §4.2a).
//
// # The built-in catalog
//
// Builtin holds, per model, ten fitted numbers for the step time and, for
// the work, 11 to 15 (batch, steps) knots and four asymptote numbers, in
// builtin_gen.go, which `go run ./hack/fitcatalog`
// writes from the profiles (GenerateBuiltin); the profiles themselves are
// never copied into the repository. The step-time model follows Pollux's
// (OSDI'21 §3.2): compute time Base + Scale*local^Exp on one GPU, times
// MultiGPU on two or more; synchronisation LocalSyncBase +
// LocalSyncPerGPU*(n-2) on one node and NodeSyncBase + NodeSyncPerGPU*(n-2)
// on several, times TwoNodes on exactly two (the testbed's two-node
// configurations are slower than its three-node ones for most models);
// step = (compute^γ + sync^γ)^(1/γ), with the gradient synchronisation
// time taken as step - compute so accumulation costs compute per
// micro-batch. It is fitted by Levenberg-Marquardt on log step time over
// every measured step time within the model's local batch range, packed
// placements (full 4-GPU nodes but at most one) weighted to half the total.
//
// Measured accuracy of the built-in step time, relative error against the
// profiles: over the measured rows, a median of 4.7% and a p90 of 14.0% on
// packed placements (942 rows) and 4.9% / 15.4% on all placements (6887
// rows); per model the median is 3.2-6.9% and the p90 9.4-17.8%. Through
// StepSeconds on packed placements of 1-16, 24, 32, 48 and 64 GPUs at every
// traced batch up to MaxWorkers, the median is 3.9% and the p90 12.3% (per
// model: median 3.0-8.3%, yolov3 the worst). The tests require a median of
// at most 10% and a p90 of at most 20% per model. For scale, two
// measurements of the same node sizes in orders that are not rotations of
// each other differ by a median of 3-7% and a p90 of 8-18%.
//
// The built-in Steps interpolates, linearly in log-batch and log-steps,
// knots computed with the exact rule at every traced batch and the
// geometric midpoint of each pair of neighbours; outside the traced range
// the exact rule is A + B*M0/batch (the gradient statistics are clamped),
// stored as two numbers per side. It is within 0.5% of the exact rule at
// every batch (exact at the knots up to six significant digits).
//
// The fit is deterministic and the generated numbers are rounded to six
// significant digits, so regenerating on the same profiles reproduces the
// file byte for byte; a test checks it. (A CPU architecture that fuses
// floating-point multiply-adds might, rarely, round one digit differently.)
//
// # Goodput
//
// A job that adapts its batch size is scheduled by goodput (goodput.go):
// Efficiency gives the statistical efficiency of a batch in an epoch from
// the gradient statistics, Goodput divides it by the step time, BestBatch
// searches a batch range for the most goodput on a placement, and Epoch
// and Work place a job's statistical progress in its epochs. The built-in
// catalog keeps, per model, a summary of the statistics (fittedNoise): the
// share of the work done by the end of each of 8 equal stretches of epochs
// and, per stretch and traced batch, the noise scale that makes a fixed
// batch take exactly the steps the epoch-by-epoch statistics give there,
// so its fixed-batch work is that of Steps to the six digits it keeps.
//
// # Performance
//
// StepSeconds takes 50-70 ns and does not allocate once warm (150-350 ns
// uncached): both catalogs memoise it per (placement, batch) in a bounded
// concurrent cache, which never changes a result. Steps takes about 0.5 µs
// with profiles (one pass over the epochs) and 35 ns built in.
package model
