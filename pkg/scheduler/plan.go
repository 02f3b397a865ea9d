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
// result against it. It changes nothing but the jobs' messages and planned
// sizes.
func (e *Engine) plan() (api.Plan, error) {
	// In submission order, from a buffer the policy does not keep, sized
	// with a sixteenth to spare: at 100 000 jobs, growing it by appending
	// held a fifth more than the jobs.
	if n := len(e.arrival); cap(e.snap) < n {
		e.snap = make([]algorithm.Job, 0, n+n/16)
		e.snapJobs = make([]*job, 0, n+n/16)
	}
	snap := algorithm.Snapshot{Now: e.now, GPUs: e.GPUs(), Jobs: e.snap[:0]}
	e.snapJobs = e.snapJobs[:0]
	for _, j := range e.arrival {
		if j.unschedulable() == "" {
			snap.Jobs = append(snap.Jobs, j.view())
			e.snapJobs = append(e.snapJobs, j)
		}
	}
	// With workers of several GPUs, policies hand out only workers that
	// fit whole on a node; HeSRPT explores only sizes that tile them.
	nodes, err := e.nodeList()
	if err != nil {
		return api.Plan{}, err
	}
	snap.NodeGPUs = e.nodeGPUs[:0]
	for i := range nodes.Len() {
		snap.NodeGPUs = append(snap.NodeGPUs, nodes.Node(i).GPUs)
	}
	e.nodeGPUs = snap.NodeGPUs
	e.snap = snap.Jobs
	// Drop the references to speedup curves and jobs until the next round.
	defer clear(e.snap)
	defer clear(e.snapJobs)
	e.lastRound = RoundTimes{}
	for _, j := range e.active {
		j.planned = 0 // the jobs the policy does not see
	}
	start := e.stopwatch()
	if len(e.queues) > 0 {
		var res algorithm.Result
		if res, err = e.allocateQueues(snap); err == nil {
			for _, j := range e.snapJobs {
				j.planned = res.Allocation[j.ID]
				j.setReason(res.Reasons[j.ID])
			}
		}
	} else {
		err = e.allocateUnqueued(snap)
	}
	e.lastRound.Algorithm = e.stopwatch().Sub(start)
	if err != nil {
		return api.Plan{}, fmt.Errorf("policy %s: %w", e.policy.Name(), err)
	}
	changed := e.needPlacement
	for _, j := range e.active {
		changed = changed || j.planned != j.Workers
	}
	if !changed {
		// Nothing to place: placement never moves a job whose size and
		// nodes did not change.
		return api.Plan{Rescheduled: true}, nil
	}
	start = e.stopwatch()
	err = e.place()
	e.lastRound.Placement = e.stopwatch().Sub(start)
	if err != nil {
		return api.Plan{}, fmt.Errorf("placement: %w", err)
	}
	return api.Plan{Rescheduled: true, Actions: e.diff()}, nil
}

// place runs the placement of the planned sizes; e.moved receives the
// jobs that do not stay where they run, by index in e.active. The policies
// hand out only workers that fit whole on a node, by their own best-fit
// packing in their own order, but placement packs in another order
// (largest workers first, running jobs where they are) and can, rarely,
// find no room where the policy did. The job submitted last among those
// with workers of several GPUs then gives up one worker (or, at its
// minimum, all of them, and waits) and placement runs again, until
// everything fits: the earliest jobs keep what the policy gave them. Each
// retry frees at least one worker, so this ends. The trimmed job's reason
// says why.
func (e *Engine) place() error {
	// Placement reads e.active (sorted by ID) through this, rather than a
	// copy of 100 000 entries.
	jobAt := func(i int) placement.Job {
		j := e.active[i]
		if j.planned == 0 {
			return placement.Job{ID: j.ID}
		}
		var current []api.NodeName
		if j.Workers > 0 {
			current = j.Nodes
		}
		return placement.Job{ID: j.ID, Workers: j.planned, GPUsPerWorker: j.Spec.K(), Current: current}
	}
	for {
		var err error
		nodes, err := e.nodeList()
		if err != nil {
			return err
		}
		e.moved, err = e.placeWS.PlaceJobs(nodes, len(e.active), jobAt, e.rate)
		if _, ok := errors.AsType[*placement.NoFitError](err); !ok {
			return err
		}
		var victim *job
		for _, j := range e.active {
			if j.Spec.K() > 1 && j.planned > 0 && (victim == nil || byArrival(j, victim) > 0) {
				victim = j
			}
		}
		if victim == nil {
			return err
		}
		k := victim.Spec.K()
		n := victim.planned - 1
		if n < victim.Spec.MinWorkers {
			n = 0
		}
		victim.planned = n
		free := e.GPUs()
		for _, j := range e.active {
			free -= j.planned * j.Spec.K()
		}
		r := algorithm.Reason{Code: algorithm.NoRoom, Need: algorithm.Narrow(victim.Spec.MinWorkers * k), PerWorker: algorithm.Narrow(k), Free: algorithm.Narrow(free)}
		if n > 0 {
			r = algorithm.Reason{Code: algorithm.Allocated, Workers: algorithm.Narrow(n), PerWorker: algorithm.Narrow(k)}
		}
		victim.setReason(r)
	}
}

// diff turns the difference between the current state and the planned
// sizes and placement into actions: halts, scale-ins, starts, scale-outs,
// then migrations, each group in job order. Capacity is freed before it is
// used, and migrations see every job at its final size.
func (e *Engine) diff() []api.Action {
	moved := e.moved
	e.moved = nil
	// Two passes, the first counting each group's actions, so that the
	// plan is one slice of its exact size: at 100 000 jobs, groups grown by
	// appending and then joined allocated three times what they held.
	var at [groups]int
	each := func(do func(j *job, p *placement.Moved, g int, migrates bool)) {
		next := moved
		for i, j := range e.active {
			// A job placement does not list stays where it runs: at its
			// size it gets no action.
			var p placement.Moved
			if len(next) > 0 && next[0].Slot == i {
				p, next = next[0], next[1:]
			}
			if g, migrates := actionGroup(j, &p); g >= 0 || migrates {
				do(j, &p, g, migrates)
			}
		}
	}
	each(func(_ *job, _ *placement.Moved, g int, migrates bool) {
		if g >= 0 {
			at[g]++
		}
		if migrates {
			at[groupMigrate]++
		}
	})
	total := 0
	for g, n := range at {
		at[g], total = total, total+n
	}
	if total == 0 {
		return nil
	}
	actions := make([]api.Action, total)
	add := func(g int, a api.Action) {
		actions[at[g]] = a
		at[g]++
	}
	policy := e.policy.Name()
	each(func(j *job, p *placement.Moved, g int, migrates bool) {
		id, o, n, nodes := j.ID, j.Workers, j.planned, p.Nodes
		if g >= 0 {
			reason := policy + ": " + j.reason.String()
			if j.reason.Code == algorithm.Reclaimed {
				reason = "quota: " + j.reason.String()
			}
			switch {
			case g == groupHalt && j.unschedulable() != "":
				reason = "unschedulable: " + j.unschedulable()
			case g == groupHalt && j.reason.Code != algorithm.Reclaimed:
				reason = "preempted by " + reason
			}
			if g == groupHalt {
				n, nodes = 0, nil
			}
			add(g, api.Action{Kind: groupKinds[g], Job: id, From: o, To: n, Nodes: nodes, Reason: reason})
		}
		if migrates {
			add(groupMigrate, api.Action{Kind: groupKinds[groupMigrate], Job: id, From: n, To: n,
				Nodes: nodes, Moves: p.Moves, RestartAll: p.RestartAll, Reason: e.migrationReason(p.Moves)})
		}
	})
	return actions
}

// The groups of a plan's actions, in the order it lists them.
const (
	groupHalt = iota
	groupScaleIn
	groupStart
	groupScaleOut
	groupMigrate
	groups
)

// groupKinds is the kind of each group's actions.
var groupKinds = [groups]api.ActionKind{groupHalt: api.ActionHalt, groupScaleIn: api.ActionScaleIn,
	groupStart: api.ActionStart, groupScaleOut: api.ActionScaleOut, groupMigrate: api.ActionMigrate}

// actionGroup returns the group of the action that changes j's size (-1
// for none) and whether j also migrates, p being placement's entry for it.
func actionGroup(j *job, p *placement.Moved) (int, bool) {
	o, n := j.Workers, j.planned
	g := -1
	switch {
	case o > 0 && n == 0:
		g = groupHalt
	case o > n && n > 0:
		g = groupScaleIn
	case o == 0 && n > 0:
		g = groupStart
	case o > 0 && n > o:
		g = groupScaleOut
	}
	return g, o > 0 && n > 0 && len(p.Moves) > 0
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
	for _, u := range e.undos {
		u.job.undoAt = 0
	}
	clear(e.undos) // the jobs may leave
	e.undos = e.undos[:0]
	if n := len(plan.Actions); cap(e.undos) < n || cap(e.undos) > 4*n+1024 {
		// Let a large round's room go.
		e.undos = make([]undo, 0, n)
	}
	for _, a := range plan.Actions {
		j := e.jobs[a.Job]
		if j.undoAt == 0 {
			e.undos = append(e.undos, undoOf(j))
			j.undoAt = int32(len(e.undos))
		}
		switch a.Kind {
		case api.ActionHalt:
			j.LastRunSeconds = e.now.Sub(j.LastStarted.time()).Seconds()
			j.WaitingSinceRunSeconds = 0
			j.Phase, j.Workers, j.Nodes = api.PhaseWaiting, 0, nil
			j.Preemptions++
			j.setMessage(a.Reason)
		case api.ActionStart:
			now := stampOf(e.now)
			if j.FirstStarted.isZero() {
				j.FirstStarted = now
			} else {
				j.Restarts++
			}
			j.LastStarted, j.Grown, j.SinceStartGPUSeconds = now, now, 0
			j.Phase, j.Workers, j.Nodes = api.PhaseRunning, a.To, a.Nodes
		case api.ActionScaleIn, api.ActionScaleOut:
			if a.Kind == api.ActionScaleOut {
				j.Grown = stampOf(e.now)
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

// allocateUnqueued is the policy's allocation on a cluster without queues,
// into the jobs' planned sizes and reasons. A job that names a queue, or
// whose queue cannot be known, waits (a running one keeps its size) and
// says why; the others share the GPUs as if it were not there.
func (e *Engine) allocateUnqueued(snap algorithm.Snapshot) error {
	var held []*job
	kept, keptJobs := snap.Jobs[:0], e.snapJobs[:0]
	for i, v := range snap.Jobs {
		if j := e.snapJobs[i]; j.Spec.ClusterQueue != "" || j.queueProblem() != "" {
			held = append(held, j)
			snap.GPUs -= v.Workers * max(v.GPUsPerWorker, 1)
			continue
		}
		kept, keptJobs = append(kept, v), append(keptJobs, e.snapJobs[i])
	}
	snap.Jobs = kept
	if snap.GPUs != e.GPUs() {
		// The held jobs' GPUs are not the policy's: the node list no
		// longer adds up to what it may hand out.
		snap.NodeGPUs = nil
	}
	snap.GPUs = max(snap.GPUs, 0)
	// The reasons go straight to the jobs' records, without a copy of
	// them all.
	for _, j := range keptJobs {
		j.setReason(algorithm.Reason{})
	}
	e.decision.Report = func(i int, r algorithm.Reason) { keptJobs[i].setReason(r) }
	err := algorithm.Decide(e.policy, snap, &e.decision)
	e.decision.Report = nil
	if err != nil {
		return err
	}
	for i, j := range keptJobs {
		j.planned = e.decision.Workers[i]
	}
	for _, j := range held {
		j.planned = j.Workers
		j.setReason(algorithm.Reason{Code: algorithm.NoQueue, Queue: j.Spec.ClusterQueue, Problem: j.queueProblem(),
			Workers: algorithm.Narrow(j.Workers), PerWorker: algorithm.Narrow(j.Spec.GPUsPerWorker)})
	}
	return nil
}
