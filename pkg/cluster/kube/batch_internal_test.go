package kube

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/estimator"
)

// The table the workers get reads back as written; malformed text is an
// error, not a table.
func TestBatchSizesText(t *testing.T) {
	table := []estimator.Batch{{}, {Global: 256, Local: 128, Accumulation: 2}, {}, {Global: 768, Local: 256, Accumulation: 1}}
	text := formatBatchSizes(table)
	if text != "1:256:128:2 3:768:256:1" {
		t.Fatalf("formatted %q", text)
	}
	back, err := parseBatchSizes(text)
	if err != nil || !reflect.DeepEqual(back, table) {
		t.Errorf("read back %+v, %v; want %+v", back, err, table)
	}
	for _, bad := range []string{"1:256:128", "x:1:1:1", "1:0:1:1", "2000000:1:1:1", "1:-4:1:1"} {
		if _, err := parseBatchSizes(bad); err == nil || !strings.Contains(err.Error(), "batch sizes entry") {
			t.Errorf("%q: %v, want an error naming the entry", bad, err)
		}
	}
}

// A job's reported epochs become its category's steps: only its batch
// epochs on the type asked for, GPUs = workers × GPUs per worker, on the
// nodes the report says, or packed on the type's nodes where it does not,
// time = epoch time × batch.
func TestStepsOf(t *testing.T) {
	tj := &v1alpha1.TrainingJob{}
	tj.Spec.BatchSize = &v1alpha1.BatchSizeSpec{Initial: 64, Max: 1024}
	tj.Status.Progress = &v1alpha1.TrainingProgress{EpochTimes: []v1alpha1.EpochTime{
		{Workers: 1, Millis: 40000, Epochs: 2, GPUType: "a100", Batch: 64},
		{Workers: 3, Millis: 10000, Epochs: 1, GPUType: "a100", Batch: 256},
		{Workers: 3, Millis: 9000, Epochs: 1, GPUType: "v100", Batch: 256}, // another type
		{Workers: 2, Millis: 20000, Epochs: 1, Batch: 128},                 // type not known: this one's
		{Workers: 2, Millis: 20000, Epochs: 1, GPUType: "a100"},            // no batch
		{Workers: 3, Millis: 12000, Epochs: 1, GPUType: "a100", Batch: 256, Nodes: 3},
		{Workers: 1, Millis: 30000, Epochs: 1, GPUType: "a100", Batch: 64, Nodes: 4}, // more nodes than GPUs: packed
	}}
	got := stepsOf(tj, "a100", 2, 4)
	want := []estimator.StepSample{
		{GPUs: 2, Nodes: 1, Batch: 64, Seconds: 40 * 64},
		{GPUs: 6, Nodes: 2, Batch: 256, Seconds: 10 * 256},
		{GPUs: 4, Nodes: 1, Batch: 128, Seconds: 20 * 128},
		{GPUs: 6, Nodes: 3, Batch: 256, Seconds: 12 * 256},
		{GPUs: 2, Nodes: 1, Batch: 64, Seconds: 30 * 64},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("steps %+v, want %+v", got, want)
	}
	if got := stepsOf(tj, "a100", 2, 0); got[1].Nodes != 1 {
		t.Errorf("without a node size, 6 GPUs on %d nodes, want 1", got[1].Nodes)
	}
	tj.Spec.BatchSize = nil
	if got := stepsOf(tj, "a100", 2, 4); got != nil {
		t.Errorf("a job with a batch of its own gave steps %+v", got)
	}
}

// Before a category's step model is known, a worker count where its jobs
// measured two batches gets the line through them as its batch model, and
// the others keep the fixed shares; the range holds the lines it was made
// with, whatever the models learn after.
func TestBatchRangeOfLineBeforeTheModel(t *testing.T) {
	c := &Controller{steps: estimator.StepModels{Deferred: true}}
	tj := &v1alpha1.TrainingJob{}
	tj.Namespace, tj.Name = "team", "ncf-1"
	tj.Spec.MaxWorkers = 4
	tj.Spec.BatchSize = &v1alpha1.BatchSizeSpec{Initial: 256, Max: 16384}
	// On one worker, a step takes 7.4 ms at 256 and 20.1 ms at 9 742.
	tj.Status.Progress = &v1alpha1.TrainingProgress{EpochTimes: []v1alpha1.EpochTime{
		{Workers: 1, Millis: 7400, Epochs: 1, GPUType: "a100", Batch: 256},
		{Workers: 1, Millis: 20100 * 256 / 9742, Epochs: 1, GPUType: "a100", Batch: 9742},
	}}
	fixed := c.batchRangeOf(tj, "a100", 1, 8)
	if fixed.Time != nil {
		t.Fatal("a batch model before any step was measured")
	}
	steps := stepsOf(tj, "a100", 1, 8)
	c.steps.Replace("team/ncf-1", stepCategory(tj, "a100"), 0, steps)
	if c.steps.Model(stepCategory(tj, "a100")).Known() {
		t.Fatal("the category's model is known from two points")
	}
	r := c.batchRangeOf(tj, "a100", 1, 8)
	if r == nil || r.Time == nil {
		t.Fatal("no batch model from two batches on one worker")
	}
	l, _ := c.steps.Line(stepCategory(tj, "a100"), 1, 1)
	if got, want := r.TimeAt(1, 9742), l.Ratio(256, 9742); got != want || got > 0.1 {
		t.Errorf("an epoch at 9742 on one worker takes %.4f of one at 256, want %.4f (well under a tenth)", got, want)
	}
	if got, want := r.TimeAt(2, 4096), estimator.BatchTime(2, 256, 4096); got != want {
		t.Errorf("on two workers, nothing measured: %.4f, want the fixed shares' %.4f", got, want)
	}
	before := r.TimeAt(1, 4096)
	c.steps.Replace("team/ncf-1", stepCategory(tj, "a100"), 0, steps[:1])
	if got := r.TimeAt(1, 4096); got != before {
		t.Errorf("the range's model moved from %.4f to %.4f when the steps changed after it was made", before, got)
	}
}

// Once a job's category has learned a step model on the type, the range
// the policies' curves come from carries its batch model and the step
// times at the initial batch (packed on the type's nodes) that bound the
// job's speedup where it was not measured; before that, neither.
func TestBatchRangeCarriesTheLearnedStepTimes(t *testing.T) {
	tj := &v1alpha1.TrainingJob{}
	tj.Name, tj.Namespace = "yolo-1", "team-a"
	tj.Spec.Category = "yolo"
	tj.Spec.MaxWorkers = 8
	tj.Spec.BatchSize = &v1alpha1.BatchSizeSpec{Initial: 64, Max: 512}
	c := &Controller{}
	if r := c.batchRangeOf(tj, "a100", 1, 4); r == nil || r.Time != nil || r.Steps != nil {
		t.Fatalf("with nothing learned: %+v, want the range with no model and no bound", r)
	}
	cat := stepCategory(tj, "a100")
	for _, x := range []estimator.StepSample{
		{GPUs: 1, Nodes: 1, Batch: 64, Seconds: 1},
		{GPUs: 2, Nodes: 1, Batch: 64, Seconds: 0.55},
		{GPUs: 4, Nodes: 1, Batch: 128, Seconds: 0.6},
		{GPUs: 8, Nodes: 2, Batch: 256, Seconds: 1.4},
	} {
		c.steps.Observe(cat, 0, x)
	}
	m := c.steps.Model(cat)
	if !m.Known() {
		t.Fatal("four points fitted no step model")
	}
	r := c.batchRangeOf(tj, "a100", 2, 4)
	if r.Time == nil || r.Steps == nil {
		t.Fatalf("with a learned model: Time set %v, Steps set %v", r.Time != nil, r.Steps != nil)
	}
	for n, nodes := range map[int]int{1: 1, 2: 1, 3: 2, 8: 4} { // workers of 2 GPUs on nodes of 4
		if got, want := r.Steps(n), m.Seconds(2*n, nodes, 64); got != want {
			t.Errorf("Steps(%d) = %v, want the model's step on %d GPUs over %d nodes at 64, %v", n, got, 2*n, nodes, want)
		}
	}
	// Two batches measured on 4 GPUs: between them the batch model is
	// what they measured, however far the step model is from it.
	c.steps.Observe(cat, 0, estimator.StepSample{GPUs: 4, Nodes: 1, Batch: 512, Seconds: 2})
	r = c.batchRangeOf(tj, "a100", 1, 4)
	if got, want := r.Time(4, 512)/r.Time(4, 128), 2*128/(0.6*512); math.Abs(got-want) > 1e-9*want {
		t.Errorf("on 4 workers an epoch at 512 takes %.4f of one at 128, want the measured %.4f (the model says %.4f)",
			got, want, c.steps.Model(cat).Ratio(4, 1, 128, 512))
	}
	other := *tj
	other.Spec.Category = "bert"
	if r := c.batchRangeOf(&other, "a100", 2, 4); r.Steps != nil {
		t.Error("a job of another category got this one's step times")
	}
}
