// Package typechoice assigns jobs that accept several GPU types to one type
// at a time: the cluster-level step above Voda's per-type engines. Each
// engine then schedules the jobs of its type with its own policy, as for
// jobs that name one type.
//
// # The rule
//
// A job's remaining work W is counted in GPU-seconds on a reference GPU;
// on type t it runs at speed s(t) per GPU relative to that reference, and
// on the g(t) GPUs it asks for there at speedup u(t) over one GPU, so it
// runs d(t) = W / (s(t)·u(t)) seconds and holds g(t)·d(t) GPU-seconds.
// Each type has G(t) GPUs and serves its jobs in its policy's order: the
// least work first for SRJF, Elastic-SRJF, AFS-L and HeSRPT, arrival for
// FIFO, Elastic-FIFO and FfDL. The Tiresias policies serve the least
// attained service first; the rule lists their jobs by work too (they
// favour short jobs), but counts the jobs a job holds back as under
// arrival order (below).
//
// F(j, t), when j would be done on t, comes from running t's jobs as a
// list in that order, each on the GPUs it asks for: j starts at the
// earliest time the jobs ahead of it leave it g(t) GPUs for its whole run
// (the policies start a later job in GPUs an earlier one cannot use yet:
// backfilling; the jobs after it do not delay it), then runs d(t). Under
// an elastic policy each job of the list runs grown into the GPUs free at
// its start, up to its most.
// What it holds against the jobs after it depends on who gets the GPUs
// past the jobs' minimums. Under least work first (and least attained
// service) the jobs ahead get them first: a job holds its request, as the
// policy shrinks it no further to start a job after it. Under arrival
// order (Elastic-FIFO shares them round-robin, FfDL by speedup) they go
// to no job for being ahead: a job holds only its least (its minimum
// workers' GPUs), so j starts when the jobs ahead leave room for its
// least, and runs on what their requests leave it, between its least and
// its most, at a speed on the line between its request's and the other
// end's. A move adds the restart it costs a job that has run.
//
// A job on t also holds back jobs waiting there: each by about its
// GPU-seconds over G(t). Its cost on t is C(j, t) = F(j, t) + N(t)·g(t)·
// d(t)/G(t), N(t) the jobs of t's list that wait for GPUs and that it
// would hold back. Under least work first those are the waiting jobs
// after it in the list: the jobs ahead of it are served first, and its
// wait for them is in F already. Under arrival order nobody waits behind
// a new job yet, and all the jobs waiting now stand for those that will
// arrive behind it; under least attained service a new job goes ahead of
// every job that has run, so again all of them. A job that takes a type
// where it is slow, because it would be done there sooner, can delay more
// jobs than it gains; C counts that. A long job is not sent to a type
// where it is slow for the short jobs waiting on its fastest type, which
// go ahead of it there anyway.
//
// Jobs are considered one at a time, the least work first. A new job
// goes to the type where it runs its request fastest, unless another type
// costs at least Prefer (a fifth) less; under least attained service at
// least PreferService (three tenths) less, as the rule's list by work is
// furthest from those policies' order. A job already on a type moves only
// when another type costs at least Hysteresis (a fifth) less, and not
// within MinDwell (10 minutes) of its last move, a time that doubles
// with each further move of the job (so a job that waits while the
// estimates swing moves at most about log₂ of its wait over MinDwell
// times). Each decision updates the types' lists before the next job is
// considered. Under least work first a new job is on its fastest type's
// list until its turn, so the jobs that arrive together see those of
// more work behind them.
//
// This is list scheduling on unrelated machines (Graham's list schedule;
// the minimum-completion-time heuristic of Braun et al., "A comparison of
// eleven static heuristics for mapping a class of independent tasks onto
// heterogeneous distributed computing systems", JPDC 2001), with the
// delay a job imposes on others added as in the marginal cost of
// shortest-processing-time scheduling (Smith's rule: a job of length d
// ahead of N others adds N·d to their total completion time). The
// per-type, per-model speeds are Gavel's insight (Narayanan et al.,
// "Heterogeneity-Aware Cluster Scheduling Policies for Deep Learning
// Workloads", OSDI'20): a job's throughput differs by GPU type, by a
// different factor for each model, so the fastest type is not the best
// choice for every job when it is busy. Sia (Jayaram Subramanya et al.,
// SOSP'23) also weighs the cost of restarting a job on another type.
//
// # Stability
//
// A move lowers the moving job's cost by at least Hysteresis, given every
// other job's type; a job moves at most
// once per MinDwell. Best responses in load-balancing games settle
// (Even-Dar, Kesselman and Mansour, "Convergence time to Nash equilibria",
// ICALP 2003, for related machines); with per-job speeds that is not
// guaranteed in general, so the dwell time bounds the moves outright, and
// TestNoBouncing counts the moves on random instances.
package typechoice

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Type is a GPU type and its schedulable GPUs; Elastic says its policy
// resizes jobs (every policy but FIFO, SRJF and Tiresias).
type Type struct {
	Name    string
	GPUs    int
	Elastic bool
}

// Job is what the rule knows of a job.
type Job struct {
	ID string
	// Types are the acceptable types, in the user's order of preference
	// (the first breaks ties).
	Types []string
	// Speed is the job's speed per GPU on each type relative to a
	// reference GPU; a type missing here runs at DefaultSpeed.
	Speed map[string]float64
	// Work is the remaining work, in GPU-seconds on the reference GPU;
	// zero or negative means unknown (the rule then uses the median of the
	// known).
	Work float64
	// Current is the type the job is on; empty for a new job.
	Current string
	// Ran says the job has run (a move then costs a restart).
	Ran bool
	// Since is when the job was last assigned a type, and Moves how often
	// it has moved between types.
	Since time.Time
	Moves int
	// Submitted orders jobs for policies that serve by arrival.
	Submitted time.Time
	// Runs is how the job runs on each type; a type missing here: on one
	// GPU.
	Runs map[string]Run
}

// Run is how a job runs on a type when it runs: the GPUs it holds there
// and its speed on them over its speed on one (1 or less: none gained).
type Run struct {
	GPUs    int
	Speedup float64
	// On an elastic type, Most is the most GPUs it grows to where they
	// are free, at MostSpeedup over one GPU, and Least the fewest it is
	// shrunk to (its minimum workers' GPUs; 0: GPUs), at LeastSpeedup.
	Most         int
	MostSpeedup  float64
	Least        int
	LeastSpeedup float64
}

// Config holds the rule's parameters.
type Config struct {
	// Hysteresis is the fraction of its estimated finish a move must
	// save (0.2: a fifth).
	Hysteresis float64
	// RestartCost is the seconds a move costs a job that has run.
	RestartCost float64
	// MinDwell is the least time between a job's first two moves; it
	// doubles with each further move, up to a day.
	MinDwell time.Duration
	// DefaultSpeed is the speed of a type a job gives none for.
	DefaultSpeed float64
	// Prefer is the fraction by which another type must cost less than
	// the one where a new job runs fastest for the job to go there (0.2).
	Prefer float64
	// PreferService is Prefer for types served by least attained
	// service (0.3). The rule lists their jobs by work, which those
	// policies do not know: they serve a job by the service it has had,
	// reset at each start, and promote the starved, so the rule's
	// estimates of them are its least sure, and a new job leaves its
	// fastest type only for a larger saving.
	PreferService float64
}

// DefaultConfig is the configuration Voda uses.
func DefaultConfig() Config {
	return Config{Hysteresis: 0.2, RestartCost: 60, MinDwell: 10 * time.Minute, DefaultSpeed: 1, Prefer: 0.2, PreferService: 0.3}
}

// Decision is a job's type and why.
type Decision struct {
	Type string
	// Moved is set when the job leaves the type it was on.
	Moved bool
	// Reason says, in words, why the job is on Type.
	Reason string
	// Done is the seconds until the job is estimated done on Type; 0 for
	// a job of one type (the rule does not estimate it).
	Done float64
}

// Orders in which a type's policy serves its jobs, as the rule assumes.
const (
	// ByWork: jobs with less work left first (SRJF, Elastic-SRJF, AFS-L,
	// HeSRPT).
	ByWork = "work"
	// ByArrival: jobs submitted first, first (FIFO, Elastic-FIFO, FfDL).
	ByArrival = "arrival"
	// ByService: jobs that have had the least service first, a new job
	// ahead of every job that has run (Tiresias, Elastic-Tiresias). The
	// rule lists them by work, as under ByWork.
	ByService = "service"
)

// OrderOf is the order the rule assumes for a policy (see ByWork).
func OrderOf(policy string) string {
	switch strings.ToLower(strings.ReplaceAll(policy, "-", "")) {
	case "fifo", "elasticfifo", "ffdloptimizer", "ffdl":
		return ByArrival
	case "tiresias", "elastictiresias":
		return ByService
	}
	return ByWork
}

// Assign decides every job's type at time now, for types whose policies
// serve jobs in the given order (ByWork, ByArrival or ByService). Jobs
// that accept no type with GPUs keep their current type (or take their
// first).
func Assign(types []Type, jobs []Job, now time.Time, order string, cfg Config) map[string]Decision {
	if cfg.DefaultSpeed <= 0 {
		cfg.DefaultSpeed = 1
	}
	prefer := cfg.Prefer
	if order == ByService {
		prefer = cfg.PreferService
	}
	gpus, elastic := map[string]int{}, map[string]bool{}
	for _, t := range types {
		gpus[t.Name] += max(t.GPUs, 0)
		elastic[t.Name] = t.Elastic
	}
	unknown := medianWork(jobs)
	entryOn := func(j *Job, t string) entry {
		w := work(j, unknown) / speed(j, t, cfg)
		key := w
		if order == ByArrival {
			key = float64(j.Submitted.UnixNano())
		}
		r := j.Runs[t]
		g := min(max(r.GPUs, 1), max(gpus[t], 1))
		e := entry{key: key, id: j.ID, gpus: g, most: g, least: g, dur: w / max(r.Speedup, 1)}
		e.fastest, e.slowest = e.dur, e.dur
		if !elastic[t] {
			return e
		}
		if m := min(r.Most, gpus[t]); m > g && r.MostSpeedup > r.Speedup {
			e.most, e.fastest = m, w/r.MostSpeedup
		}
		if order == ByArrival && r.Least >= 1 && r.Least < g {
			e.least, e.slowest = r.Least, w/max(min(r.LeastSpeedup, r.Speedup), 1)
		}
		return e
	}
	lanes := map[string]*lane{}
	laneOf := func(t string) *lane {
		if lanes[t] == nil {
			lanes[t] = &lane{gpus: gpus[t], dirty: true}
		}
		return lanes[t]
	}
	// Under least work first, a new job is in a lane from the start, on
	// its fastest type until its turn: the jobs that pick before it, of
	// less work, see it among the jobs they would hold back. (Under the
	// other orders the jobs waiting stand for those that will come
	// behind, this round's new jobs among them.)
	on := make(map[string]string, len(jobs))
	for i := range jobs {
		j := &jobs[i]
		t := j.Current
		if t == "" && len(j.Types) > 0 && order == ByWork {
			if f := fastest(j, gpus, entryOn); gpus[f] > 0 {
				t = f
			}
		}
		if t != "" {
			laneOf(t).add(entryOn(j, t))
			on[j.ID] = t
		}
	}
	put := func(j *Job, t string) {
		if on[j.ID] == t {
			return
		}
		if on[j.ID] != "" {
			laneOf(on[j.ID]).remove(j.ID)
		}
		laneOf(t).add(entryOn(j, t))
		on[j.ID] = t
	}
	out := make(map[string]Decision, len(jobs))
	// The least work first (ties by ID): short jobs pick first.
	idx := make([]int, len(jobs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		return cmp.Or(cmp.Compare(work(&jobs[a], unknown), work(&jobs[b], unknown)), cmp.Compare(jobs[a].ID, jobs[b].ID))
	})
	for _, i := range idx {
		j := &jobs[i]
		if len(j.Types) == 0 {
			out[j.ID] = Decision{Type: j.Current, Reason: "it accepts no type"}
			continue
		}
		if len(j.Types) == 1 {
			t := j.Types[0]
			put(j, t)
			out[j.ID] = Decision{Type: t, Reason: "the only type it accepts"}
			continue
		}
		// F(t): when the job would be done on t. C(t): that, plus what
		// it holds back the jobs that wait on t: each is delayed by its
		// GPU-seconds there over the type's GPUs. (For types served by
		// arrival, the jobs waiting now stand for those that will arrive
		// behind it.)
		fin, cost, held := map[string]float64{}, map[string]float64{}, map[string]int{}
		for _, t := range j.Types {
			if gpus[t] == 0 {
				fin[t], cost[t] = math.Inf(1), math.Inf(1)
				continue
			}
			e := entryOn(j, t)
			l := laneOf(t)
			fin[t] = l.finish(e)
			if j.Ran && j.Current != "" && t != j.Current {
				fin[t] += cfg.RestartCost
			}
			held[t] = l.heldBack(e, order)
			cost[t] = fin[t] + float64(held[t])*e.size()/float64(gpus[t])
		}
		finish := func(t string) float64 { return fin[t] }
		best := j.Types[0]
		for _, t := range j.Types[1:] {
			if cost[t] < cost[best] {
				best = t
			}
		}
		fast := fastest(j, gpus, entryOn)
		if j.Current == "" && fast != best && !(cost[best] < (1-prefer)*cost[fast]) {
			// A new job goes where it runs fastest unless another type
			// costs less by Prefer (PreferService).
			best = fast
		}
		d := Decision{Type: best}
		switch {
		case math.IsInf(fin[best], 1):
			d.Type = cmp.Or(j.Current, j.Types[0])
			d.Reason = "no type it accepts has schedulable GPUs"
		case j.Current == "" || best == j.Current:
			d.Reason = fmt.Sprintf("%s: estimated done in %s there, %s", best, words(fin[best]), alternatives(j, best, finish))
			if sooner := soonest(j, fin); fin[sooner] < fin[best] {
				if best == fast && cost[sooner] < cost[best] {
					d.Reason += fmt.Sprintf("; it runs fastest on %s, and %s would not save %.0f%%", best, sooner, 100*prefer)
				} else {
					d.Reason += fmt.Sprintf("; on %s it would hold back %s", sooner, jobsHeld(held[sooner]))
				}
			}
		case now.Sub(j.Since) < dwell(cfg.MinDwell, j.Moves):
			d.Type = j.Current
			d.Reason = fmt.Sprintf("%s: moved less than %s ago", j.Current, dwell(cfg.MinDwell, j.Moves))
		case cost[best] < (1-cfg.Hysteresis)*cost[j.Current]:
			d.Moved = true
			d.Reason = fmt.Sprintf("moved from %s to %s: estimated done in %s there instead of %s", j.Current, best, words(fin[best]), words(fin[j.Current]))
		default:
			d.Type = j.Current
			d.Reason = fmt.Sprintf("%s: %s would be done in %s instead of %s, less than the %.0f%% a move must save",
				j.Current, best, words(fin[best]), words(fin[j.Current]), 100*cfg.Hysteresis)
		}
		d.Done = fin[d.Type]
		put(j, d.Type)
		out[j.ID] = d
	}
	return out
}

// dwell is the least time a job that has moved moves times stays on its
// type before it may move again: least, doubled for each move after the
// first, at most a day (or least, if that is longer).
func dwell(least time.Duration, moves int) time.Duration {
	d := least
	for range moves - 1 {
		if d >= 12*time.Hour {
			return max(24*time.Hour, least)
		}
		d *= 2
	}
	return d
}

// soonest is the job's type of the earliest estimated finish.
func soonest(j *Job, fin map[string]float64) string {
	best := j.Types[0]
	for _, t := range j.Types[1:] {
		if fin[t] < fin[best] {
			best = t
		}
	}
	return best
}

func jobsHeld(n int) string {
	if n == 1 {
		return "1 job"
	}
	return fmt.Sprintf("%d jobs", n)
}

// fastest is the type of the job's where it runs its request fastest
// (the first of equals).
func fastest(j *Job, gpus map[string]int, entryOn func(*Job, string) entry) string {
	best, bestDur := "", math.Inf(1)
	for _, t := range j.Types {
		if gpus[t] == 0 {
			continue
		}
		if d := entryOn(j, t).dur; best == "" || d < bestDur {
			best, bestDur = t, d
		}
	}
	return cmp.Or(best, j.Types[0])
}

func speed(j *Job, t string, cfg Config) float64 {
	if s, ok := j.Speed[t]; ok && s > 0 {
		return s
	}
	return cfg.DefaultSpeed
}

func work(j *Job, unknown float64) float64 {
	if j.Work > 0 && !math.IsInf(j.Work, 1) {
		return j.Work
	}
	return unknown
}

// medianWork is the median of the known remaining work; 1 when none is
// known (all jobs then weigh the same).
func medianWork(jobs []Job) float64 {
	var ws []float64
	for i := range jobs {
		if w := jobs[i].Work; w > 0 && !math.IsInf(w, 1) {
			ws = append(ws, w)
		}
	}
	if len(ws) == 0 {
		return 1
	}
	slices.Sort(ws)
	return ws[len(ws)/2]
}

// alternatives words the estimates on the job's other types.
func alternatives(j *Job, chosen string, finish func(string) float64) string {
	var parts []string
	for _, t := range j.Types {
		if t != chosen {
			parts = append(parts, fmt.Sprintf("%s on %s", words(finish(t)), t))
		}
	}
	if len(parts) == 0 {
		return "its only type"
	}
	return "against " + joinOr(parts)
}

func joinOr(parts []string) string {
	if len(parts) == 1 {
		return parts[0]
	}
	s := ""
	for i, p := range parts {
		switch {
		case i == 0:
			s = p
		case i == len(parts)-1:
			s += " or " + p
		default:
			s += ", " + p
		}
	}
	return s
}

// words formats seconds for people.
func words(sec float64) string {
	if math.IsInf(sec, 1) {
		return "never (no GPUs)"
	}
	if sec < 59.5 {
		return fmt.Sprintf("%.0fs", math.Ceil(sec))
	}
	d := time.Duration(sec * float64(time.Second)).Round(time.Minute)
	h, m := int(d.Hours()), int(d.Minutes())%60
	if h == 0 {
		return fmt.Sprintf("%dm", m)
	}
	return fmt.Sprintf("%dh%02dm", h, m)
}
