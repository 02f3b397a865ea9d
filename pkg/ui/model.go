package ui

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/apis/rest"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
)

// Viewer is the person looking: they see their own jobs, admins every job.
type Viewer struct {
	Name  string
	Admin bool
}

// Sees reports whether v may see job tj.
func (v Viewer) Sees(tj *v1alpha1.TrainingJob) bool {
	return v.Admin || tj.Spec.Submitter == v.Name
}

// Node is a schedulable GPU node as the dashboard draws it.
type Node struct {
	Name    string
	GPUType string
	GPUs    int
	// Other is the GPUs pods that are not Voda's hold on the node.
	Other int
}

// State is everything the views are built from, read at one moment.
type State struct {
	Now        time.Time
	Nodes      []Node
	Jobs       []v1alpha1.TrainingJob
	Schedulers map[string]rest.Scheduler
	Viewer     Viewer
}

// Cell kinds of the cluster grid.
const (
	CellJob    = "job"    // a worker of a job the viewer may see
	CellHidden = "hidden" // a worker of another user's job
	CellOther  = "other"  // held by a pod that is not Voda's
	CellFree   = "free"
)

// Cell is one GPU of the cluster grid.
type Cell struct {
	Kind   string
	Job    string // the job's name (CellJob)
	Worker int    // the worker's index (CellJob)
	Hue    int    // a colour per job, 0–359
	Title  string
}

// NodeView is a node's row of the grid.
type NodeView struct {
	Name  string
	Cells []Cell
}

// TypeView is one GPU type: its scheduler and its nodes.
type TypeView struct {
	rest.Scheduler
	Free  int
	Nodes []NodeView
	// Waiting counts the type's waiting jobs (all users').
	Waiting int
	// Holders are the jobs the viewer may see that hold GPUs on Nodes, by
	// name.
	Holders []Holder
	// Pager says which of the type's nodes Nodes are (ClusterPage).
	Pager Pager
}

// Holder is a job in the grid's key: its colour and the GPUs it holds.
type Holder struct {
	Job  string
	Hue  int
	GPUs int
}

// Cluster is the cluster view: per GPU type, who holds every GPU.
func Cluster(s State) []TypeView {
	byType := map[string][]Node{}
	for _, n := range s.Nodes {
		byType[n.GPUType] = append(byType[n.GPUType], n)
	}
	// Workers by node, in job name and worker order.
	type worker struct {
		tj    *v1alpha1.TrainingJob
		index int
	}
	onNode := map[string][]worker{}
	jobs := sortedJobs(s.Jobs)
	waiting := map[string]int{}
	for _, tj := range jobs {
		switch phaseOf(tj) {
		case v1alpha1.PhaseRunning, v1alpha1.PhaseStarting:
			for i, node := range tj.Status.Placement {
				onNode[node] = append(onNode[node], worker{tj, i})
			}
		case v1alpha1.PhaseWaiting, v1alpha1.PhaseSubmitted:
			waiting[typeOf(tj)]++
		}
	}
	var out []TypeView
	for _, t := range slices.Sorted(maps.Keys(s.Schedulers)) {
		tv := TypeView{Scheduler: s.Schedulers[t], Waiting: waiting[t]}
		nodes := byType[t]
		slices.SortFunc(nodes, func(a, b Node) int { return cmp.Compare(a.Name, b.Name) })
		for _, n := range nodes {
			nv := NodeView{Name: n.Name}
			for _, w := range onNode[n.Name] {
				k := max(int(w.tj.Status.GPUsPerWorker), 1)
				for g := 0; g < k && len(nv.Cells) < n.GPUs; g++ {
					c := Cell{Kind: CellHidden, Title: "held by another user's job"}
					if s.Viewer.Sees(w.tj) {
						c = Cell{Kind: CellJob, Job: w.tj.Name, Worker: w.index, Hue: hue(w.tj.Name),
							Title: fmt.Sprintf("%s worker %d (%s)", w.tj.Name, w.index, w.tj.Spec.Submitter)}
					}
					nv.Cells = append(nv.Cells, c)
				}
			}
			for range min(n.Other, n.GPUs-len(nv.Cells)) {
				nv.Cells = append(nv.Cells, Cell{Kind: CellOther, Title: "held by a pod that is not Voda's"})
			}
			for len(nv.Cells) < n.GPUs {
				nv.Cells = append(nv.Cells, Cell{Kind: CellFree, Title: "free"})
				tv.Free++
			}
			tv.Nodes = append(tv.Nodes, nv)
		}
		tv.Holders = holders(tv.Nodes)
		tv.Pager = Pager{Page: 1, Pages: 1, From: min(1, len(tv.Nodes)), To: len(tv.Nodes), Total: len(tv.Nodes)}
		out = append(out, tv)
	}
	return out
}

// holders is the key of the jobs on nodes: each job the viewer may see with
// its colour and its GPUs there, by name.
func holders(nodes []NodeView) []Holder {
	var out []Holder
	at := map[string]int{}
	for _, nv := range nodes {
		for _, c := range nv.Cells {
			if c.Kind != CellJob {
				continue
			}
			i, ok := at[c.Job]
			if !ok {
				i = len(out)
				at[c.Job] = i
				out = append(out, Holder{Job: c.Job, Hue: c.Hue})
			}
			out[i].GPUs++
		}
	}
	slices.SortFunc(out, func(a, b Holder) int { return cmp.Compare(a.Job, b.Job) })
	return out
}

// hue is a stable colour for a job name.
func hue(name string) int {
	h := uint32(2166136261)
	for i := 0; i < len(name); i++ {
		h = (h ^ uint32(name[i])) * 16777619
	}
	return int(h % 360)
}

// QueueFilter narrows the queue view; empty fields match everything.
type QueueFilter struct {
	Namespace, User, GPUType, Phase string
}

// QueueEntry is a job the queue view lists.
type QueueEntry struct {
	Job     *v1alpha1.TrainingJob
	Phase   v1alpha1.Phase
	GPUType string
	// Position is the job's place among its GPU type's waiting jobs in the
	// order the policy serves them, from 1; Ahead is Position − 1. Both are
	// 0 for jobs that hold GPUs.
	Position, Ahead int
	// Code classifies the reason: no-nodes, no-node, no-room, quota (its
	// queue holds all it may hold), no-queue (its queue cannot be known),
	// requeued, unschedulable, invalid, new, running.
	Code   string
	Reason string
	Waited time.Duration
	GPUs   int // GPUs held (running) or needed at the least (waiting)
}

// QueueView is the queue view: the waiting jobs, in the order served, then
// the running ones, with what the filters can take.
type QueueView struct {
	Filter                      QueueFilter
	Entries                     []QueueEntry
	Namespaces, Users, GPUTypes []string
	Phases                      []string
	Hidden                      int // waiting jobs of other users
	Policies                    map[string]string
	// Pager says which of the entries Entries are (Paginate).
	Pager Pager
}

// Queue builds the queue view. For each GPU type it ranks the waiting jobs
// with the type's policy (algorithm.ServiceOrder) over every user's jobs,
// so positions count jobs the viewer cannot see.
func Queue(s State, f QueueFilter) QueueView {
	v := QueueView{Filter: f, Policies: map[string]string{}, Phases: []string{"Waiting", "Starting", "Running"}}
	byType := map[string][]*v1alpha1.TrainingJob{}
	namespaces, users := map[string]bool{}, map[string]bool{}
	for _, tj := range sortedJobs(s.Jobs) {
		if phaseOf(tj).Final() {
			continue
		}
		byType[typeOf(tj)] = append(byType[typeOf(tj)], tj)
		if s.Viewer.Sees(tj) {
			namespaces[tj.Namespace] = true
			users[tj.Spec.Submitter] = true
		}
	}
	v.Namespaces, v.Users = slices.Sorted(maps.Keys(namespaces)), slices.Sorted(maps.Keys(users))
	types := map[string]bool{}
	for t := range s.Schedulers {
		types[t] = true
	}
	for t := range byType {
		types[t] = true
	}
	v.GPUTypes = slices.Sorted(maps.Keys(types))
	for _, t := range v.GPUTypes {
		sc := s.Schedulers[t]
		v.Policies[t] = sc.Algorithm
		// The parameters that differ from the defaults are all the
		// policy needs; a list that does not read leaves the defaults.
		cfg, err := algorithm.ParseParams(algorithm.DefaultConfig(), sc.Parameters)
		if err != nil {
			cfg = algorithm.DefaultConfig()
		}
		p, err := algorithm.New(sc.Algorithm, cfg)
		if err != nil {
			p = algorithm.FIFO{}
		}
		jobs := byType[t]
		snap := algorithm.Snapshot{Now: s.Now, GPUs: sc.GPUs}
		for _, tj := range jobs {
			snap.Jobs = append(snap.Jobs, policyView(tj, s.Now))
		}
		pos := 0
		for _, i := range algorithm.ServiceOrder(p, &snap) {
			tj := jobs[i]
			e := QueueEntry{Job: tj, Phase: phaseOf(tj), GPUType: t, Waited: waitedAt(tj, s.Now)}
			k := max(int(tj.Spec.GPUsPerWorker), 1)
			switch e.Phase {
			case v1alpha1.PhaseWaiting, v1alpha1.PhaseSubmitted:
				pos++
				e.Position, e.Ahead = pos, pos-1
				e.GPUs = int(tj.Spec.MinWorkers) * k
				e.Code, e.Reason = waitReason(tj, sc, e.Ahead, cfg.Tiresias)
			default:
				e.GPUs = int(tj.Status.Workers) * max(int(tj.Status.GPUsPerWorker), 1)
				e.Code, e.Reason = "running", tj.Status.Message
			}
			if !s.Viewer.Sees(tj) {
				if e.Position > 0 {
					v.Hidden++
				}
				continue
			}
			if (f.Namespace != "" && tj.Namespace != f.Namespace) || (f.User != "" && tj.Spec.Submitter != f.User) ||
				(f.GPUType != "" && t != f.GPUType) || (f.Phase != "" && !strings.EqualFold(string(e.Phase), f.Phase) &&
				!(f.Phase == "Waiting" && e.Phase == v1alpha1.PhaseSubmitted)) {
				continue
			}
			v.Entries = append(v.Entries, e)
		}
	}
	// Waiting jobs first, by type and position; then the rest by name.
	slices.SortStableFunc(v.Entries, func(a, b QueueEntry) int {
		aw, bw := a.Position > 0, b.Position > 0
		if aw != bw {
			if aw {
				return -1
			}
			return 1
		}
		if aw {
			return cmp.Or(cmp.Compare(a.GPUType, b.GPUType), cmp.Compare(a.Position, b.Position))
		}
		return cmp.Or(cmp.Compare(a.GPUType, b.GPUType), cmp.Compare(a.Job.Name, b.Job.Name))
	})
	return v
}

// waitReason says why a waiting job waits, in a code and in words.
func waitReason(tj *v1alpha1.TrainingJob, sc rest.Scheduler, ahead int, tc algorithm.TiresiasConfig) (string, string) {
	msg := strings.TrimPrefix(tj.Status.Message, "waiting: ")
	code := "no-room"
	switch {
	case tj.Status.Phase == "":
		code, msg = "new", "not yet seen by the controller"
	case sc.Nodes == 0:
		code, msg = "no-nodes", fmt.Sprintf("GPU type %s has no schedulable nodes", typeOf(tj))
	case strings.Contains(msg, "no node has that many"):
		code = "no-node"
	case strings.HasPrefix(msg, "unschedulable: "):
		// Out of line until it can run: no place in the queue to give.
		return "unschedulable", msg
	case strings.HasPrefix(msg, "requeued"):
		code = "requeued"
	case strings.Contains(msg, "is at its quota"):
		code = "quota"
	case strings.Contains(msg, "LocalQueue") || strings.Contains(msg, "ClusterQueue") || strings.Contains(msg, "through queues"):
		code = "no-queue"
	case strings.HasPrefix(msg, "invalid"), strings.Contains(msg, "refused"):
		code = "invalid"
	case msg == "":
		msg = "waiting for the next scheduling round"
	}
	parts := []string{msg}
	switch ahead {
	case 0:
		parts = append(parts, "first in line")
	case 1:
		parts = append(parts, "1 job ahead")
	default:
		parts = append(parts, fmt.Sprintf("%d jobs ahead", ahead))
	}
	if q := int(tj.Status.Queue); q > 0 && (sc.Algorithm == algorithm.NameTiresias || sc.Algorithm == algorithm.NameElasticTiresias) {
		had := tj.Status.GPUMillis / 1000
		if q-1 < len(tc.Thresholds) && float64(had) >= tc.Thresholds[q-1] {
			parts = append(parts, fmt.Sprintf("demoted to queue %d after %s GPU-s (it has had %s GPU-s)", q, thousands(int64(tc.Thresholds[q-1])), thousands(had)))
		} else {
			parts = append(parts, fmt.Sprintf("in queue %d by its priority", q))
		}
	}
	return code, strings.Join(parts, "; ")
}

// thousands formats n with thin spaces between groups of three digits.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + " " + s[i:]
	}
	return s
}

// policyView is what a policy would see of a job, from its status.
func policyView(tj *v1alpha1.TrainingJob, now time.Time) algorithm.Job {
	st := &tj.Status
	j := algorithm.Job{
		ID:                 api.JobID(tj.Namespace + "/" + tj.Name),
		Submitted:          submitted(tj),
		Min:                int(tj.Spec.MinWorkers),
		Max:                int(tj.Spec.MaxWorkers),
		Requested:          int(tj.Spec.RequestedWorkers),
		GPUsPerWorker:      int(tj.Spec.GPUsPerWorker),
		Queue:              int(st.Queue),
		Attained:           float64(st.GPUMillis) / 1000,
		AttainedSinceStart: float64(st.SinceStartGPUMillis) / 1000,
		Executed:           float64(st.RunningMillis) / 1000,
		Remaining:          math.Inf(1),
	}
	if p := phaseOf(tj); p == v1alpha1.PhaseRunning || p == v1alpha1.PhaseStarting {
		j.Workers = int(st.Workers)
	}
	if st.FirstStartTime != nil {
		j.FirstStarted = st.FirstStartTime.Time
	}
	if st.RemainingSeconds != nil {
		j.Remaining = float64(*st.RemainingSeconds)
	}
	return j
}

func submitted(tj *v1alpha1.TrainingJob) time.Time {
	if tj.Status.SubmitTime != nil {
		return tj.Status.SubmitTime.Time
	}
	return tj.CreationTimestamp.Time
}

// waitedAt is the job's total time without GPUs at now.
func waitedAt(tj *v1alpha1.TrainingJob, now time.Time) time.Duration {
	w, _, _ := tj.TimesAt(now)
	return w
}

func phaseOf(tj *v1alpha1.TrainingJob) v1alpha1.Phase {
	if tj.Status.Phase == "" {
		return v1alpha1.PhaseSubmitted
	}
	return tj.Status.Phase
}

func sortedJobs(jobs []v1alpha1.TrainingJob) []*v1alpha1.TrainingJob {
	out := make([]*v1alpha1.TrainingJob, len(jobs))
	for i := range jobs {
		out[i] = &jobs[i]
	}
	slices.SortFunc(out, func(a, b *v1alpha1.TrainingJob) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// typeOf is the GPU type a job is on, or for a job of several types not
// placed yet, its first.
func typeOf(tj *v1alpha1.TrainingJob) string {
	if t := tj.CurrentGPUType(); t != "" {
		return t
	}
	if acc := tj.Spec.AcceptedGPUTypes(); len(acc) > 0 {
		return acc[0]
	}
	return ""
}

// Alternatives are the other types a job of several types accepts, for
// showing; empty for a job of one type.
func Alternatives(tj *v1alpha1.TrainingJob) []string {
	if len(tj.Spec.GPUTypes) < 2 {
		return nil
	}
	cur := typeOf(tj)
	var out []string
	for _, t := range tj.Spec.GPUTypes {
		if t != cur {
			out = append(out, t)
		}
	}
	return out
}
