// Package placement decides on which node every worker of every job runs.
// Given the GPUs each job gets, the nodes and where the workers run now,
// Place returns a node per worker index, the workers that must migrate, and
// the jobs that must restart whole. It keeps jobs on few nodes, leaves big
// holes for big jobs, and moves as few workers as it can.
//
// Import rule: the standard library and pkg/api only. No clock, no logging,
// no goroutines, no Kubernetes, no net/http. Place is a pure function: it
// never reads the time, never depends on map iteration order or on the order
// of Input.Nodes, and reports bad input as an error (ErrInvalidInput,
// ErrOverCapacity) instead of panicking.
//
// # Algorithm
//
// A worker holds its job's GPUsPerWorker GPUs (k, default 1), always all on
// one node; capacities and loads below are in GPUs, counts in workers.
// Worker indices matter: when a job shrinks from
// n to m workers the training operator deletes indices m..n-1, and when it
// grows, indices n..m-1 are new pods. So the workers that can stay are the
// "survivors", indices below min(n, m) on nodes that still exist.
//
//  1. Keep. A job whose size did not change and whose nodes all exist stays
//     exactly where it is and its GPUs are taken off the free capacity.
//  2. Pack. The other jobs (resized, new, or hit by a lost node) are packed
//     best-fit-decreasing onto virtual copies of the nodes that hold only
//     the capacity left free: largest workers first, then largest job
//     (ties by ID); a job goes whole onto the node with the fewest free GPUs
//     that holds it; if no node can, it fills the node with the most free
//     GPUs with as many whole workers as it holds and carries on.
//     Two deviations keep survivors in place: a "home" node, one that holds
//     the whole job and already runs some of its survivors, beats best fit,
//     and jobs that have a home are packed in a first pass before the others
//     so a larger newcomer cannot take that room; a job that must span nodes
//     starts on its survivors' node when that costs it no extra node.
//  3. Match. The virtual nodes are laid onto the real ones by a maximum-score
//     assignment (the Hungarian method, hungarian.go), where the score of
//     virtual node v on real node r is Σ over jobs of min(workers on v,
//     survivors on r) and v may only go to r if r's free GPUs hold v's load.
//     Since every virtual node is a copy of a real one, laying each on its
//     own node is always allowed, so a complete assignment exists and no
//     node is ever overfilled (the original Voda matched by score alone and
//     could lay a layout onto a node too small for it).
//  4. Number. Per job, a survivor keeps its node while the job has room left
//     there (lowest indices first); the other indices fill the remaining
//     room in node name order. This keeps exactly min(survivors, workers)
//     survivors on each node, the most any numbering can.
//  5. Compact (compact.go). A job left on more nodes than the fewest that
//     could hold it (a YOLOv3-like job on 2+2 GPUs runs about half as fast
//     as on 4 in one node) is gathered when it fits on one node: Place
//     looks for the node where moving the fewest GPUs of smaller unchanged
//     jobs, each lying whole on that node, frees room for the whole job,
//     and places again with those jobs moved out (each must land whole on
//     one node). The result is kept only if the jobs then span fewer nodes
//     in all, and the GPUs moved must not exceed the gathered job's. Up to
//     eight spread jobs are tried, largest first. An unchanged job that is
//     itself spread may be gathered the same way (it restarts). With
//     Input.Throughput, a job is gathered only if it rates one node faster
//     than its layout.
//  6. Reshape (shape.go), only with Input.Throughput: a rate per job and
//     layout, such as the simulator reads from measured profiles, in which
//     a spread layout is sometimes much faster (BERT steps in 1.41 s on
//     2+2+2+2 GPUs and in 2.49 s on 4+4). Largest first, each job placed
//     anew moves to the layout it rates fastest among those its own GPUs
//     and the free ones allow, if 2% faster than the packing's; an
//     unchanged job moves if 25% faster than where it runs (it restarts).
//     The layouts are the partitions of the job's workers into per-node
//     counts, most compact first, that pass Hall's condition on the nodes'
//     room (a node that holds a part holds every smaller one), at most
//     4 096 steps of the search per job; each part then goes to the node
//     that keeps most of the job's survivors, then to the one with least
//     room that holds it. Jobs step 5 laid whole on a node stay there, and
//     so does a job placed anew that lies whole on a node step 5 emptied.
//  7. Report. Moves lists the survivors whose node changed (a lost node
//     counts); RestartAll marks jobs whose survivors all move, since their
//     launcher then loses every worker.
//
// The output maps are never nil; Moves and RestartAll only hold jobs with
// moves, or with all survivors moving, respectively.
//
// PlaceJobs decides the same for callers that hold many jobs: it reads the
// jobs, sorted by ID, through a function, and returns only those that do
// not stay exactly where they run, on nodes checked and indexed once
// (NewNodes) for as long as they stay the same. At 100 000 jobs, the maps
// keyed by job ID that Place takes and returns cost more than the placing,
// and indexing 32 768 nodes a tenth of what a round allocates. A caller
// that places every round keeps a Workspace and calls its PlaceJobs: the
// record of every job placed, the forks' lists and the scratch lists are
// then reused rather than allocated again (about 10 MB a round at 100 000
// jobs).
//
// # Trade-offs
//
// Unchanged jobs move only in step 5, a small job to let a larger one sit
// on one node or a spread job to be gathered, and in step 6, for a layout
// rated 25% faster. With one GPU per worker, the
// other jobs always fit in the free GPUs whenever the allocation fits the
// cluster, so fragmentation only ever costs spread, never feasibility; a
// global reshuffle of running jobs would cost every moved job a restart,
// so Place moves no more than the gathered job's own GPUs' worth. On the
// Pollux workloads (16 × 4 GPUs, 60 s rounds) this step cut HeSRPT's mean
// JCT by 3–4% at every load and brought it within 1–2% of a simulator in
// which every job runs at its packed speed whatever its layout
// (docs/evaluation.md). Workers of
// several GPUs are different: the free GPUs may all exist but not k on one
// node. Then, and only then, every job is repacked in one pass, largest
// workers first, still preferring the nodes its survivors run on, and
// unchanged jobs may migrate. When worker sizes divide each other and the
// node sizes (1, 2, 4, 8 GPUs on 8-GPU nodes) that repack always succeeds
// if the GPUs add up: every hole left is a multiple of the next worker's
// size. Otherwise it can fail, and Place returns a NoFitError naming the
// job, which the engine shrinks or holds back before placing again. The one exception is a current placement that no longer
// fits (a node shrank under its workers): unchanged jobs then claim their
// nodes largest first and the ones that no longer fit are packed anew.
//
// Packing prefers compactness over staying put. A job that grows out of its
// node moves whole to a node that holds it (and restarts) rather than
// spanning two nodes, and a job that shrinks may gather onto one of its
// nodes. Place therefore does not find the fewest moves over all layouts;
// on small instances checked by brute force it moves about 1.4% more
// workers than the best layout no more spread than its own.
//
// The matching is exact when the best matching of each connected group of
// scored pairs (the groups are small: a resized job only scores on its own
// nodes) leaves rows that all still fit in the unused nodes, or when the
// whole problem is small enough for one dense Hungarian run. Otherwise,
// which happens when nearly every job changes at once or a group has more
// than blockRows virtual nodes, groups are matched in blocks and the
// lowest-scoring pairs are given up until the other virtual nodes fit: the
// result still never overfills a node, and random tests keep over 99.9% of
// the exact score. This keeps one placement of 4 096 nodes and 8 000 jobs
// within tens of milliseconds, where a dense O(n³) Hungarian over all nodes
// would take some 7·10¹⁰ steps.
package placement
