package scheduler

import (
	"errors"
	"fmt"
	"strings"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/placement"
)

// plan runs the policy and the placement on the current state and diffs the
// result against it. It changes nothing but the jobs' messages.
func (e *Engine) plan() (api.Plan, error) {
	// In submission order, from a buffer the policy does not keep.
	snap := algorithm.Snapshot{Now: e.now, GPUs: e.GPUs(), Jobs: e.snap[:0]}
	for _, j := range e.arrival {
		if j.Unschedulable == "" {
			snap.Jobs = append(snap.Jobs, j.view())
		}
	}
	// With workers of several GPUs, policies hand out only workers that
	// fit whole on a node; HeSRPT explores only sizes that tile them.
	snap.NodeGPUs = e.nodeGPUs[:0]
	for _, n := range e.nodeList() {
		snap.NodeGPUs = append(snap.NodeGPUs, n.GPUs)
	}
	e.nodeGPUs = snap.NodeGPUs
	e.snap = snap.Jobs
	defer clear(e.snap) // drop the references to speedup curves until the next round
	e.lastRound = RoundTimes{}
	start := e.stopwatch()
	var res algorithm.Result
	var err error
	if len(e.queues) > 0 {
		res, err = e.allocateQueues(snap)
	} else {
		res, err = e.allocateUnqueued(snap)
	}
	e.lastRound.Algorithm = e.stopwatch().Sub(start)
	if err != nil {
		return api.Plan{}, fmt.Errorf("policy %s: %w", e.policy.Name(), err)
	}
	changed, running := e.needPlacement, 0
	for _, j := range e.active {
		// Formatted only when read (see Job.clone): most rounds change
		// few jobs, and formatting every reason dominated large rounds.
		// A held job keeps the message that says why.
		if j.Unschedulable == "" {
			j.setReason(res.Reasons[j.ID])
		}
		changed = changed || res.Allocation[j.ID] != j.Workers
		if j.Workers > 0 {
			running++
		}
	}
	if !changed {
		// Nothing to place: placement never moves a job whose size and
		// nodes did not change.
		return api.Plan{Allocation: res.Allocation, Placement: e.currentPlacement()}, nil
	}
	// Placement leaves the jobs allocated 0 out; it and the trimming below
	// share the policy's map.
	in := placement.Input{Nodes: e.nodeList(), Allocation: res.Allocation, Current: make(api.Placement, running), Throughput: e.rate}
	for _, j := range e.active {
		if j.Workers > 0 {
			in.Current[j.ID] = j.Nodes
		}
		if k := j.Spec.K(); k > 1 && res.Allocation[j.ID] > 0 {
			if in.GPUsPerWorker == nil {
				in.GPUsPerWorker = map[api.JobID]int{}
			}
			in.GPUsPerWorker[j.ID] = k
		}
	}
	start = e.stopwatch()
	out, err := e.place(in, res)
	e.lastRound.Placement = e.stopwatch().Sub(start)
	if err != nil {
		return api.Plan{}, fmt.Errorf("placement: %w", err)
	}
	return api.Plan{Allocation: res.Allocation, Placement: out.Placement, Actions: e.diff(res, out)}, nil
}

// place runs the placement. The policies hand out only workers that fit
// whole on a node, by their own best-fit packing in their own order, but
// placement packs in another order (largest workers first, running jobs
// where they are) and can, rarely, find no room where the policy did. The
// job submitted last among those with workers of several GPUs then gives up
// one worker (or, at its minimum, all of them, and waits) and placement runs
// again, until everything fits: the earliest jobs keep what the policy gave
// them. Each retry frees at least one worker, so this ends. res is trimmed
// to match (the input shares its allocation), with the trimmed job's reason
// saying why.
func (e *Engine) place(in placement.Input, res algorithm.Result) (placement.Output, error) {
	for {
		out, err := placement.Place(in)
		if _, ok := errors.AsType[*placement.NoFitError](err); !ok {
			return out, err
		}
		var victim *Job
		for id, k := range in.GPUsPerWorker {
			j := e.jobs[id]
			if k > 1 && in.Allocation[id] > 0 && j != nil && (victim == nil || byArrival(j, victim) > 0) {
				victim = j
			}
		}
		if victim == nil {
			return out, err
		}
		id, k := victim.ID, victim.Spec.K()
		n := in.Allocation[id] - 1
		if n < victim.Spec.MinWorkers {
			n = 0
		}
		in.Allocation[id] = n
		free := e.GPUs()
		for id, w := range in.Allocation {
			free -= w * max(in.GPUsPerWorker[id], 1)
		}
		r := algorithm.Reason{Code: algorithm.NoRoom, Need: victim.Spec.MinWorkers * k, PerWorker: k, Free: free}
		if n > 0 {
			r = algorithm.Reason{Code: algorithm.Allocated, Workers: n, PerWorker: k}
		}
		res.Reasons[id] = r
		victim.setReason(r)
	}
}

func (e *Engine) currentPlacement() api.Placement {
	p := api.Placement{}
	for _, j := range e.active {
		if j.Workers > 0 {
			p[j.ID] = j.Nodes
		}
	}
	return p
}

// diff turns the difference between the current state and the decided
// allocation and placement into actions: halts, scale-ins, starts,
// scale-outs, then migrations, each group in job order. Capacity is freed
// before it is used, and migrations see every job at its final size.
func (e *Engine) diff(res algorithm.Result, out placement.Output) []api.Action {
	var groups [5][]api.Action
	const (
		halt = iota
		scaleIn
		start
		scaleOut
		migrate
	)
	policy := e.policy.Name()
	for _, j := range e.active {
		id := j.ID
		o, n := j.Workers, res.Allocation[id]
		if o == n && len(out.Moves[id]) == 0 {
			continue
		}
		nodes := out.Placement[id]
		reason := policy + ": " + res.Reasons[id].String()
		if c := res.Reasons[id].Code; c == algorithm.Reclaimed {
			reason = "quota: " + res.Reasons[id].String()
		}
		switch {
		case o > 0 && n == 0 && j.Unschedulable != "":
			groups[halt] = append(groups[halt], api.Action{Kind: api.ActionHalt, Job: id, From: o, To: 0,
				Reason: "unschedulable: " + j.Unschedulable})
		case o > 0 && n == 0 && res.Reasons[id].Code == algorithm.Reclaimed:
			groups[halt] = append(groups[halt], api.Action{Kind: api.ActionHalt, Job: id, From: o, To: 0, Reason: reason})
		case o > 0 && n == 0:
			groups[halt] = append(groups[halt], api.Action{Kind: api.ActionHalt, Job: id, From: o, To: 0,
				Reason: "preempted by " + reason})
		case o > n && n > 0:
			groups[scaleIn] = append(groups[scaleIn], api.Action{Kind: api.ActionScaleIn, Job: id, From: o, To: n, Nodes: nodes, Reason: reason})
		case o == 0 && n > 0:
			groups[start] = append(groups[start], api.Action{Kind: api.ActionStart, Job: id, From: 0, To: n, Nodes: nodes, Reason: reason})
		case o > 0 && n > o:
			groups[scaleOut] = append(groups[scaleOut], api.Action{Kind: api.ActionScaleOut, Job: id, From: o, To: n, Nodes: nodes, Reason: reason})
		}
		if moves := out.Moves[id]; o > 0 && n > 0 && len(moves) > 0 {
			groups[migrate] = append(groups[migrate], api.Action{Kind: api.ActionMigrate, Job: id, From: n, To: n,
				Nodes: nodes, Moves: moves, RestartAll: out.RestartAll[id], Reason: e.migrationReason(moves)})
		}
	}
	var actions []api.Action
	for _, g := range groups {
		actions = append(actions, g...)
	}
	return actions
}

func (e *Engine) migrationReason(moves []api.WorkerMove) string {
	var lost []string
	seen := map[api.NodeName]bool{}
	for _, m := range moves {
		if _, ok := e.nodes[m.From]; !ok && !seen[m.From] {
			seen[m.From] = true
			lost = append(lost, string(m.From))
		}
	}
	if len(lost) > 0 {
		return "node " + strings.Join(lost, ", ") + " is gone"
	}
	return "placement: keep the job on fewer nodes"
}

// assume applies a plan to the engine's state as if every action had
// succeeded, remembering each changed job's previous record so a failed
// action can be undone.
func (e *Engine) assume(plan api.Plan) {
	if len(e.assumed) > 1024 {
		// A map keeps its room when cleared: let a large round's go.
		e.assumed = make(map[api.JobID]undo, len(plan.Actions))
	}
	clear(e.assumed)
	for _, a := range plan.Actions {
		j := e.jobs[a.Job]
		if _, saved := e.assumed[a.Job]; !saved {
			e.assumed[a.Job] = undoOf(j)
		}
		switch a.Kind {
		case api.ActionHalt:
			j.LastRunSeconds = e.now.Sub(j.LastStarted).Seconds()
			j.WaitingSinceRunSeconds = 0
			j.Phase, j.Workers, j.Nodes = api.PhaseWaiting, 0, nil
			j.Preemptions++
			j.setMessage(a.Reason)
		case api.ActionStart:
			if j.FirstStarted.IsZero() {
				j.FirstStarted = e.now
			} else {
				j.Restarts++
			}
			j.LastStarted, j.Grown, j.SinceStartGPUSeconds = e.now, e.now, 0
			j.Phase, j.Workers, j.Nodes = api.PhaseRunning, a.To, a.Nodes
		case api.ActionScaleIn, api.ActionScaleOut:
			if a.Kind == api.ActionScaleOut {
				j.Grown = e.now
			}
			j.Rescales++
			j.Workers, j.Nodes = a.To, a.Nodes
		case api.ActionMigrate:
			j.Nodes = a.Nodes
			if a.RestartAll {
				j.Restarts++
			}
		}
	}
}

// allocateUnqueued is the policy's allocation on a cluster without queues.
// A job that names a queue, or whose queue cannot be known, waits (a
// running one keeps its size) and says why; the others share the GPUs as
// if it were not there.
func (e *Engine) allocateUnqueued(snap algorithm.Snapshot) (algorithm.Result, error) {
	var held []algorithm.Job
	kept := snap.Jobs[:0]
	for _, v := range snap.Jobs {
		if j := e.jobs[v.ID]; j.Spec.ClusterQueue != "" || j.QueueProblem != "" {
			held = append(held, v)
			snap.GPUs -= v.Workers * max(v.GPUsPerWorker, 1)
			continue
		}
		kept = append(kept, v)
	}
	snap.Jobs = kept
	if snap.GPUs != e.GPUs() {
		// The held jobs' GPUs are not the policy's: the node list no
		// longer adds up to what it may hand out.
		snap.NodeGPUs = nil
	}
	snap.GPUs = max(snap.GPUs, 0)
	res, err := e.policy.Allocate(snap)
	if err != nil || len(held) == 0 {
		return res, err
	}
	for _, v := range held {
		j := e.jobs[v.ID]
		res.Allocation[v.ID] = v.Workers
		res.Reasons[v.ID] = algorithm.Reason{Code: algorithm.NoQueue, Queue: j.Spec.ClusterQueue, Problem: j.QueueProblem,
			Workers: v.Workers, PerWorker: v.GPUsPerWorker}
	}
	return res, nil
}
