package algorithm

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// HeSRPT is Voda's own policy for mean job completion time with elastic
// jobs whose speedup flattens. It keeps the rule of heSRPT (Berg, Vesilo
// and Harchol-Balter, "heSRPT: Parallel Scheduling to Minimize Mean
// Slowdown", Performance Evaluation 2020, and "Optimal Resource Allocation
// for Elastic and Inelastic Jobs", SPAA 2020): with concave speedups the
// optimum maximises, at every instant, a weighted sum of the jobs'
// throughputs in which shorter jobs weigh more, so they get larger shares
// and finish first, while no job gets GPUs past the point where they buy
// less than they would elsewhere. Li, Ju, Eryilmaz and Shroff ("Optimal
// Parallel Scheduling under Concave Speedup Functions", 2025) show the
// same form for general concave curves. On top of it:
//
//   - Weights. A job weighs (remaining work)^−Exponent, its remaining time
//     at one worker times its GPUs per worker; unknown remaining work counts
//     as the mean of the known, a typical job's (a job nothing is known of
//     is, in expectation, one of the jobs seen; counting it as the longest
//     left the first jobs of a new kind waiting for hours, docs/evaluation.md).
//     Exponent 1 is close to SRPT, 0 is throughput maximisation (as FfDL
//     Optimizer); 0.3 measured best on the Pollux workloads used for
//     tuning (docs/evaluation.md).
//   - Measured curves, not power laws. Each job's speedup curve is replaced
//     by its upper concave hull over the sizes it may take, so a job never
//     grows past its knee (a curve that falls after one node is never
//     climbed) and a dip before a higher point is crossed in one step, the
//     look-ahead AFS-L lacks.
//   - Sizes that pack. When every node has the same number of GPUs, a job
//     explores only sizes whose GPUs divide a node or are whole nodes (1,
//     2, 4 and multiples of 4 on 4-GPU nodes), or its minimum: such sizes
//     always tile the nodes, so placement need not split a job across
//     nodes where the curve assumed one (buddy allocation's argument), and
//     what a job reports there is its curve. A job also takes any size
//     whose speed is known (Job.Measured: measured by the job or its
//     category, or given): with exact curves a size that does not tile is
//     sometimes the best (CIFAR-10 at 11 GPUs), while a guessed one sends
//     jobs to sizes that span nodes they do not need, where the smooth
//     model overrates them (YOLOv3 at 5 to 7 GPUs). On the Pollux
//     workloads at 1.0× load with estimated information, tiling sizes took
//     HeSRPT from 3 031 to 2 924 s; with exact curves, tiling alone cost
//     0.2–2% (docs/policies.md).
//   - The greedy. GPUs go, a hull segment at a time, to the largest weighted
//     gain per GPU, weight × slope / GPUs per worker; a segment that does
//     not fit whole is cut to the largest allowed size that does. The
//     segments before the first that does not fit are found at once by a
//     selection, not one by one from a heap (hesrpt_greedy.go).
//   - Restart cost, weighed as Optimus, AFS and Sia do in their own terms:
//     a running job's segments up to its current size count (1+Hysteresis)
//     times, so it is shrunk only for a clearly better use; a growth is
//     kept only if the throughput it adds over the time the new size is
//     expected to hold (the job's remaining time at it, capped at Horizon)
//     beats what the RestartCost seconds of idling lose, (S(new) − S(cur))
//     × (hold − cost) > cost × S(cur); a job that fails keeps its size and
//     the greedy runs again without it. A running job with less than three
//     RestartCosts of work left keeps what it has.
//   - Jobs the greedy blocks. The greedy gives GPUs by value per GPU, so a
//     job whose minimum is large (a rigid job, or one of several-GPU
//     workers) can find its room taken by smaller jobs worth more per GPU
//     but far less in all, and the GPUs it leaves sit idle: an 8-GPU job
//     preempted so that a 1-GPU job runs on one of 8 GPUs. For the few
//     jobs left without GPUs that could be worth it (hesrpt_unblock.go),
//     the greedy runs again with the job's minimum granted first, and the
//     better allocation by the policy's own objective is kept: the
//     weighted throughput the greedy maximises, a running job's current
//     size counting (1+Hysteresis) times, less, for every running job it
//     preempts, the RestartCost seconds of its work spread over the time
//     it is expected to keep running (its remaining time, capped at
//     Horizon), so a job is preempted only when the gain over that time
//     pays for its restart, as for resizes.
//   - No starvation. A job's weight is multiplied by 1 + waited/Aging, with
//     waited the seconds since submission not spent running, so a job that
//     waits is, after a finite time, ahead of any job with at least a second
//     of work left.
//
// The result is deterministic: ties go to the smaller job ID, whatever the
// order of the snapshot, and the rounds are bounded (at most four greedy
// passes).
type HeSRPT struct {
	Config HeSRPTConfig
}

// HeSRPTConfig holds HeSRPT's parameters.
type HeSRPTConfig struct {
	// Exponent is how strongly shorter jobs are preferred (≥ 0).
	Exponent float64
	// RestartCost is the seconds of work a resize is assumed to cost (the
	// restart itself plus a margin against flapping).
	RestartCost float64
	// Hysteresis is the extra weight a running job's current size carries.
	Hysteresis float64
	// Horizon caps, in seconds, how long a new size is expected to hold.
	Horizon float64
	// Aging is the waiting time, in seconds, that doubles a job's weight;
	// 0 turns aging off.
	Aging float64
}

// DefaultHeSRPT returns the parameters tuned on workloads 1–4 of the
// Pollux traces (docs/evaluation.md reports workloads 5–8 apart).
func DefaultHeSRPT() HeSRPTConfig {
	return HeSRPTConfig{Exponent: 0.3, RestartCost: 60, Hysteresis: 0.2, Horizon: 3600, Aging: 86400}
}

var _ Policy = HeSRPT{}

// Name implements Policy.
func (HeSRPT) Name() string { return NameHeSRPT }

// hsJob is a job's state in one allocation. The fields the greedy reads
// on every step are kept here, and the hulls of all jobs in two buffers
// (hsState.hx and hy), so that a step touches little memory.
type hsJob struct {
	w    float64 // weight per GPU: per worker, times (k/kmin)^−(1+Exponent)
	last float64 // the value of the segment granted last (+Inf: none)
	n    int     // workers granted so far
	// The sizes below are 32-bit (Narrow holds a larger one at 2³¹−1, far
	// past any hull a round could build), so the state is 64 bytes a job,
	// not 80.
	lo, hi  int32 // the job's hull is hx[lo:hi] and hy[lo:hi]
	next    int32 // index in the hull of the next vertex to reach
	k       int32 // GPUs per worker
	i       int32 // the job's index in the snapshot (and in hsState.st)
	cap     int32 // largest size allowed this round
	floor   int32 // size the job keeps whatever happens (0: none)
	workers int32 // workers running now
	top     int32 // the job's fastest size it may take
	held    int32 // the size a growth to was found not worth it (0: none)
}

// hsState is one allocation: the jobs and their hulls.
type hsState struct {
	jobs []Job // the snapshot's
	st   []hsJob
	// The jobs' hulls, vertex by vertex (hsJob.lo and hi): the workers
	// and the speedup there, apart, so that a vertex takes 12 bytes and
	// not 16 (at 100 000 jobs, 1.4 million vertices a round).
	hx    []int32
	hy    []float64
	node  int
	spare []hsSeg // sort's buffer
	// candidates' GPUs and segments per band, reused by every pass.
	bandGPUs, bandSegs []int32
	// dropFor's buffers, reused from one trial to the next.
	victims []victim
	others  []int
	forced  []forcedSize
	// version counts the allocations unblock keeps; losses (dropFor's,
	// ordered as a heap) and low (lowest's) hold for version lossesAt−1
	// and lowAt−1 (0: never computed), cands (candidate's, for waiting and
	// for preempted jobs) for the version they were computed at.
	version  int
	losses   []victim
	lossesAt int
	cands    [2]candidateList
	low      float64
	lowAt    int
}

// job is a's job in the snapshot.
func (hs *hsState) job(a *hsJob) *Job { return &hs.jobs[a.i] }

// Allocate implements Policy.
func (p HeSRPT) Allocate(s Snapshot) (Result, error) { return allocate(p, s) }

func (p HeSRPT) decide(s *Snapshot, d *Decision) error { return p.decideBy(s, d, true) }

// decideBy is decide, with the greedy's first phase on or off (see fill).
func (p HeSRPT) decideBy(s *Snapshot, d *Decision, leading bool) error {
	cfg := p.Config.sane()
	hs := newHSState(s, cfg)
	st := hs.st
	// Jobs that keep their size take it first, by ID.
	var floors []int
	for i := range st {
		if st[i].floor > 0 {
			floors = append(floors, i)
		}
	}
	slices.SortFunc(floors, func(x, y int) int { return cmp.Compare(hs.jobs[x].ID, hs.jobs[y].ID) })
	var c capacity
	h := hsHeap{q: make([]hsItem, 0, len(st)), jobs: s.Jobs}
	var segs []hsSeg // the greedy's candidates (fill), grown as needed
	pass := func(forced []forcedSize) capacity {
		for round := 0; ; round++ {
			c = newCapacity(s)
			for i := range st {
				st[i].n, st[i].next, st[i].last = 0, 1, math.Inf(1)
			}
			for _, i := range floors {
				a := &st[i]
				if c.fits(int(a.k), int(a.floor)) {
					a.n = int(a.floor)
					c.take(int(a.k), a.n)
					a.next = -1 // kept: not in the greedy
				}
			}
			for _, f := range forced {
				hs.force(&st[f.job], f.n, &c)
			}
			hs.fill(&c, cfg.Hysteresis, &h, &segs, leading)
			if !hs.breakEven(cfg) || round == 3 {
				break
			}
		}
		for i := range st {
			if a := &st[i]; a.n > int(a.cap) {
				a.held, a.n = int32(a.n), int(a.cap) // a growth the last round found not worth it
			}
		}
		return c
	}
	c = hs.unblock(s, cfg, pass(nil), pass)
	for i := range st {
		a := &st[i]
		j := hs.job(a)
		d.set(i, a.n, a.reason(j, &c, cfg.finishing(j)))
	}
	return nil
}

// newHSState weighs the snapshot's jobs and builds their hulls.
func newHSState(s *Snapshot, cfg HeSRPTConfig) hsState {
	hs := hsState{jobs: s.Jobs, st: make([]hsJob, len(s.Jobs)), node: uniformNode(s.NodeGPUs)}
	vertices := 0
	for i := range s.Jobs {
		vertices += max(s.Jobs[i].Max-s.Jobs[i].Min, 0) + 2
	}
	hs.hx, hs.hy = make([]int32, 0, vertices), make([]float64, 0, vertices)
	unknown, kmin := unknownWork(s.Jobs), smallestWorker(s.Jobs)
	for i := range s.Jobs {
		j := &s.Jobs[i]
		a := &hs.st[i]
		a.i, a.cap, a.k, a.workers = int32(i), Narrow(j.Max), int32(j.k()), Narrow(j.Workers)
		w, perGPU := cfg.weight(j, s.Now, unknown, kmin)
		a.w = w * perGPU
		// A job nearly done keeps its size, if it is one it may run at: a
		// snapshot may hold a running job outside its range (its range
		// changed), and the allocation must not be.
		if j.Workers >= j.Min && j.Workers <= j.Max && j.remaining() < cfg.finishing(j)*j.S(j.Workers) {
			a.floor = a.workers
		}
		hs.hull(a)
		a.top = hs.hx[a.hi-1]
	}
	return hs
}

// sane returns the defaults for the zero value and replaces parameters
// out of range by the defaults.
func (c HeSRPTConfig) sane() HeSRPTConfig {
	d := DefaultHeSRPT()
	if c == (HeSRPTConfig{}) {
		return d
	}
	if !(c.Exponent >= 0) || math.IsInf(c.Exponent, 0) {
		c.Exponent = d.Exponent
	}
	if !(c.RestartCost >= 0) || math.IsInf(c.RestartCost, 0) {
		c.RestartCost = d.RestartCost
	}
	if !(c.Hysteresis >= 0) || math.IsInf(c.Hysteresis, 0) {
		c.Hysteresis = d.Hysteresis
	}
	if !(c.Horizon > 0) {
		c.Horizon = d.Horizon
	}
	if !(c.Aging >= 0) || math.IsInf(c.Aging, 0) {
		c.Aging = d.Aging
	}
	return c
}

// finishing is the work left, in seconds at a job's current size, under
// which a running job keeps its size: three restarts.
func (c HeSRPTConfig) finishing(j *Job) float64 { return 3 * c.restartCost(j) }

// restartCost is what a restart of j costs: its own, else the policy's.
func (c HeSRPTConfig) restartCost(j *Job) float64 {
	if j.RestartCost > 0 && !math.IsInf(j.RestartCost, 1) {
		return j.RestartCost
	}
	return c.RestartCost
}

// uniformNode returns the GPUs of every node when all nodes have the same
// number, else 0.
func uniformNode(nodes []int) int {
	if len(nodes) == 0 {
		return 0
	}
	for _, g := range nodes[1:] {
		if g != nodes[0] {
			return 0
		}
	}
	return nodes[0]
}

// weight is a job's weight per worker and the factor that turns a
// worker's weighted gain into a GPU's, relative to the smallest workers of
// the snapshot (kmin GPUs). The weight is computed per worker and scaled
// to GPUs last, by exactly 1 when all workers are alike, so that jobs of
// one worker size rank exactly as they would with one-GPU workers.
func (cfg HeSRPTConfig) weight(j *Job, now time.Time, unknown float64, kmin int) (w, perGPU float64) {
	rem := max(j.remaining(), 1e-9)
	if math.IsInf(rem, 1) {
		rem = unknown / float64(j.k())
	}
	w = math.Pow(rem, -cfg.Exponent)
	if cfg.Aging > 0 {
		waited := now.Sub(j.Submitted).Seconds() - j.Executed
		w *= 1 + max(waited, 0)/cfg.Aging
	}
	if j.k() == kmin {
		return w, 1
	}
	return w, math.Pow(float64(j.k())/float64(kmin), -1-cfg.Exponent)
}

// smallestWorker is the fewest GPUs a worker of the jobs holds.
func smallestWorker(jobs []Job) int {
	k := 0
	for i := range jobs {
		if k == 0 || jobs[i].k() < k {
			k = jobs[i].k()
		}
	}
	return max(k, 1)
}

// unknownWork is the work assumed for a job whose remaining time is
// unknown: the mean of the known (any value when none is known: all jobs
// then weigh the same).
func unknownWork(jobs []Job) float64 {
	sum, known := 0.0, 0
	for i := range jobs {
		if w := jobs[i].remaining() * float64(jobs[i].k()); !math.IsInf(w, 1) {
			sum += w
			known++
		}
	}
	if known == 0 || sum == 0 {
		return 1
	}
	return sum / float64(known)
}

// packs reports whether n workers of j are a size HeSRPT hands out on
// nodes of node GPUs (0: any size): one that tiles the nodes, the job's
// minimum, or a size whose speed is known.
func packs(j *Job, n, node int) bool {
	if node == 0 || n == j.Min {
		return true
	}
	if j.measuredAt(n) {
		return true
	}
	g := n * j.k()
	return g <= node && node%g == 0 || g%node == 0
}

// hull sets the job's hull to the upper concave hull of (0, 0) and
// (n, S(n)) over the sizes n in [Min, cap] that pack, dropping every size
// no faster than a smaller one. cap itself is kept when it is the job's
// current size, so a job held at its size is not rounded down.
func (hs *hsState) hull(a *hsJob) {
	j, limit := hs.job(a), int(a.cap)
	lo := len(hs.hx)
	hs.hx, hs.hy = append(hs.hx, 0), append(hs.hy, 0)
	best := 0.0
	for n := j.Min; n <= limit; n++ {
		if !packs(j, n, hs.node) && !(n == limit && n == j.Workers) {
			continue
		}
		if s := j.S(n); s > best {
			best = s
			p := hullVertex{n, s}
			for len(hs.hx)-lo >= 2 && !above(hs.vertex(int32(len(hs.hx)-2)), hs.vertex(int32(len(hs.hx)-1)), p) {
				hs.hx, hs.hy = hs.hx[:len(hs.hx)-1], hs.hy[:len(hs.hy)-1]
			}
			hs.hx, hs.hy = append(hs.hx, int32(n)), append(hs.hy, s)
		}
	}
	a.lo, a.hi = int32(lo), int32(len(hs.hx))
}

// vertex is the hull vertex at i of hx and hy.
func (hs *hsState) vertex(i int32) hullVertex {
	return hullVertex{int(hs.hx[i]), hs.hy[i]}
}

// value is the weighted gain per GPU of the job's next hull segment. It is
// never above the value of the segment before (which rounding could
// otherwise do on nearly collinear vertices), so that the greedy's order
// is one sequence (see fill).
func (hs *hsState) value(a *hsJob, hysteresis float64) float64 {
	u, v := hs.vertex(a.lo+a.next-1), hs.vertex(a.lo+a.next)
	val := a.w * (v.y - u.y) / float64(v.x-u.x)
	if v.x <= int(a.workers) {
		val *= 1 + hysteresis
	}
	return min(val, a.last)
}

// grow grants the job its next hull segment, or the largest packing part
// of it that fits; it reports whether the job can take more.
func (hs *hsState) grow(a *hsJob, c *capacity) bool {
	v := hs.vertex(a.lo + a.next)
	k := int(a.k)
	if c.fits(k, v.x-a.n) {
		c.take(k, v.x-a.n)
		a.n = v.x
		a.next++
		return a.lo+a.next < a.hi
	}
	for m := c.most(k, v.x-a.n-1); m > 0; m-- {
		n := a.n + m
		if j := hs.job(a); n >= j.Min && packs(j, n, hs.node) && j.S(n) > j.S(a.n) {
			c.take(k, m)
			a.n = n
			break
		}
	}
	return false
}

// breakEven holds every running job whose growth does not pay for its
// restart at its current size, and reports whether any was held.
func (hs *hsState) breakEven(cfg HeSRPTConfig) bool {
	held := false
	for i := range hs.st {
		a := &hs.st[i]
		cur := int(a.workers)
		if cur == 0 || a.n <= cur || int(a.cap) <= cur {
			continue
		}
		j := hs.job(a)
		sc, sn := j.S(cur), j.S(a.n)
		hold := min(cfg.Horizon, j.remaining()/sn)
		if rc := cfg.restartCost(j); (sn-sc)*(hold-rc) <= rc*sc {
			a.held, a.cap = int32(a.n), a.workers
			hs.hull(a)
			held = true
		}
	}
	return held
}

// reason says why the job got its allocation, c being what the greedy
// left free and finishing the work left under which a running job keeps
// its size.
func (a *hsJob) reason(j *Job, c *capacity, finishing float64) Reason {
	n := a.n
	r := allocated(j, n)
	switch {
	case n == 0:
		return noRoom(j, j.Min, c)
	case a.next < 0:
		r.Code, r.Seconds = Finishing, Narrow(int(math.Ceil(finishing)))
	case int(a.held) > n && n == int(a.workers):
		r.Code, r.Target = Kept, a.held
	case n >= j.Max:
	case n >= int(a.top):
		r.Code = Fastest
		for m := n + 1; m <= j.Max; m++ {
			if j.S(m) > j.S(n) {
				r.Code = Tiled
				break
			}
		}
	default:
		r.Code, r.Free = Outbid, Narrow(c.free)
	}
	return r
}
