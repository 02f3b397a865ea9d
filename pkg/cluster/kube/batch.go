package kube

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/estimator"
)

// Jobs that let Voda choose their batch size (spec.batchSize) are
// scheduled by goodput: the policies see, at every worker count, the
// speedup the best batch there gives (estimator.Adaptive), from the
// estimator's fit of the job's epoch times and the noise scale its
// gradient statistics measure.
//
// The workers learn their batch from VODA_BATCH_SIZES, the batch at every
// worker count ("workers:global:local:accumulation", space-separated),
// which each pod reads from its template's annotation BatchSizesAnnotation
// through the downward API. The table is chosen when the child is created
// and at every resume (a preemption's, a whole restart's) and holds
// through resizes, so that the workers a resize keeps and those it adds
// agree: a script picks its row by its world size. A batch change alone
// restarts the job as a whole when it pays (retuneWorth).

// The environment of a job that lets Voda choose its batch size.
const (
	// EnvBatchSizes is the batch at every worker count.
	EnvBatchSizes = "VODA_BATCH_SIZES"
	// EnvInitialBatchSize is spec.batchSize.initial, which the job's
	// work (spec.epochs) is counted at.
	EnvInitialBatchSize = "VODA_INITIAL_BATCH_SIZE"
	// BatchSizesAnnotation holds the table on the child's pod templates.
	BatchSizesAnnotation = "vodascheduler.io/batch-sizes"
)

// batchState is what the controller keeps of a job that lets Voda choose
// its batch size; guarded by estMu.
type batchState struct {
	// initial is spec.batchSize.initial.
	initial int
	// best is the latest estimate: the best batch and goodput at every
	// count.
	best estimator.Adaptive
	// noise is the job's noise scale, samples; negative while unknown.
	noise float64
	// table is the batch at each count as the workers were last given it
	// (index: workers), and sizes its text; nil before the first start.
	table []estimator.Batch
	sizes string
	// retune says why the job should restart for a batch change alone,
	// at retuneAt workers; retunes counts those restarts.
	retune   string
	retuneAt int
	retunes  int32
}

// batchRange is a job's range, nil for a job with a batch of its own.
func batchRange(tj *v1alpha1.TrainingJob) *estimator.BatchRange {
	b := tj.Spec.BatchSize
	if b == nil {
		return nil
	}
	return &estimator.BatchRange{Initial: int(b.Initial), Max: int(b.Max), PerGPUMax: int(b.PerGPUMax)}
}

// batchRangeOf is a job's range, nil for a job with a batch of its own,
// with its category's learned batch model on gpuType once the category's
// jobs measured enough steps there (stepsOf), brought to their measured
// means where they measured two batches or more (StepModels.BatchModel),
// and the step times at the initial batch that bound the job's speedup
// where it was not measured (Fit.Bounded); before that no bound and, at a worker count where they
// measured two batches, the line through them (StepModels.Line), and
// BatchTime's fixed shares elsewhere. Workers are taken to be packed: k is
// the GPUs per worker, perNode the GPUs of the type's nodes.
// The caller holds estMu.
func (c *Controller) batchRangeOf(tj *v1alpha1.TrainingJob, gpuType string, k, perNode int) *estimator.BatchRange {
	r := batchRange(tj)
	if r == nil {
		return nil
	}
	cat := stepCategory(tj, gpuType)
	placed := func(n int) (int, int) {
		gpus := n * max(k, 1)
		return gpus, packedNodes(gpus, perNode)
	}
	if m := c.steps.Model(cat); m.Known() {
		r.Time = c.steps.BatchModel(cat, r.Initial, int(tj.Spec.MaxWorkers), placed)
		initial := r.Initial
		r.Steps = func(n int) float64 {
			gpus, nodes := placed(n)
			return m.Seconds(gpus, nodes, initial)
		}
		return r
	}
	// Before the model is known, two batches measured at a worker count
	// tell a step's fixed part from its per-sample part there. The lines
	// are read now: the range is used after estMu is let go.
	if lines := c.steps.Lines(cat, int(tj.Spec.MaxWorkers), placed); lines != nil {
		initial := r.Initial
		r.Time = func(n, batch int) float64 {
			if n >= 0 && n < len(lines) && lines[n].PerSample > 0 {
				return lines[n].Ratio(initial, batch)
			}
			return estimator.BatchTime(n, initial, batch)
		}
	}
	return r
}

// stepCategory is where a job's steps on a GPU type are learnt: its
// category's on that type (each type runs at its own speed).
func stepCategory(tj *v1alpha1.TrainingJob, gpuType string) string {
	return category(tj) + "@" + gpuType
}

// packedNodes is how many nodes of perNode GPUs gpus GPUs span when
// packed: the progress reports say how many workers ran, not where, and
// placement keeps a job on as few nodes as it can. One when perNode is
// unknown.
func packedNodes(gpus, perNode int) int {
	if perNode < 1 {
		return 1
	}
	return max((gpus+perNode-1)/perNode, 1)
}

// stepsOf are the steps a job's epochs on gpuType measured, for its
// category's batch model: at each worker count and batch, the mean epoch
// time times the batch (a step's time in the category's unit: the jobs of
// a category train on one dataset), on the nodes the workers were on
// (EpochTime.Nodes), or where that is not known on packed nodes of perNode
// GPUs.
func stepsOf(tj *v1alpha1.TrainingJob, gpuType string, k, perNode int) []estimator.StepSample {
	p := tj.Status.Progress
	if p == nil || tj.Spec.BatchSize == nil {
		return nil
	}
	var out []estimator.StepSample
	for _, et := range p.EpochTimes {
		if et.Batch < 1 || et.Workers < 1 || (et.GPUType != "" && et.GPUType != gpuType) {
			continue
		}
		gpus := int(et.Workers) * max(k, 1)
		nodes := int(et.Nodes)
		if nodes < 1 || nodes > gpus {
			nodes = packedNodes(gpus, perNode)
		}
		out = append(out, estimator.StepSample{GPUs: gpus, Nodes: nodes, Batch: int(et.Batch),
			Seconds: float64(et.Millis) / 1000 * float64(et.Batch)})
	}
	return out
}

// nodeGPUs is the most GPUs a usable node of a type offers; 0 when none
// does.
func (c *Controller) nodeGPUs(gpuType string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	most := 0
	for _, n := range c.nodes {
		if string(n.gpuType) == gpuType {
			most = max(most, n.gpus)
		}
	}
	return most
}

// noiseOf is the noise scale a job's reports measured; -1 when none did.
func noiseOf(tj *v1alpha1.TrainingJob) float64 {
	if p := tj.Status.Progress; p != nil && p.NoiseScale != nil {
		return p.NoiseScale.AsApproximateFloat64()
	}
	return -1
}

// adapt brings a job's batch state up to a fit and its range r (nil for a
// job with a batch of its own, then adapt returns nil) and returns it. k
// is the job's GPUs per worker. The caller holds estMu.
func (c *Controller) adapt(tj *v1alpha1.TrainingJob, r *estimator.BatchRange, k int, fit estimator.Fit) *batchState {
	if r == nil {
		return nil
	}
	id := jobID(client.ObjectKeyFromObject(tj))
	b := c.batches[id]
	if b == nil {
		b = &batchState{}
		c.batches[id] = b
	}
	b.initial = r.Initial
	b.noise = noiseOf(tj)
	b.best = fit.Adapt(*r, max(k, 1), int(tj.Spec.MaxWorkers), b.noise)
	if b.table == nil {
		b.recover(tj, nil, nil)
	}
	return b
}

// recover reads the table in force from the status, else from the
// child's worker template (a controller that just took over).
func (b *batchState) recover(tj *v1alpha1.TrainingJob, rt *workload, child *unstructured.Unstructured) {
	sizes := ""
	if s := tj.Status.Batch; s != nil {
		sizes, b.retunes = s.Sizes, s.Retunes
	}
	if child != nil && rt != nil {
		if v, ok, _ := unstructured.NestedString(child.Object, "spec", rt.replicas[1], "Worker", "template", "metadata", "annotations", BatchSizesAnnotation); ok {
			sizes = v
		}
	}
	if t, err := parseBatchSizes(sizes); err == nil && sizes != "" {
		b.table, b.sizes = t, sizes
	}
}

// recoverBatch makes sure the controller knows the batch sizes a running
// job's workers were given (after it took over from another).
func (c *Controller) recoverBatch(tj *v1alpha1.TrainingJob, rt *workload, child *unstructured.Unstructured) {
	if tj.Spec.BatchSize == nil || child == nil {
		return
	}
	perNode := c.nodeGPUs(tj.CurrentGPUType())
	c.estMu.Lock()
	defer c.estMu.Unlock()
	if b := c.batchState(tj, perNode); b.table == nil {
		b.recover(tj, rt, child)
	}
}

// batchState is what the controller keeps of a job that lets it choose its
// batch size, made from the latest estimate if it has nothing yet; perNode
// is the GPUs of its type's nodes. The caller holds estMu.
func (c *Controller) batchState(tj *v1alpha1.TrainingJob, perNode int) *batchState {
	id := jobID(client.ObjectKeyFromObject(tj))
	if b := c.batches[id]; b != nil {
		return b
	}
	k, _ := c.workerUnits(tj)
	return c.adapt(tj, c.batchRangeOf(tj, tj.CurrentGPUType(), k, perNode), k, c.est.Estimate(string(id), category(tj)))
}

// formatBatchSizes is the text of a table (index: workers; counts with no
// batch left out).
func formatBatchSizes(t []estimator.Batch) string {
	var sb strings.Builder
	for n, b := range t {
		if n == 0 || b.Global == 0 {
			continue
		}
		if sb.Len() > 0 {
			sb.WriteByte(' ')
		}
		fmt.Fprintf(&sb, "%d:%d:%d:%d", n, b.Global, b.Local, b.Accumulation)
	}
	return sb.String()
}

// parseBatchSizes reads a table's text back.
func parseBatchSizes(s string) ([]estimator.Batch, error) {
	var t []estimator.Batch
	for _, f := range strings.Fields(s) {
		parts := strings.Split(f, ":")
		if len(parts) != 4 {
			return nil, fmt.Errorf("batch sizes entry %q is not workers:global:local:accumulation", f)
		}
		var v [4]int
		for i, p := range parts {
			x, err := strconv.Atoi(p)
			if err != nil || x < 1 || x > math.MaxInt32 {
				return nil, fmt.Errorf("batch sizes entry %q: %q is not a count", f, p)
			}
			v[i] = x
		}
		if v[0] > 1_000_000 {
			return nil, fmt.Errorf("batch sizes entry %q: too many workers", f)
		}
		for len(t) <= v[0] {
			t = append(t, estimator.Batch{})
		}
		t[v[0]] = estimator.Batch{Global: v[1], Local: v[2], Accumulation: v[3]}
	}
	return t, nil
}

// batchSizes chooses the table a job's workers get now, from its latest
// estimate (its category's, or the initial batch, before it reported),
// and remembers it as the one in force. "" for a job with a batch of its
// own.
func (c *Controller) batchSizes(tj *v1alpha1.TrainingJob) string {
	if tj.Spec.BatchSize == nil {
		return ""
	}
	perNode := c.nodeGPUs(tj.CurrentGPUType())
	c.estMu.Lock()
	defer c.estMu.Unlock()
	b := c.batchState(tj, perNode)
	t := make([]estimator.Batch, int(tj.Spec.MaxWorkers)+1)
	for n := 1; n < len(t); n++ {
		t[n] = b.best.Batch(n)
	}
	b.table, b.sizes, b.retune = t, formatBatchSizes(t), ""
	return b.sizes
}

// batchEnv is the environment of a job that lets Voda choose its batch
// size: its table, through the downward API from the pod's annotation, and
// its initial batch. Nil for a job with a batch of its own.
func batchEnv(tj *v1alpha1.TrainingJob) []corev1.EnvVar {
	b := tj.Spec.BatchSize
	if b == nil {
		return nil
	}
	return []corev1.EnvVar{
		{Name: EnvBatchSizes, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
			FieldPath: "metadata.annotations['" + BatchSizesAnnotation + "']"}}},
		{Name: EnvInitialBatchSize, Value: strconv.Itoa(int(b.Initial))},
	}
}

// templatesAnnotation is the part of a child (or of a merge patch of it)
// that sets the batch sizes annotation on every pod template of its
// replica specs (rt.replicas[1]: the workers', and the MPI launcher's).
func (r *workload) templatesAnnotation(child *unstructured.Unstructured, sizes string) map[string]any {
	specs, _, _ := unstructured.NestedMap(child.Object, "spec", r.replicas[1])
	out := map[string]any{}
	for role := range specs {
		out[role] = map[string]any{"template": map[string]any{"metadata": map[string]any{
			"annotations": map[string]any{BatchSizesAnnotation: sizes}}}}
	}
	return out
}

// annotate sets the batch sizes annotation on every pod template of a
// child being built.
func (r *workload) annotate(child *unstructured.Unstructured, sizes string) error {
	specs, _, err := unstructured.NestedMap(child.Object, "spec", r.replicas[1])
	if err != nil {
		return err
	}
	for role := range specs {
		path := []string{"spec", r.replicas[1], role, "template", "metadata", "annotations", BatchSizesAnnotation}
		if err := unstructured.SetNestedField(child.Object, sizes, path...); err != nil {
			return err
		}
	}
	return nil
}

// showBatch puts the batch in force at workers workers, and its
// efficiency, into a status.
func (c *Controller) showBatch(id api.JobID, workers int, s *v1alpha1.TrainingJobStatus) {
	c.estMu.Lock()
	defer c.estMu.Unlock()
	b := c.batches[id]
	if b == nil || b.table == nil {
		return
	}
	bs := &v1alpha1.BatchStatus{Sizes: b.sizes, Retunes: b.retunes}
	if workers > 0 && workers < len(b.table) {
		in := b.table[workers]
		bs.Global, bs.Local, bs.Accumulation = int32(in.Global), int32(in.Local), int32(in.Accumulation)
		bs.EfficiencyPercent = int32(math.Round(100 * estimator.Efficiency(b.noise, b.initial, in.Global)))
	}
	s.Batch = bs
}

// retuneWorth says why a running job should restart for a batch change
// alone, or "": when the best batch at its workers makes enough more
// goodput than the one in force that the time it saves exceeds twice the
// restart (the break-even the simulator and HeSRPT apply to resizes: the
// restart itself and as much again against flapping). remaining is the
// work left in seconds at one worker at the best batch there (negative
// when unknown: the job is taken to run retuneHorizon more at its
// workers), restart the job's restart in seconds. The caller holds estMu.
func (b *batchState) retuneWorth(workers int, remaining, restart float64) string {
	if b == nil || b.table == nil || workers < 1 || workers >= len(b.table) {
		return ""
	}
	in, best := b.table[workers], b.best.Batch(workers)
	if in.Global == 0 || best.Global == 0 || in.Global == best.Global {
		return ""
	}
	left := retuneHorizon.Seconds()
	if remaining >= 0 {
		g := b.best.Speedup(workers)
		if !(g > 0) {
			return ""
		}
		left = remaining / g
	}
	saved := b.best.RetuneSaving(workers, in.Global, left)
	if saved <= 2*restart {
		return ""
	}
	return fmt.Sprintf("batch size %d→%d: about %s sooner on %d workers", in.Global, best.Global, words(saved-restart), workers)
}

// retuneHorizon is how much longer a job of unknown length (no
// spec.epochs) is taken to run when a batch change is weighed: HeSRPT's
// horizon for a new size.
const retuneHorizon = time.Hour

// retuneDue says why a running job whose child runs its n workers should
// restart for a batch change alone (as learn found), or "", and counts
// the restart.
func (c *Controller) retuneDue(tj *v1alpha1.TrainingJob, id api.JobID, n int32, st childState) string {
	if st.suspended || st.replicas != n || tj.Status.Phase != v1alpha1.PhaseRunning {
		return ""
	}
	c.estMu.Lock()
	defer c.estMu.Unlock()
	b := c.batches[id]
	if b == nil || b.retune == "" || b.retuneAt != int(n) {
		return "" // none, or found for another size than the job now has
	}
	why := b.retune
	b.retune = ""
	b.retunes++
	return why
}
