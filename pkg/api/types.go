package api

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// JobID names a training job uniquely within a cluster (namespace/name on
// Kubernetes, the trace's job name in the simulator).
type JobID string

// GPUType names a class of GPU, e.g. "nvidia-tesla-v100". One engine
// schedules each GPU type.
type GPUType string

// NodeName names a node, e.g. the value of its kubernetes.io/hostname label.
type NodeName string

// NodesSpanned is how many distinct nodes a placement's workers are on.
func NodesSpanned[N ~string](nodes []N) int {
	seen := make(map[N]struct{}, len(nodes))
	for _, n := range nodes {
		seen[n] = struct{}{}
	}
	return len(seen)
}

// Phase is where a job is in its life.
type Phase string

// The phases of a job. Submitted jobs are known to the API but not yet to an
// engine; Waiting jobs hold no GPUs; Running jobs hold at least their
// minimum. Completed, Failed and Canceled are final.
const (
	PhaseSubmitted Phase = "Submitted"
	PhaseWaiting   Phase = "Waiting"
	PhaseRunning   Phase = "Running"
	PhaseCompleted Phase = "Completed"
	PhaseFailed    Phase = "Failed"
	PhaseCanceled  Phase = "Canceled"
)

// Final reports whether no further scheduling happens in this phase.
func (p Phase) Final() bool {
	return p == PhaseCompleted || p == PhaseFailed || p == PhaseCanceled
}

// MaxGPUsPerWorker bounds GPUsPerWorker: no node holds more GPUs, and the
// bound keeps workers × GPUs per worker far from overflowing an int.
const MaxGPUsPerWorker = 1024

// JobSpec is what a user asks for. Worker counts are in workers; a worker
// holds GPUsPerWorker GPUs, all on one node.
type JobSpec struct {
	// GPUType selects the engine that schedules the job.
	GPUType GPUType `json:"gpuType"`
	// MinWorkers is the smallest allocation the job can run with (≥ 1).
	MinWorkers int `json:"minWorkers"`
	// MaxWorkers is the largest allocation the job can use (≥ MinWorkers).
	MaxWorkers int `json:"maxWorkers"`
	// RequestedWorkers is the size the user would pick for a rigid run; the
	// non-elastic policies give exactly this many. Zero means MinWorkers.
	RequestedWorkers int `json:"requestedWorkers,omitempty"`
	// Priority is the initial Tiresias queue (0 is the highest). Policies
	// other than the Tiresias family ignore it.
	Priority int `json:"priority,omitempty"`
	// Epochs is the total number of epochs, used to estimate remaining time.
	Epochs int `json:"epochs,omitempty"`
	// Category groups similar jobs so they can share runtime history.
	Category string `json:"category,omitempty"`
	// GPUsPerWorker is the number of GPUs each worker holds, all on one
	// node (torchrun's --nproc-per-node, MPI's slots per worker). Zero
	// means 1.
	GPUsPerWorker int `json:"gpusPerWorker,omitempty"`
	// ClusterQueue is the queue whose quota the job's GPUs count against
	// (docs/queues.md); empty when the cluster has no queues.
	ClusterQueue string `json:"clusterQueue,omitempty"`
	// RestartSeconds is how long a start, resize or move of the job idles
	// it, where its runtime's figure is known (PyTorchRestart); zero
	// leaves the policies' own assumption (HeSRPT's restart cost).
	RestartSeconds float64 `json:"restartSeconds,omitempty"`
}

// PyTorchRestart is how long a resize of a PyTorch job under torchrun
// idles it, with the rendezvous settings Voda gives its PyTorchJobs: the
// slowest change measured with real torchrun, a scale-in at 15.6–16.4 s
// (up to 20.5 s under the race detector; starts, scale-outs, whole
// restarts and resumptions took 6.3–9.5 s; docs/design-notes.md, "Resize
// cost").
const PyTorchRestart = 16 * time.Second

// K returns GPUsPerWorker, defaulting to 1 when unset.
func (s JobSpec) K() int {
	if s.GPUsPerWorker <= 0 {
		return 1
	}
	return s.GPUsPerWorker
}

// Requested returns RequestedWorkers, defaulting to MinWorkers when unset.
func (s JobSpec) Requested() int {
	if s.RequestedWorkers == 0 {
		return s.MinWorkers
	}
	return s.RequestedWorkers
}

// Validate reports every problem with the worker range and priority in one
// error, phrased so a user knows what to change.
func (s JobSpec) Validate() error {
	var errs []error
	if s.MinWorkers < 1 {
		errs = append(errs, fmt.Errorf("minWorkers is %d, must be at least 1", s.MinWorkers))
	}
	if s.MaxWorkers < s.MinWorkers {
		errs = append(errs, fmt.Errorf("maxWorkers (%d) is below minWorkers (%d)", s.MaxWorkers, s.MinWorkers))
	}
	if r := s.RequestedWorkers; r != 0 && (r < s.MinWorkers || r > s.MaxWorkers) {
		errs = append(errs, fmt.Errorf("requestedWorkers (%d) is outside [minWorkers, maxWorkers] = [%d, %d]", r, s.MinWorkers, s.MaxWorkers))
	}
	if s.Priority < 0 {
		errs = append(errs, fmt.Errorf("priority is %d, must be 0 (highest) or more", s.Priority))
	}
	if s.Epochs < 0 {
		errs = append(errs, fmt.Errorf("epochs is %d, must not be negative", s.Epochs))
	}
	if k := s.GPUsPerWorker; k < 0 || k > MaxGPUsPerWorker {
		errs = append(errs, fmt.Errorf("gpusPerWorker is %d, must be between 1 and %d (0 means 1)", k, MaxGPUsPerWorker))
	}
	return errors.Join(errs...)
}

// Node is a schedulable node of one GPU type.
type Node struct {
	Name NodeName `json:"name"`
	GPUs int      `json:"gpus"`
}

// Allocation maps jobs to their number of workers. A job that is absent
// holds zero. A worker holds its job's GPUsPerWorker GPUs.
type Allocation map[JobID]int

// Total is the number of workers the allocation hands out: its GPUs when
// every worker holds one.
func (a Allocation) Total() int {
	n := 0
	for _, w := range a {
		n += w
	}
	return n
}

// Slot is a run of a job's consecutive workers on one node.
type Slot struct {
	Node    NodeName `json:"node"`
	Workers int      `json:"workers"`
}

// Placement maps each placed job to the node of every worker, by worker
// index: Placement[j][i] is where worker i of job j runs. Worker indices
// matter because the training operator removes the highest indices first
// when a job shrinks.
type Placement map[JobID][]NodeName

// Slots compresses a job's per-worker nodes into runs of consecutive workers
// on the same node, in worker order.
func Slots(nodes []NodeName) []Slot {
	var out []Slot
	for _, n := range nodes {
		if k := len(out); k > 0 && out[k-1].Node == n {
			out[k-1].Workers++
			continue
		}
		out = append(out, Slot{Node: n, Workers: 1})
	}
	return out
}

// ActionKind is what a backend must do to one job.
type ActionKind string

// Action kinds, in the order an engine emits them within one plan: capacity
// is freed (halt, scale-in) before it is used (start, scale-out), and
// migrations come last, once every job has its final size.
const (
	ActionHalt     ActionKind = "Halt"
	ActionScaleIn  ActionKind = "ScaleIn"
	ActionStart    ActionKind = "Start"
	ActionScaleOut ActionKind = "ScaleOut"
	ActionMigrate  ActionKind = "Migrate"
)

// WorkerMove moves one worker of a job to another node.
type WorkerMove struct {
	Index int      `json:"index"`
	From  NodeName `json:"from"`
	To    NodeName `json:"to"`
}

// Action is one step of a plan.
type Action struct {
	Kind ActionKind `json:"kind"`
	Job  JobID      `json:"job"`
	// From and To are the job's worker counts before and after.
	From int `json:"from"`
	To   int `json:"to"`
	// Nodes is the node of every worker after the action, by worker index.
	Nodes []NodeName `json:"nodes,omitempty"`
	// Moves lists migrated workers (Migrate only).
	Moves []WorkerMove `json:"moves,omitempty"`
	// RestartAll says every worker moves, so the launcher restarts too.
	RestartAll bool `json:"restartAll,omitempty"`
	// Reason says why, in words a user can read.
	Reason string `json:"reason,omitempty"`
}

func (a Action) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %d→%d", a.Kind, a.Job, a.From, a.To)
	if len(a.Moves) > 0 {
		for _, m := range a.Moves {
			fmt.Fprintf(&b, " w%d:%s→%s", m.Index, m.From, m.To)
		}
	}
	if a.RestartAll {
		b.WriteString(" (all workers)")
	}
	if a.Reason != "" {
		fmt.Fprintf(&b, " (%s)", a.Reason)
	}
	return b.String()
}

// Plan is the outcome of one scheduling round: the actions that get from
// the current state to what the round decided. The decided sizes and nodes
// are the jobs' once the actions are applied.
type Plan struct {
	// Rescheduled says the round ran; a plan without it had nothing due.
	Rescheduled bool     `json:"rescheduled"`
	Actions     []Action `json:"actions"`
}
