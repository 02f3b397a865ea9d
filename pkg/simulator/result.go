package simulator

import (
	"cmp"
	"container/heap"
	"math"
	"slices"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/cluster/sim"
)

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
	res.LowerBound = r.lowerBound(rigid(res.Policy))
	return res
}

// rigid reports whether a policy runs jobs only at their requested size.
func rigid(policy string) bool {
	switch policy {
	case algorithm.NameFIFO, algorithm.NameSRJF, algorithm.NameTiresias:
		return true
	}
	return false
}

// lowerBound is the bound on mean JCT for the policy's class
// (research/algorithms.md §5): the larger of the isolated bound (every job
// alone at its best allowed size, plus one restart delay) and the capacity
// bound (preemptive SRPT on one server of capacity G processing each job's
// minimum GPU-seconds).
func (r *run) lowerBound(rigid bool) float64 {
	g := r.cfg.Nodes * r.cfg.GPUsPerNode
	delay := r.cfg.RestartDelay.Seconds()
	var iso float64
	var tasks []srptTask
	for _, j := range r.w.Jobs {
		ji := r.info[api.JobID(j.Name)]
		lo, hi, k := ji.spec.MinWorkers, ji.spec.MaxWorkers, ji.spec.K()
		if rigid {
			lo, hi = ji.spec.RequestedWorkers, ji.spec.RequestedWorkers
		}
		best, leastGPUSec := math.Inf(1), math.Inf(1)
		for n := lo; n <= min(hi, g/k); n++ {
			t := ji.steps * ji.model.StepSeconds(sim.PackedShape(n*k, r.cfg.GPUsPerNode), j.Batch)
			best = min(best, t)
			leastGPUSec = min(leastGPUSec, float64(n*k)*t)
		}
		iso += delay + best
		tasks = append(tasks, srptTask{release: j.Submit.Seconds(), size: leastGPUSec / float64(g)})
	}
	n := float64(len(r.w.Jobs))
	return max(iso/n, srptMeanFlow(tasks))
}

type srptTask struct{ release, size float64 }

// srptMeanFlow returns the mean flow time of preemptive
// shortest-remaining-processing-time on one unit-speed server, which is
// optimal for mean flow time.
func srptMeanFlow(tasks []srptTask) float64 {
	if len(tasks) == 0 {
		return 0
	}
	slices.SortFunc(tasks, func(a, b srptTask) int { return cmp.Compare(a.release, b.release) })
	h := &remHeap{}
	now, total, i := 0.0, 0.0, 0
	for i < len(tasks) || h.Len() > 0 {
		if h.Len() == 0 && now < tasks[i].release {
			now = tasks[i].release
		}
		for i < len(tasks) && tasks[i].release <= now {
			heap.Push(h, remItem{rem: tasks[i].size, release: tasks[i].release})
			i++
		}
		top := &(*h)[0]
		// Run the shortest until it finishes or the next release.
		until := now + top.rem
		if i < len(tasks) && tasks[i].release < until {
			top.rem -= tasks[i].release - now
			now = tasks[i].release
			heap.Fix(h, 0)
			continue
		}
		now = until
		total += now - top.release
		heap.Pop(h)
	}
	return total / float64(len(tasks))
}

type remItem struct{ rem, release float64 }
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
