// Package typechoice assigns jobs that accept several GPU types to one type
// at a time: the cluster-level step above Voda's per-type engines. Each
// engine then schedules the jobs of its type with its own policy, as for
// jobs that name one type.
//
// # The rule
//
// A job's remaining work W is counted in GPU-seconds on a reference GPU;
// on type t it runs at speed s(t) relative to that reference, so it needs
// W / s(t) GPU-seconds there. Each type has G(t) GPUs and serves its jobs
// in its policy's order: the least work first for SRJF, AFS-L, HeSRPT and
// the Tiresias policies, arrival for FIFO, Elastic-FIFO and FfDL. A job on
// t is estimated to be done after the work ahead of it in that order and
// its own: F(j, t) = (A(j, t) + W/s(t)) / G(t), plus the restart a move
// costs a job that has run. Jobs are considered one at a time, the least
// work first: a new job goes to the type of smallest F; a job already on a
// type moves only when another type's F is at least Hysteresis (a fifth)
// below its current type's, and not within MinDwell (10 minutes) of its
// last move. Each decision updates the types' queues before the next job
// is considered.
//
// This is the minimum-completion-time heuristic of list scheduling on
// unrelated machines (Braun et al., "A comparison of eleven static
// heuristics for mapping a class of independent tasks onto heterogeneous
// distributed computing systems", JPDC 2001), applied as best responses of
// jobs in shortest-work-first order; the per-type, per-model speeds are
// Gavel's insight (Narayanan et al., "Heterogeneity-Aware Cluster
// Scheduling Policies for Deep Learning Workloads", OSDI'20): a job's
// throughput differs by GPU type, by a different factor for each model, so
// the fastest type is not the best choice for every job when it is busy.
// Sia (Jayaram Subramanya et al., SOSP'23) also weighs the cost of
// restarting a job on another type.
//
// # Stability
//
// A move is a best response that shortens the moving job's own estimate
// by at least Hysteresis, given every other job's type; a job moves at most
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
	"sort"
	"strings"
	"time"
)

// Type is a GPU type and its schedulable GPUs.
type Type struct {
	Name string
	GPUs int
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
	// Since is when the job was last assigned a type.
	Since time.Time
	// Submitted orders jobs for policies that serve by arrival.
	Submitted time.Time
}

// Config holds the rule's parameters.
type Config struct {
	// Hysteresis is the fraction of its estimated finish a move must
	// save (0.2: a fifth).
	Hysteresis float64
	// RestartCost is the seconds a move costs a job that has run.
	RestartCost float64
	// MinDwell is the least time between two moves of a job.
	MinDwell time.Duration
	// DefaultSpeed is the speed of a type a job gives none for.
	DefaultSpeed float64
}

// DefaultConfig is the configuration Voda uses.
func DefaultConfig() Config {
	return Config{Hysteresis: 0.2, RestartCost: 60, MinDwell: 10 * time.Minute, DefaultSpeed: 1}
}

// Decision is a job's type and why.
type Decision struct {
	Type string
	// Moved is set when the job leaves the type it was on.
	Moved bool
	// Reason says, in words, why the job is on Type.
	Reason string
}

// Orders in which a type's policy serves its jobs, as the rule assumes.
const (
	// ByWork: jobs with less work left first (SRJF, Elastic-SRJF, AFS-L,
	// HeSRPT; the Tiresias policies favour short jobs too).
	ByWork = "work"
	// ByArrival: jobs submitted first, first (FIFO, Elastic-FIFO, FfDL).
	ByArrival = "arrival"
)

// OrderOf is the order the rule assumes for a policy (see ByWork).
func OrderOf(policy string) string {
	switch strings.ToLower(strings.ReplaceAll(policy, "-", "")) {
	case "fifo", "elasticfifo", "ffdloptimizer", "ffdl":
		return ByArrival
	}
	return ByWork
}

// entry is a job in a type's lane: its key in the type's order and its
// work there, in GPU-seconds of the type.
type entry struct {
	key float64
	id  string
	w   float64
}

func (a entry) less(b entry) bool { return a.key < b.key || (a.key == b.key && a.id < b.id) }

// lane is a type's jobs in its order, with prefix sums of their work.
type lane struct {
	es     []entry
	prefix []float64 // prefix[i] = Σ es[:i].w; nil when stale
}

func (l *lane) add(e entry) {
	i, _ := slices.BinarySearchFunc(l.es, e, func(a, b entry) int {
		if a.less(b) {
			return -1
		}
		if b.less(a) {
			return 1
		}
		return 0
	})
	l.es = slices.Insert(l.es, i, e)
	l.prefix = nil
}

func (l *lane) remove(id string) {
	l.es = slices.DeleteFunc(l.es, func(e entry) bool { return e.id == id })
	l.prefix = nil
}

// ahead is the work of the jobs before e, e itself left out.
func (l *lane) ahead(e entry) float64 {
	if l.prefix == nil {
		l.prefix = make([]float64, len(l.es)+1)
		for i, x := range l.es {
			l.prefix[i+1] = l.prefix[i] + x.w
		}
	}
	i := sort.Search(len(l.es), func(i int) bool { return !l.es[i].less(e) })
	return l.prefix[i]
}

// Assign decides every job's type at time now, for types whose policies
// serve jobs in the given order (ByWork or ByArrival). Jobs that accept no
// type with GPUs keep their current type (or take their first).
func Assign(types []Type, jobs []Job, now time.Time, order string, cfg Config) map[string]Decision {
	if cfg.DefaultSpeed <= 0 {
		cfg.DefaultSpeed = 1
	}
	gpus := map[string]int{}
	for _, t := range types {
		gpus[t.Name] += max(t.GPUs, 0)
	}
	unknown := medianWork(jobs)
	entryOn := func(j *Job, t string) entry {
		w := work(j, unknown) / speed(j, t, cfg)
		key := w
		if order == ByArrival {
			key = float64(j.Submitted.UnixNano())
		}
		return entry{key: key, id: j.ID, w: w}
	}
	lanes := map[string]*lane{}
	laneOf := func(t string) *lane {
		if lanes[t] == nil {
			lanes[t] = &lane{}
		}
		return lanes[t]
	}
	for i := range jobs {
		if j := &jobs[i]; j.Current != "" {
			laneOf(j.Current).add(entryOn(j, j.Current))
		}
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
			if j.Current != t {
				if j.Current != "" {
					laneOf(j.Current).remove(j.ID)
				}
				laneOf(t).add(entryOn(j, t))
			}
			out[j.ID] = Decision{Type: t, Reason: "the only type it accepts"}
			continue
		}
		// F(t): when the job would be done on t, after the work ahead of
		// it in t's order.
		finish := func(t string) float64 {
			if gpus[t] == 0 {
				return math.Inf(1)
			}
			e := entryOn(j, t)
			f := (laneOf(t).ahead(e) + e.w) / float64(gpus[t])
			if j.Ran && j.Current != "" && t != j.Current {
				f += cfg.RestartCost
			}
			return f
		}
		best := j.Types[0]
		for _, t := range j.Types[1:] {
			if finish(t) < finish(best) {
				best = t
			}
		}
		d := Decision{Type: best}
		switch {
		case math.IsInf(finish(best), 1):
			d.Type = cmp.Or(j.Current, j.Types[0])
			d.Reason = "no type it accepts has schedulable GPUs"
		case j.Current == "" || best == j.Current:
			d.Reason = fmt.Sprintf("%s: estimated done in %s there, %s", best, words(finish(best)), alternatives(j, best, finish))
		case now.Sub(j.Since) < cfg.MinDwell:
			d.Type = j.Current
			d.Reason = fmt.Sprintf("%s: moved less than %s ago", j.Current, cfg.MinDwell)
		case finish(best) < (1-cfg.Hysteresis)*finish(j.Current):
			d.Moved = true
			d.Reason = fmt.Sprintf("moved from %s to %s: estimated done in %s there instead of %s", j.Current, best, words(finish(best)), words(finish(j.Current)))
		default:
			d.Type = j.Current
			d.Reason = fmt.Sprintf("%s: %s would be done in %s instead of %s, less than the %.0f%% a move must save",
				j.Current, best, words(finish(best)), words(finish(j.Current)), 100*cfg.Hysteresis)
		}
		if d.Type != j.Current {
			if j.Current != "" {
				laneOf(j.Current).remove(j.ID)
			}
			laneOf(d.Type).add(entryOn(j, d.Type))
		}
		out[j.ID] = d
	}
	return out
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
