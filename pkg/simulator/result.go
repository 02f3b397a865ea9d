package simulator

import (
	"cmp"
	"container/heap"
	"math"
	"slices"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/cluster/sim"
	"github.com/vodascheduler/voda/pkg/scheduler"
)

// JobResult is what happened to one job.
type JobResult struct {
	Name        string
	Model       string
	GPUs, Batch int
	// Min and Max are the worker range; a worker holds GPUsPerWorker GPUs.
	Min, Max      int
	GPUsPerWorker int
	Submit        float64 // seconds from the trace start
	Start         float64 // first start
	Finish        float64
	JCT           float64
	Queue         float64 // first start − submit
	GPUSeconds    float64
	Rescales      int
	// Restarts counts every restart of the job's workers: the policy's
	// and, for a job that adapts its batch size, the ones for a batch
	// change alone (Retunes).
	Restarts int
	// For a job that adapts its batch size: Adaptive is set, BatchChanges
	// counts the changes of its batch size (at any restart), Retunes the
	// restarts for a batch change alone, and FinalBatch is its last batch
	// (Batch is its first, the workload's).
	Adaptive                          bool
	BatchChanges, Retunes, FinalBatch int
	// QueueName is the job's queue, with queues.
	QueueName string
	// Rho is the job's finish-time fairness (Shockwave): its JCT over its
	// time alone at its requested size times the cluster's contention
	// over its life, max(1, mean jobs present ÷ GPUs).
	Rho float64
}

// Point is the number of GPUs allocated from time T (seconds) on.
type Point struct {
	T    float64
	GPUs int
}

// Result is the outcome of one run.
type Result struct {
	Policy, Workload string
	Jobs             []JobResult
	Timeline         []Point
	GPUs             int
	Makespan         float64
	// UsefulGPUSeconds is Σ work × one-GPU step time: GPU-seconds weighted
	// by each job's scaling efficiency.
	UsefulGPUSeconds float64
	LowerBound       float64
	WallSeconds      float64
	// Adaptive is the number of jobs that adapted their batch size.
	Adaptive int
	// EstimateErrors, with estimated information, holds per number of
	// reports (1, 3, 10) the relative errors of every job's estimated
	// remaining time at one GPU once it had made that many reports.
	EstimateErrors map[int][]float64
	// Events, with Config.RecordEvents, is every submission, action and
	// completion in the order it happened.
	Events []Event
	// Queues is, with queues, how each queue's jobs fared, by name; Quota
	// what taking borrowed GPUs back cost.
	Queues []QueueResult
	Quota  scheduler.QuotaStats
}

// Event is one change in one job's life.
type Event struct {
	T    float64 // seconds from the trace start
	Job  string
	Kind EventKind
	// GPUs is what the job holds from T on.
	GPUs int
	// Reason is the engine's, for actions.
	Reason string
}

// EventKind is what happened: a submission, a completion, or one of the
// engine's actions (the same names as api.ActionKind).
type EventKind string

// Event kinds.
const (
	EventSubmit   EventKind = "Submit"
	EventStart    EventKind = EventKind(api.ActionStart)
	EventScaleIn  EventKind = EventKind(api.ActionScaleIn)
	EventScaleOut EventKind = EventKind(api.ActionScaleOut)
	EventHalt     EventKind = EventKind(api.ActionHalt)
	EventMigrate  EventKind = EventKind(api.ActionMigrate)
	EventFinish   EventKind = "Finish"
	// EventBatch is a restart for a batch size change alone (a job that
	// adapts its batch size; see adaptive.go).
	EventBatch EventKind = "Batch"
)

// EstimateCheckpoints are the numbers of reports after which the
// estimator's accuracy is recorded.
var EstimateCheckpoints = []int{1, 3, 10}

func (r *run) result() Result {
	res := Result{Policy: r.engine.Policy(), Workload: r.w.Name, GPUs: r.cfg.Nodes * r.cfg.GPUsPerNode, Timeline: r.tl, EstimateErrors: r.estErr,
		Events: r.events}
	first, last := math.Inf(1), 0.0
	for _, j := range r.engine.Jobs() {
		ji := r.info[j.ID]
		submit := ji.Submit.Seconds()
		fin := r.finish[j.ID]
		jr := JobResult{
			Name: ji.Name, Model: ji.Model, GPUs: ji.GPUs, Batch: ji.Batch,
			Min: ji.spec.MinWorkers, Max: ji.spec.MaxWorkers, GPUsPerWorker: ji.spec.K(),
			Submit: submit, Start: r.seconds(j.FirstStarted), Finish: fin,
			JCT: fin - submit, GPUSeconds: j.GPUSeconds, Rescales: j.Rescales, Restarts: j.Restarts,
			QueueName: ji.QueueName,
		}
		if a := ji.adapt; a != nil {
			jr.Adaptive, jr.FinalBatch, jr.BatchChanges, jr.Retunes = true, a.batch, a.changes, a.retunes
			jr.Restarts += a.retunes
		}
		jr.Queue = jr.Start - submit
		res.Jobs = append(res.Jobs, jr)
		first, last = min(first, submit), max(last, fin)
		res.UsefulGPUSeconds += ji.steps * ji.oneGPU
	}
	slices.SortFunc(res.Jobs, func(a, b JobResult) int {
		if c := cmp.Compare(a.Submit, b.Submit); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	res.Makespan = last - first
	res.Adaptive = r.adaptive
	if r.adaptive == 0 {
		// The bounds take each job's time at a fixed batch; a job that
		// adapts can beat it, so with such jobs there is none.
		res.LowerBound = r.lowerBound(algorithm.Rigid(res.Policy))
	}
	r.finishTimeFairness(res.Jobs)
	if r.queues != nil {
		res.Quota = r.engine.QuotaStats()
		for i, q := range r.cfg.Queues {
			qr := QueueResult{Name: q.Name, BelowNominal: r.queues.total[i], AloneJCT: math.NaN()}
			for _, j := range res.Jobs {
				if j.QueueName == q.Name {
					qr.Jobs++
					qr.MeanJCT += j.JCT
				}
			}
			if qr.Jobs > 0 {
				qr.MeanJCT /= float64(qr.Jobs)
			}
			res.Queues = append(res.Queues, qr)
		}
	}
	return res
}

// lowerBound is the bound on mean JCT for the policy's class. It starts
// from two bounds (research/algorithms.md §5): the isolated bound (every
// job alone at its best allowed size, plus one restart delay) and the
// capacity bound (preemptive SRPT on one server of capacity G processing
// each job's least GPU-seconds), and combines them (partitionBound): the
// jobs of any subset A take at least their isolated times, and the others
// at least what SRPT gives them on the whole capacity with A gone. It is
// the larger of that and the fluid bound (fluid.go), in which all jobs
// share the G GPUs at once, each paying for speed in GPUs along its curve.
// A job's time at a size is its least over the placements that fit the
// cluster (Model.FastestStepSeconds): a spread placement can be faster.
func (r *run) lowerBound(rigid bool) float64 {
	g := r.cfg.Nodes * r.cfg.GPUsPerNode
	delay := r.cfg.RestartDelay.Seconds()
	var iso []float64
	var tasks []srptTask
	var fluid []fluidJob
	rest := 0.0 // Σ t_j/2 − r_j: from the fluid minimum to a flow time bound
	for _, j := range r.w.Jobs {
		ji := r.info[api.JobID(j.Name)]
		lo, hi, k := ji.spec.MinWorkers, ji.spec.MaxWorkers, ji.spec.K()
		if rigid {
			lo, hi = ji.spec.RequestedWorkers, ji.spec.RequestedWorkers
		}
		best, leastGPUSec := math.Inf(1), math.Inf(1)
		var gpus, speed []float64
		for n := lo; n <= min(hi, g/k); n++ {
			t := ji.steps * ji.model.FastestStepSeconds(n*k, r.cfg.GPUsPerNode, r.cfg.Nodes, j.Batch)
			best = min(best, t)
			leastGPUSec = min(leastGPUSec, float64(n*k)*t)
			gpus, speed = append(gpus, float64(n*k)), append(speed, 1/t)
		}
		iso = append(iso, delay+best)
		tasks = append(tasks, srptTask{release: j.Submit.Seconds(), size: leastGPUSec / float64(g)})
		fluid = append(fluid, fluidJob{R: j.Submit.Seconds() + delay, segs: fluidHull(gpus, speed)})
		rest += best/2 - j.Submit.Seconds()
	}
	n := float64(len(tasks))
	pb := partitionBound(iso, tasks)
	if fb, ok := fluidBound(fluid, float64(g)); ok {
		return max(pb, (fb+rest)/n)
	}
	return pb
}

// partitionBound returns a lower bound on the mean flow time of jobs that
// each take at least iso[i] and share one server on which job i needs
// tasks[i]. For any subset A of the jobs, the flow times sum to at least
// the isolated times of A plus the optimal (SRPT) flow times of the rest
// run alone, since dropping jobs only helps the others. A = ∅ is the
// capacity bound, A = all the isolated bound; from A = ∅ the search moves
// into A the jobs whose isolated time exceeds their flow under SRPT, the
// most exceeding first, halving the group it moves until the sum grows,
// then one at a time (at most 16 moves of O(log n) + 16 SRPT runs each).
// Every subset it tries gives a valid bound, so stopping early loses
// tightness, never validity.
func partitionBound(iso []float64, tasks []srptTask) float64 {
	n := len(tasks)
	if n == 0 {
		return 0
	}
	isoSum := 0.0
	for _, v := range iso {
		isoSum += v
	}
	inA := make([]bool, n)
	isoA := 0.0
	flows := srptFlows(tasks, inA)
	best := 0.0
	for _, f := range flows {
		best += f
	}
	var cands []int
	for range 16 {
		cands = cands[:0]
		for i := range tasks {
			if !inA[i] && iso[i] > flows[i] {
				cands = append(cands, i)
			}
		}
		slices.SortStableFunc(cands, func(a, b int) int { return cmp.Compare(iso[b]-flows[b], iso[a]-flows[a]) })
		moved := false
		try := func(group []int) {
			add := 0.0
			for _, i := range group {
				inA[i], add = true, add+iso[i]
			}
			f := srptFlows(tasks, inA)
			sum := isoA + add
			for i, v := range f {
				if !inA[i] {
					sum += v
				}
			}
			if sum > best {
				best, isoA, flows, moved = sum, isoA+add, f, true
				return
			}
			for _, i := range group {
				inA[i] = false
			}
		}
		for k := len(cands); k >= 1 && !moved; k /= 2 {
			try(cands[:k])
		}
		for k := 1; k < min(len(cands), 16) && !moved; k++ {
			try(cands[k : k+1])
		}
		if !moved {
			break
		}
	}
	return max(best, isoSum) / float64(n)
}

type srptTask struct{ release, size float64 }

// srptFlows returns each task's flow time under preemptive SRPT on one
// unit-speed server, with the tasks marked in skip left out (flow 0).
func srptFlows(tasks []srptTask, skip []bool) []float64 {
	order := make([]int, 0, len(tasks))
	for i := range tasks {
		if skip == nil || !skip[i] {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(tasks[a].release, tasks[b].release) })
	flows := make([]float64, len(tasks))
	h := &remHeap{}
	now, i := 0.0, 0
	for i < len(order) || h.Len() > 0 {
		if h.Len() == 0 && now < tasks[order[i]].release {
			now = tasks[order[i]].release
		}
		for i < len(order) && tasks[order[i]].release <= now {
			t := tasks[order[i]]
			heap.Push(h, remItem{rem: t.size, release: t.release, task: order[i]})
			i++
		}
		top := &(*h)[0]
		// Run the shortest until it finishes or the next release.
		until := now + top.rem
		if i < len(order) && tasks[order[i]].release < until {
			top.rem -= tasks[order[i]].release - now
			now = tasks[order[i]].release
			heap.Fix(h, 0)
			continue
		}
		now = until
		flows[top.task] = now - top.release
		heap.Pop(h)
	}
	return flows
}

type remItem struct {
	rem, release float64
	task         int
}
type remHeap []remItem

func (h remHeap) Len() int           { return len(h) }
func (h remHeap) Less(a, b int) bool { return h[a].rem < h[b].rem }
func (h remHeap) Swap(a, b int)      { h[a], h[b] = h[b], h[a] }
func (h *remHeap) Push(x any)        { *h = append(*h, x.(remItem)) }
func (h *remHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// finishTimeFairness sets every job's Rho. Time alone: the job's work at
// its requested size, its GPUs packed on the fewest nodes. Contention:
// the mean number of jobs present (submitted, not finished) over the
// job's life, divided by the GPUs, at least 1.
func (r *run) finishTimeFairness(jobs []JobResult) {
	type edge struct {
		t float64
		d int
	}
	edges := make([]edge, 0, 2*len(jobs))
	for _, j := range jobs {
		edges = append(edges, edge{j.Submit, 1}, edge{j.Finish, -1})
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if c := cmp.Compare(a.t, b.t); c != 0 {
			return c
		}
		return cmp.Compare(a.d, b.d) // finishes first at a tie
	})
	// times[i] is edge i's time, area[i] the integral of the jobs present
	// up to it, counts[i] the jobs present just after it.
	times := make([]float64, len(edges))
	area := make([]float64, len(edges))
	counts := make([]int, len(edges))
	for i, e := range edges {
		times[i] = e.t
		if i > 0 {
			area[i] = area[i-1] + float64(counts[i-1])*(e.t-edges[i-1].t)
			counts[i] = counts[i-1]
		}
		counts[i] += e.d
	}
	at := func(t float64) float64 {
		i, _ := slices.BinarySearch(times, t)
		if i == 0 {
			return 0
		}
		return area[i-1] + float64(counts[i-1])*(t-times[i-1])
	}
	gpus := float64(r.cfg.Nodes * r.cfg.GPUsPerNode)
	for i := range jobs {
		j := &jobs[i]
		ji := r.info[api.JobID(j.Name)]
		k := ji.spec.K()
		shape := sim.PackedShape(ji.spec.Requested()*k, r.cfg.GPUsPerNode)
		var alone float64
		if ji.adapt != nil {
			alone = adaptiveAlone(ji, shape)
		} else {
			alone = ji.steps * ji.model.StepSeconds(shape, ji.Batch)
		}
		contention := 1.0
		if life := j.Finish - j.Submit; life > 0 {
			contention = max(1, (at(j.Finish)-at(j.Submit))/life/gpus)
		}
		if alone > 0 {
			j.Rho = j.JCT / (alone * contention)
		}
	}
}
