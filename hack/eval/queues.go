package main

import (
	"fmt"
	"io"
	"math"
	"path/filepath"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/simulator"
)

// Teams: the Pollux workloads at 1.0× load split among four teams of equal
// nominal quota, one of which submits half of the jobs, and Shockwave's
// 120-job trace on 32 GPUs split the same way; every policy with and
// without queues (docs/queues.md).
const teams = 4

// teamRuns holds, per workload set and policy, the runs without queues
// (plain) and with them (queued), workload by workload.
type teamRuns struct {
	name           string
	gpus           int
	plain, queued  map[string][]simulator.Result
	shockwaveTrace bool
}

func runTeams(shockwave string, pollux []simulator.Workload, catalog simulator.Catalog) ([]teamRuns, error) {
	var sets []teamRuns
	polluxSet, err := teamSet("Pollux workloads 1–8, 1.0× load, 64 GPUs", pollux, catalog, vodaConfig, 64)
	if err != nil {
		return nil, err
	}
	sets = append(sets, polluxSet)
	table, err := simulator.ReadGavelThroughputs(filepath.Join(shockwave, "tacc_throughputs.json"))
	if err != nil {
		return nil, err
	}
	hw, err := simulator.ReadGavelTrace(filepath.Join(shockwave, "traces", "jobs120_100_40.trace"), table)
	if err != nil {
		return nil, err
	}
	w, cat, err := simulator.SingleType(hw, table, "v100")
	if err != nil {
		return nil, err
	}
	shock := func(p string) simulator.Config {
		c := vodaConfig(p)
		c.Nodes = 8
		return c
	}
	set, err := teamSet("Shockwave's 120 jobs (jobs120_100_40), V100 throughputs, 32 GPUs", []simulator.Workload{w}, cat, shock, 32)
	if err != nil {
		return nil, err
	}
	set.shockwaveTrace = true
	return append(sets, set), nil
}

func teamSet(name string, ws []simulator.Workload, cat simulator.Catalog, config func(string) simulator.Config, gpus int) (teamRuns, error) {
	qs, err := simulator.TeamQueues(teams, gpus)
	if err != nil {
		return teamRuns{}, err
	}
	names := simulator.QueueNames(qs)
	type job struct {
		policy string
		queued bool
		cfg    simulator.Config
		w      simulator.Workload
	}
	var jobs []job
	for _, p := range algorithm.Names() {
		for _, w := range ws {
			jobs = append(jobs, job{p, false, config(p), w})
			spread, err := simulator.SpreadQueues(w, names, simulator.SpreadHalf)
			if err != nil {
				return teamRuns{}, err
			}
			c := config(p)
			c.Queues = qs
			jobs = append(jobs, job{p, true, c, spread})
		}
	}
	results := make([]simulator.Result, len(jobs))
	errs := make([]error, len(jobs))
	forEach(len(jobs), func(i int) {
		results[i], errs[i] = simulator.Run(jobs[i].cfg, jobs[i].w, cat)
	})
	out := teamRuns{name: name, gpus: gpus, plain: map[string][]simulator.Result{}, queued: map[string][]simulator.Result{}}
	for i, j := range jobs {
		if errs[i] != nil {
			return teamRuns{}, errs[i]
		}
		if j.queued {
			out.queued[j.policy] = append(out.queued[j.policy], results[i])
		} else {
			out.plain[j.policy] = append(out.plain[j.policy], results[i])
		}
	}
	return out, nil
}

// teamAgg is one policy's figures on a workload set, means over workloads.
type teamAgg struct {
	worstSI   float64 // the largest sharing incentive of any team on any workload; NaN when undefined
	meanSI    float64 // mean over workloads of the worst team's
	jctRatio  float64 // mean JCT with queues ÷ without
	spanRatio float64
	utilDrop  float64 // GPU utilisation without − with, in points
	below     float64 // seconds below nominal quota with work waiting, summed over queues and workloads
	shrink    float64 // share of reclaims done by shrinking alone (NaN: none)
	reclaims  int
	restarts  float64 // restarts per job with queues
	rho       [2]float64
	rhoShare  [2]float64 // without, with
}

func aggregateTeams(plain, queued []simulator.Result) teamAgg {
	a := teamAgg{shrink: math.NaN()}
	byShrink := 0
	n := float64(len(plain))
	for i := range plain {
		p, q := simulator.Summarise(plain[i]), simulator.Summarise(queued[i])
		worst := 0.0
		for _, qs := range q.Queues {
			if qs.SharingIncentive == nil {
				if qs.Jobs > 0 {
					worst = math.NaN()
				}
			} else if !math.IsNaN(worst) {
				worst = max(worst, *qs.SharingIncentive)
			}
			a.below += qs.BelowNominal
		}
		a.meanSI += worst / n
		if math.IsNaN(worst) || math.IsNaN(a.worstSI) {
			a.worstSI = math.NaN()
		} else {
			a.worstSI = max(a.worstSI, worst)
		}
		a.jctRatio += q.AvgJCT / p.AvgJCT / n
		a.spanRatio += q.Makespan / p.Makespan / n
		a.utilDrop += 100 * (p.GPUUtil - q.GPUUtil) / n
		a.restarts += q.RestartsPerJob / n
		a.reclaims += queued[i].Quota.Reclaims
		byShrink += queued[i].Quota.ByShrinking
		a.rho[0] = max(a.rho[0], p.WorstRho)
		a.rho[1] = max(a.rho[1], q.WorstRho)
		a.rhoShare[0] += p.ShareRhoAbove105 / n
		a.rhoShare[1] += q.ShareRhoAbove105 / n
	}
	if a.reclaims > 0 {
		a.shrink = float64(byShrink) / float64(a.reclaims)
	}
	return a
}

func writeTeams(w io.Writer, sets []teamRuns) {
	fmt.Fprintf(w, `## Teams: queues, quotas and reclaim

Four teams of equal nominal quota in one cohort (`+"`voda simulate --teams 4 --spread half`"+`):
team-a submits half of the jobs, the other three a sixth each, chosen by a
hash of the job's name. Voda's own conditions (event-driven, 30 s rate
limit, 30 s restart delay). Every policy runs once without queues and once
with them. *Sharing incentive* is a team's mean JCT on the shared cluster
over its mean JCT alone on a static partition of its nominal quota
(Themis); the table gives the worst team's, worst over the workloads and
its mean over them ("—" when some job of a team cannot run on its quota
alone: a rigid job larger than the quota). *Below quota* is the time, summed
over queues and workloads, that a queue held less than its nominal quota
while a job of its own that fits the rest waited, beyond one round and one
restart (docs/simulator.md). ρ is Shockwave's finish-time fairness: JCT ÷
(the job alone at its requested size × max(1, mean jobs present ÷ GPUs)).

`)
	for _, s := range sets {
		fmt.Fprintf(w, "### %s\n\n", s.name)
		fmt.Fprintln(w, "| Policy | worst sharing incentive | mean of worst | JCT with ÷ without | makespan with ÷ without | GPU util change | below quota | reclaims (by shrinking) | restarts/job | worst ρ without → with | ρ > 1.05 without → with |")
		fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
		for _, p := range algorithm.Names() {
			a := aggregateTeams(s.plain[p], s.queued[p])
			si, mean := "—", "—"
			if !math.IsNaN(a.worstSI) {
				si, mean = fmt.Sprintf("%.2f", a.worstSI), fmt.Sprintf("%.2f", a.meanSI)
			}
			shrink := "—"
			if !math.IsNaN(a.shrink) {
				shrink = fmt.Sprintf("%.0f%%", 100*a.shrink)
			}
			fmt.Fprintf(w, "| %s | %s | %s | %.3f | %.3f | %+.1f pt | %.0f s | %d (%s) | %.2f | %.2f → %.2f | %.1f%% → %.1f%% |\n",
				p, si, mean, a.jctRatio, a.spanRatio, -a.utilDrop, a.below, a.reclaims, shrink, a.restarts,
				a.rho[0], a.rho[1], 100*a.rhoShare[0], 100*a.rhoShare[1])
		}
		fmt.Fprintln(w)
	}
}
