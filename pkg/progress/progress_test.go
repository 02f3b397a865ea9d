package progress_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/progress"
)

func TestTokensAreOneJobsOnly(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	job := &v1alpha1.TrainingJob{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "mnist", UID: "u1"}}
	tok := progress.Token(key, "ml", "mnist", "u1")
	if !progress.Valid(key, job, tok) {
		t.Fatal("the job's own token is refused")
	}
	same := *job
	for name, other := range map[string]*v1alpha1.TrainingJob{
		"another name":      {ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "mnist2", UID: "u1"}},
		"another namespace": {ObjectMeta: metav1.ObjectMeta{Namespace: "ml2", Name: "mnist", UID: "u1"}},
		"a recreated job":   {ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "mnist", UID: "u2"}},
	} {
		if progress.Valid(key, other, tok) {
			t.Errorf("%s accepts the token", name)
		}
	}
	if progress.Valid([]byte("another key, also 32 bytes long.."), &same, tok) || progress.Valid(key, &same, "") {
		t.Error("a token passes under another key, or an empty one passes")
	}
}

func TestReportValidation(t *testing.T) {
	cases := map[string]struct {
		r    progress.Report
		want string
	}{
		"no epoch":        {progress.Report{Workers: 2, EpochSeconds: 3}, "epoch is 0"},
		"no workers":      {progress.Report{Epoch: 1, EpochSeconds: 3}, "workers is 0"},
		"no time":         {progress.Report{Epoch: 1, Workers: 2}, "no epoch time"},
		"steps only":      {progress.Report{Epoch: 1, Workers: 2, Steps: 100}, "no epoch time"},
		"negative time":   {progress.Report{Epoch: 1, Workers: 2, EpochSeconds: -1}, "epochSeconds is -1"},
		"negative steps":  {progress.Report{Epoch: 1, Workers: 2, StepSeconds: 1, Steps: -5}, "steps is -5"},
		"absurd duration": {progress.Report{Epoch: 1, Workers: 2, EpochSeconds: 1e9}, "epochSeconds is 1e+09"},
		"variance alone":  {progress.Report{Epoch: 1, Workers: 2, EpochSeconds: 3, GradVar: ptr(1.0)}, "give both or neither"},
		"negative variance": {progress.Report{Epoch: 1, Workers: 2, EpochSeconds: 3, GradSqr: ptr(1.0), GradVar: ptr(-0.5)},
			"gradVar is -0.5"},
		"NaN gradient":  {progress.Report{Epoch: 1, Workers: 2, EpochSeconds: 3, GradSqr: ptr(math.NaN()), GradVar: ptr(1.0)}, "gradSqr is NaN"},
		"zero gradient": {progress.Report{Epoch: 1, Workers: 2, EpochSeconds: 3, GradSqr: ptr(0.0), GradVar: ptr(1.0)}, "gradSqr is 0"},
		"infinite variance": {progress.Report{Epoch: 1, Workers: 2, EpochSeconds: 3, GradSqr: ptr(1.0), GradVar: ptr(math.Inf(1))},
			"gradVar is +Inf"},
		"negative progress": {progress.Report{Epoch: 1, Workers: 2, EpochSeconds: 3, EquivalentEpochs: ptr(-1.0)}, "equivalentEpochs is -1"},
		"negative batch":    {progress.Report{Epoch: 1, Workers: 2, EpochSeconds: 3, GlobalBatch: -8}, "globalBatch -8"},
	}
	for name, c := range cases {
		if err := c.r.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, c.want)
		}
	}
	ok := progress.Report{Epoch: 1, Workers: 2, StepSeconds: 0.25, Steps: 400}
	if err := ok.Validate(); err != nil || ok.Seconds() != 100 {
		t.Errorf("steps × step time: %v, %v s", err, ok.Seconds())
	}
}

func TestAddAveragesPerWorkerCount(t *testing.T) {
	now := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	var p v1alpha1.TrainingProgress
	for _, r := range []progress.Report{
		{Epoch: 1, Workers: 4, EpochSeconds: 40},
		{Epoch: 2, Workers: 4, EpochSeconds: 44},
		{Epoch: 3, Workers: 2, EpochSeconds: 70},
		{Epoch: 2, Workers: 4, EpochSeconds: 42}, // late, out of order
	} {
		progress.Add(&p, r, "", nil, now)
	}
	want := []v1alpha1.EpochTime{{Workers: 2, Millis: 70000, Epochs: 1}, {Workers: 4, Millis: 42000, Epochs: 3}}
	if diff := cmp.Diff(want, p.EpochTimes); diff != "" || p.Epoch != 3 || p.Reports != 4 || !p.LastReportTime.Time.Equal(now) {
		t.Errorf("progress %+v; epoch times (-want +got):\n%s", p, diff)
	}
	// On another GPU type, epoch times are kept apart.
	progress.Add(&p, progress.Report{Epoch: 4, Workers: 4, EpochSeconds: 120}, "k80", nil, now)
	want = append(want, v1alpha1.EpochTime{Workers: 4, Millis: 120000, Epochs: 1, GPUType: "k80"})
	if diff := cmp.Diff(want, p.EpochTimes); diff != "" {
		t.Errorf("with a second type (-want +got):\n%s", diff)
	}
}

// Epochs on as many workers over another number of nodes are kept apart,
// the nodes counted from the placement; a placement of another size than
// the report's (a report from before a resize) says nothing of them.
func TestAddKeepsTheNodesTheWorkersRanOn(t *testing.T) {
	now := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	var p v1alpha1.TrainingProgress
	progress.Add(&p, progress.Report{Epoch: 1, Workers: 4, EpochSeconds: 40}, "a100", []string{"n1", "n1", "n2", "n1"}, now)
	progress.Add(&p, progress.Report{Epoch: 2, Workers: 4, EpochSeconds: 30}, "a100", []string{"n1", "n1", "n1", "n1"}, now)
	progress.Add(&p, progress.Report{Epoch: 3, Workers: 4, EpochSeconds: 32}, "a100", []string{"n1", "n1", "n1", "n1"}, now)
	progress.Add(&p, progress.Report{Epoch: 4, Workers: 4, EpochSeconds: 50}, "a100", []string{"n1", "n2"}, now)
	want := []v1alpha1.EpochTime{
		{Workers: 4, Millis: 50000, Epochs: 1, GPUType: "a100"},
		{Workers: 4, Millis: 31000, Epochs: 2, GPUType: "a100", Nodes: 1},
		{Workers: 4, Millis: 40000, Epochs: 1, GPUType: "a100", Nodes: 2},
	}
	if diff := cmp.Diff(want, p.EpochTimes); diff != "" {
		t.Errorf("epoch times (-want +got):\n%s", diff)
	}
}

// The original's CSV, as its Keras callback wrote it (columns sorted).
const originalCSV = `epoch,accuracy,epoch_time_sec,epochs,global_batch_size,local_batch_size,loss,start_time,step_time_sec,steps,total_epochs,verbose,workers
0,0.91,60.2,150,128,128,0.31,2022-10-20 10:00:00.000000,0.129,469,150,1,1
1,0.95,31.0,150,256,128,0.17,2022-10-20 10:01:00.000000,0.066,469,150,1,2
2,0.96,30.6,150,256,128,0.13,2022-10-20 10:01:31.000000,0.065,469,150,1,2
`

func TestParseOriginalCSV(t *testing.T) {
	reports, err := progress.ParseCSV(strings.NewReader(originalCSV))
	if err != nil {
		t.Fatal(err)
	}
	p := progress.Summarise(reports, time.Unix(0, 0))
	want := []v1alpha1.EpochTime{{Workers: 1, Millis: 60200, Epochs: 1, Batch: 128}, {Workers: 2, Millis: 30800, Epochs: 2, Batch: 256}}
	if diff := cmp.Diff(want, p.EpochTimes); diff != "" || p.Epoch != 3 || p.Reports != 3 {
		t.Errorf("progress %+v (-want +got):\n%s", p, diff)
	}
	// Step time × steps stands in for a missing epoch time.
	r, err := progress.ParseCSV(strings.NewReader("epoch,workers,step_time_sec,steps\n4,8,0.5,100\n"))
	if err != nil || len(r) != 1 || r[0].Seconds() != 50 || r[0].Epoch != 5 {
		t.Errorf("step-based row: %+v %v", r, err)
	}
	if r, err := progress.ParseCSV(strings.NewReader("")); err != nil || r != nil {
		t.Errorf("an empty file: %v %v", r, err)
	}
}

func TestParseCSVRefusesBadFiles(t *testing.T) {
	cases := map[string]struct{ file, want string }{
		"no epoch column":   {"workers,epoch_time_sec\n1,3\n", `no "epoch" column`},
		"no time columns":   {"epoch,workers,loss\n0,1,0.3\n", "neither epoch_time_sec"},
		"word for a number": {"epoch,workers,epoch_time_sec\n0,two,3\n", `line 2: workers "two" is not a number`},
		"fractional epoch":  {"epoch,workers,epoch_time_sec\n0.5,2,3\n", "line 2: epoch and workers must be whole"},
		"zero workers":      {"epoch,workers,epoch_time_sec\n0,0,3\n", "line 2: workers is 0"},
		"short row":         {"epoch,workers,epoch_time_sec\n0,2\n", "wrong number of fields"},
		"negative time":     {"epoch,workers,epoch_time_sec\n0,2,-3\n", "epochSeconds is -3"},
	}
	for name, c := range cases {
		if _, err := progress.ParseCSV(strings.NewReader(c.file)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, c.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// Gradient statistics set the noise scale, each report weighing as much as
// all earlier ones; epochs at different batch sizes are kept apart.
func TestAddGradientStatistics(t *testing.T) {
	var p v1alpha1.TrainingProgress
	now := time.Unix(100, 0)
	progress.Add(&p, progress.Report{Epoch: 1, Workers: 2, EpochSeconds: 10, GlobalBatch: 64, GradSqr: ptr(2.0), GradVar: ptr(400.0)}, "", nil, now)
	if p.NoiseScale == nil || p.NoiseScale.AsApproximateFloat64() != 200 {
		t.Fatalf("noise scale %v after one report, want 200", p.NoiseScale)
	}
	progress.Add(&p, progress.Report{Epoch: 2, Workers: 2, EpochSeconds: 8, GlobalBatch: 128, GradSqr: ptr(1.0), GradVar: ptr(600.0), EquivalentEpochs: ptr(1.75)}, "", nil, now)
	if got := p.NoiseScale.AsApproximateFloat64(); got != 400 {
		t.Errorf("noise scale %v after a second report of 600, want 400", got)
	}
	if got := p.EquivalentEpochs.AsApproximateFloat64(); got != 1.75 {
		t.Errorf("equivalent epochs %v, want 1.75", got)
	}
	progress.Add(&p, progress.Report{Epoch: 3, Workers: 2, EpochSeconds: 12, GlobalBatch: 64}, "", nil, now)
	want := []v1alpha1.EpochTime{{Workers: 2, Millis: 11000, Epochs: 2, Batch: 64}, {Workers: 2, Millis: 8000, Epochs: 1, Batch: 128}}
	if diff := cmp.Diff(want, p.EpochTimes); diff != "" {
		t.Errorf("epoch times (-want +got):\n%s", diff)
	}
	if got := p.NoiseScale.AsApproximateFloat64(); got != 400 {
		t.Errorf("a report without statistics changed the noise scale to %v", got)
	}
}
