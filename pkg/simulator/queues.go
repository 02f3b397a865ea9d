package simulator

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"os"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/quota"
)

// maxQueueFileBytes bounds a --queues file.
const maxQueueFileBytes = 4 << 20

// ReadQueues reads ClusterQueue objects (vodascheduler.io/v1alpha1, the
// CRD's own YAML, several documents per file) for a simulation of one GPU
// type: each queue lists at most one GPU type in spec.quotas, whatever its
// name, and its quota there is its quota in the simulated cluster.
// Unknown fields, other kinds and invalid settings are errors naming the
// document.
func ReadQueues(path string) ([]quota.Queue, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("queues: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxQueueFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("queues %s: %w", path, err)
	}
	if len(data) > maxQueueFileBytes {
		return nil, fmt.Errorf("queues %s: larger than %d MiB", path, maxQueueFileBytes>>20)
	}
	qs, err := ParseQueues(data)
	if err != nil {
		return nil, fmt.Errorf("queues %s: %w", path, err)
	}
	return qs, nil
}

// ParseQueues is ReadQueues on the file's contents.
func ParseQueues(data []byte) ([]quota.Queue, error) {
	rd := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []quota.Queue
	seen := map[string]bool{}
	for doc := 1; ; doc++ {
		raw, err := rd.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}
		if len(bytes.TrimSpace(stripComments(raw))) == 0 {
			doc--
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(raw, &tm); err != nil {
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}
		if tm.Kind != "ClusterQueue" || tm.APIVersion != v1alpha1.GroupVersion.String() {
			return nil, fmt.Errorf("document %d is %s %s: want kind ClusterQueue, apiVersion %s", doc, tm.APIVersion, tm.Kind, v1alpha1.GroupVersion)
		}
		var cq v1alpha1.ClusterQueue
		if err := yaml.UnmarshalStrict(raw, &cq); err != nil {
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}
		if err := cq.Validate(); err != nil {
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}
		if len(cq.Spec.Quotas) > 1 {
			return nil, fmt.Errorf("document %d: ClusterQueue %s has quotas for %d GPU types; the simulated cluster has one (give one quota per queue)", doc, cq.Name, len(cq.Spec.Quotas))
		}
		if seen[cq.Name] {
			return nil, fmt.Errorf("document %d: ClusterQueue %s appears twice", doc, cq.Name)
		}
		seen[cq.Name] = true
		t := ""
		if len(cq.Spec.Quotas) == 1 {
			t = cq.Spec.Quotas[0].GPUType
		}
		out = append(out, cq.QuotaFor(t))
	}
	if len(out) == 0 {
		return nil, errors.New("no ClusterQueue in the file")
	}
	return out, nil
}

func stripComments(b []byte) []byte {
	var out []byte
	for _, line := range bytes.Split(b, []byte("\n")) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			out = append(out, t...)
		}
	}
	return out
}

// TeamQueues is n queues of equal nominal quota, team-a, team-b, …, in
// one cohort: the GPUs split evenly, any remainder in no quota.
func TeamQueues(n, gpus int) ([]quota.Queue, error) {
	if n < 1 || n > 26 {
		return nil, fmt.Errorf("%d teams: want 1 to 26", n)
	}
	out := make([]quota.Queue, n)
	for i := range out {
		out[i] = quota.Queue{Name: "team-" + string(rune('a'+i)), Cohort: "teams", Nominal: gpus / n,
			BorrowingLimit: quota.Unlimited, LendingLimit: quota.Unlimited, Weight: 1, Reclaim: quota.ReclaimAny}
	}
	return out, nil
}

// The ways SpreadQueues assigns jobs.
const (
	SpreadEven = "even"
	SpreadHalf = "half"
)

// SpreadQueues gives every job of w a queue among names, by a hash of its
// name so that the split is fixed for a job whatever else the workload
// holds: even spreads them evenly; half gives the first queue half of the
// jobs and the others the rest evenly (one team submits half the work).
// A workload that names its jobs' queues already is an error.
func SpreadQueues(w Workload, names []string, how string) (Workload, error) {
	if len(names) == 0 {
		return Workload{}, errors.New("no queues to spread jobs over")
	}
	if how != SpreadEven && how != SpreadHalf {
		return Workload{}, fmt.Errorf("spread %q: want %s or %s", how, SpreadEven, SpreadHalf)
	}
	out := Workload{Name: w.Name, Jobs: slices.Clone(w.Jobs)}
	for i := range out.Jobs {
		j := &out.Jobs[i]
		if j.QueueName != "" {
			return Workload{}, fmt.Errorf("workload %s names its jobs' queues (job %s: %s): do not spread it", w.Name, j.Name, j.QueueName)
		}
		h := fnv.New64a()
		h.Write([]byte(j.Name))
		u := float64(mix(h.Sum64())>>11) / float64(1<<53)
		k := int(u * float64(len(names)))
		if how == SpreadHalf && len(names) > 1 {
			k = 0
			if u >= 0.5 {
				k = 1 + int((u-0.5)*2*float64(len(names)-1))
			}
		}
		j.QueueName = names[min(k, len(names)-1)]
	}
	return out, nil
}

// QueueResult is how one queue's jobs fared.
type QueueResult struct {
	Name string
	Jobs int
	// MeanJCT is its jobs' mean completion time; AloneJCT the same jobs'
	// alone on a static partition of the queue's nominal quota (NaN when
	// some job cannot run there: its minimum exceeds the quota).
	MeanJCT, AloneJCT float64
	// BelowNominal is the time the queue spent with a waiting job whose
	// start its unused nominal quota could cover, beyond one scheduling
	// round and one restart per episode.
	BelowNominal float64
}

// SharingIncentive is MeanJCT ÷ AloneJCT (Themis): at most 1 when sharing
// the cluster did the team no harm.
func (q QueueResult) SharingIncentive() float64 { return q.MeanJCT / q.AloneJCT }

// queueTracker measures, during a run, how long each queue waits below its
// nominal quota with a job its unused quota could start.
type queueTracker struct {
	idx   map[string]int
	queue []quota.Queue
	since []float64 // start of the current episode, or NaN
	total []float64
	grace float64
}

func newQueueTracker(qs []quota.Queue, grace float64) *queueTracker {
	t := &queueTracker{idx: map[string]int{}, queue: qs, since: make([]float64, len(qs)), total: make([]float64, len(qs)), grace: grace}
	for i, q := range qs {
		t.idx[q.Name] = i
		t.since[i] = math.NaN()
	}
	return t
}

// observe looks at the cluster at time now (seconds).
func (t *queueTracker) observe(r *run, now float64) {
	used := make([]int, len(t.queue))
	need := make([]int, len(t.queue))
	for i := range need {
		need[i] = math.MaxInt
	}
	for id, ji := range r.live {
		q := t.idx[ji.QueueName]
		if n, _ := r.cluster.Workers(id); n > 0 {
			used[q] += n * ji.spec.K()
			continue
		}
		size := ji.spec.MinWorkers
		if algorithm.Rigid(r.engine.Policy()) {
			size = ji.spec.Requested()
		}
		need[q] = min(need[q], size*ji.spec.K())
	}
	for i, q := range t.queue {
		below := need[i] != math.MaxInt && used[i]+need[i] <= q.Nominal
		switch {
		case below && math.IsNaN(t.since[i]):
			t.since[i] = now
		case !below && !math.IsNaN(t.since[i]):
			t.total[i] += max(now-t.since[i]-t.grace, 0)
			t.since[i] = math.NaN()
		}
	}
}

// close ends the episodes still open at now.
func (t *queueTracker) close(now float64) {
	for i := range t.queue {
		if !math.IsNaN(t.since[i]) {
			t.total[i] += max(now-t.since[i]-t.grace, 0)
			t.since[i] = math.NaN()
		}
	}
}

// QueueNames lists the queues' names.
func QueueNames(qs []quota.Queue) []string {
	out := make([]string, len(qs))
	for i, q := range qs {
		out[i] = q.Name
	}
	return out
}

// checkQueues reports jobs whose queue is not among the configured ones.
func checkQueues(qs []quota.Queue, w Workload) error {
	names := QueueNames(qs)
	for _, j := range w.Jobs {
		switch {
		case len(qs) == 0 && j.QueueName != "":
			return fmt.Errorf("job %s names queue %s but no queues are given (--queues or --teams)", j.Name, j.QueueName)
		case len(qs) > 0 && j.QueueName == "":
			return fmt.Errorf("job %s names no queue: give the workload a queue column, or --spread to spread its jobs over the queues", j.Name)
		case len(qs) > 0 && !slices.Contains(names, j.QueueName):
			return fmt.Errorf("job %s names queue %s, which is not among the queues (%s)", j.Name, j.QueueName, strings.Join(names, ", "))
		}
	}
	return nil
}

// aloneJCTs runs each queue's jobs alone on a static partition of its
// nominal quota (the queue on its own, outside any cohort, so it neither
// lends nor borrows) and sets every queue's AloneJCT. A queue some of
// whose jobs cannot run within its quota keeps NaN.
func aloneJCTs(cfg Config, w Workload, cat Catalog, out []QueueResult) error {
	for i := range out {
		q := cfg.Queues[slices.IndexFunc(cfg.Queues, func(q quota.Queue) bool { return q.Name == out[i].Name })]
		part := Workload{Name: w.Name + "/" + q.Name}
		for _, j := range w.Jobs {
			if j.QueueName == q.Name {
				part.Jobs = append(part.Jobs, j)
			}
		}
		if len(part.Jobs) == 0 {
			continue
		}
		q.Cohort, q.BorrowingLimit, q.LendingLimit = "", quota.Unlimited, quota.Unlimited
		c := cfg
		c.Queues, c.alone, c.RecordEvents = []quota.Queue{q}, true, false
		res, err := Run(c, part, cat)
		if err != nil {
			if errors.Is(err, errNeverFinish) {
				continue // some job cannot run on the partition
			}
			return fmt.Errorf("queue %s alone: %w", q.Name, err)
		}
		total := 0.0
		for _, j := range res.Jobs {
			total += j.JCT
		}
		out[i].AloneJCT = total / float64(len(res.Jobs))
	}
	return nil
}

// mix is splitmix64's finaliser: FNV leaves the high bits of similar short
// names alike, and the split reads them.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}
