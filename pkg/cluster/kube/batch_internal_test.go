package kube

import (
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
// epochs on the type asked for, GPUs = workers × GPUs per worker, packed
// on the type's nodes, time = epoch time × batch.
func TestStepsOf(t *testing.T) {
	tj := &v1alpha1.TrainingJob{}
	tj.Spec.BatchSize = &v1alpha1.BatchSizeSpec{Initial: 64, Max: 1024}
	tj.Status.Progress = &v1alpha1.TrainingProgress{EpochTimes: []v1alpha1.EpochTime{
		{Workers: 1, Millis: 40000, Epochs: 2, GPUType: "a100", Batch: 64},
		{Workers: 3, Millis: 10000, Epochs: 1, GPUType: "a100", Batch: 256},
		{Workers: 3, Millis: 9000, Epochs: 1, GPUType: "v100", Batch: 256}, // another type
		{Workers: 2, Millis: 20000, Epochs: 1, Batch: 128},                 // type not known: this one's
		{Workers: 2, Millis: 20000, Epochs: 1, GPUType: "a100"},            // no batch
	}}
	got := stepsOf(tj, "a100", 2, 4)
	want := []estimator.StepSample{
		{GPUs: 2, Nodes: 1, Batch: 64, Seconds: 40 * 64},
		{GPUs: 6, Nodes: 2, Batch: 256, Seconds: 10 * 256},
		{GPUs: 4, Nodes: 1, Batch: 128, Seconds: 20 * 128},
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
