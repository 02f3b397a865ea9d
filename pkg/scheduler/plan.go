package scheduler

import (
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
		snap.Jobs = append(snap.Jobs, j.view())
	}
	e.snap = snap.Jobs
	defer clear(e.snap) // drop the references to speedup curves until the next round
	e.lastRound = RoundTimes{}
	start := e.stopwatch()
	res, err := e.policy.Allocate(snap)
	e.lastRound.Algorithm = e.stopwatch().Sub(start)
	if err != nil {
		return api.Plan{}, fmt.Errorf("policy %s: %w", e.policy.Name(), err)
	}
	changed := e.needPlacement
	for _, j := range e.active {
		// Formatted only when read (see Job.clone): most rounds change
		// few jobs, and formatting every reason dominated large rounds.
		j.setReason(res.Reasons[j.ID])
		changed = changed || res.Allocation[j.ID] != j.Workers
	}
	if !changed {
		// Nothing to place: placement never moves a job whose size and
		// nodes did not change.
		return api.Plan{Allocation: res.Allocation, Placement: e.currentPlacement()}, nil
	}
	in := placement.Input{Nodes: e.nodeList(), Allocation: api.Allocation{}, Current: api.Placement{}}
	for id, n := range res.Allocation {
		if n > 0 {
			in.Allocation[id] = n
		}
	}
	for _, j := range e.active {
		if j.Workers > 0 {
			in.Current[j.ID] = j.Nodes
		}
	}
	start = e.stopwatch()
	out, err := placement.Place(in)
	e.lastRound.Placement = e.stopwatch().Sub(start)
	if err != nil {
		return api.Plan{}, fmt.Errorf("placement: %w", err)
	}
	return api.Plan{Allocation: in.Allocation, Placement: out.Placement, Actions: e.diff(res, out)}, nil
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
		switch {
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
	clear(e.assumed)
	for _, a := range plan.Actions {
		j := e.jobs[a.Job]
		if _, saved := e.assumed[a.Job]; !saved {
			e.assumed[a.Job] = j.clone()
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
			j.LastStarted, j.SinceStartGPUSeconds = e.now, 0
			j.Phase, j.Workers, j.Nodes = api.PhaseRunning, a.To, a.Nodes
		case api.ActionScaleIn, api.ActionScaleOut:
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
