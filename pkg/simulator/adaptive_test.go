package simulator_test

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/model"
	"github.com/vodascheduler/voda/pkg/simulator"
)

func polluxArtifact(policy string) simulator.Config {
	return simulator.Config{Policy: policy, Nodes: 16, GPUsPerNode: 4, RestartDelay: 30 * time.Second,
		Interval: time.Minute, Tiresias: algorithm.PolluxArtifactTiresias()}
}

// TestAdaptiveBatch: on a Pollux workload, jobs that adapt their batch
// size finish sooner than at their fixed batch, within their batch range,
// deterministically; jobs without a max_batch_size keep theirs.
func TestAdaptiveBatch(t *testing.T) {
	cat := needTraces(t)
	ws, err := simulator.ReadWorkloads(filepath.Join(traces, "workloads", "workload-1.csv"), cat)
	if err != nil {
		t.Fatal(err)
	}
	w := ws[0]
	for _, policy := range []string{algorithm.NameHeSRPT, algorithm.NameElasticFIFO} {
		cfg := polluxArtifact(policy)
		fixed, err := simulator.Run(cfg, w, cat)
		if err != nil {
			t.Fatal(err)
		}
		cfg.AdaptiveBatch = true
		adapted, err := simulator.Run(cfg, w, cat)
		if err != nil {
			t.Fatal(err)
		}
		again, err := simulator.Run(cfg, w, cat)
		if err != nil {
			t.Fatal(err)
		}
		f, a := simulator.Summarise(fixed), simulator.Summarise(adapted)
		t.Logf("%s: mean JCT %.0f s at fixed batch sizes, %.0f s adapting (%d jobs; %.2f batch changes and %.2f restarts for them alone per job)",
			policy, f.AvgJCT, a.AvgJCT, a.AdaptiveJobs, a.BatchChangesPerJob, a.RetunesPerJob)
		if !(a.AvgJCT < f.AvgJCT) {
			t.Errorf("%s: adapting, mean JCT %.0f s; at fixed batch sizes %.0f s", policy, a.AvgJCT, f.AvgJCT)
		}
		if a.AdaptiveJobs != len(w.Jobs) || f.AdaptiveJobs != 0 {
			t.Errorf("%s: %d and %d jobs adapted, want %d and 0", policy, a.AdaptiveJobs, f.AdaptiveJobs, len(w.Jobs))
		}
		if a.LowerBound != 0 || f.LowerBound == 0 {
			t.Errorf("%s: bounds %v adapting and %v fixed; want none adapting", policy, a.LowerBound, f.LowerBound)
		}
		changed := 0
		for _, j := range adapted.Jobs {
			m, _ := cat.Lookup(j.Model)
			hi := m.(simulator.AdaptiveModel).MaxBatch()
			if !j.Adaptive || j.FinalBatch < j.Batch || j.FinalBatch > hi || j.Retunes > j.BatchChanges || j.Retunes > j.Restarts {
				t.Errorf("%s: %+v: want an adaptive job ending between %d and %d, retunes among its changes and restarts", policy, j, j.Batch, hi)
			}
			if j.FinalBatch != j.Batch {
				changed++
			}
		}
		if changed == 0 {
			t.Errorf("%s: no job ended at another batch size", policy)
		}
		adapted.WallSeconds, again.WallSeconds = 0, 0
		if !reflect.DeepEqual(adapted, again) {
			t.Errorf("%s: two runs differ", policy)
		}
	}
}

// TestAdaptiveBatchColumn: the max_batch_size column makes only its jobs
// adapt, with either catalog; bad ranges are refused with what to do.
func TestAdaptiveBatchColumn(t *testing.T) {
	cat := needTraces(t)
	csv := "name,time,application,num_replicas,batch_size,max_batch_size\n" +
		"a,0,cifar10,4,256,2048\n" +
		"b,0,cifar10,4,256,\n" +
		"c,60,imagenet,8,800,\n"
	w, err := simulator.ParseWorkload(strings.NewReader(csv), "mixed", cat)
	if err != nil {
		t.Fatal(err)
	}
	res, err := simulator.Run(polluxArtifact(algorithm.NameHeSRPT), w, cat)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range res.Jobs {
		if j.Adaptive != (j.Name == "a") {
			t.Errorf("%s adapted: %v", j.Name, j.Adaptive)
		}
		if j.Name == "a" && (j.FinalBatch < 256 || j.FinalBatch > 2048) {
			t.Errorf("a ended at batch %d, outside 256-2048", j.FinalBatch)
		}
	}
	bad := "name,time,application,num_replicas,batch_size,max_batch_size\na,0,cifar10,4,256,128\n"
	if _, err := simulator.ParseWorkload(strings.NewReader(bad), "bad", cat); err == nil || !strings.Contains(err.Error(), "at least its batch_size 256") {
		t.Errorf("max_batch_size below batch_size: %v", err)
	}
	// The built-in catalog adapts too.
	builtin := simulator.ModelCatalog(model.Builtin())
	bw, err := simulator.ParseWorkload(strings.NewReader(csv), "builtin", builtin)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := simulator.Run(polluxArtifact(algorithm.NameHeSRPT), bw, builtin); err != nil || r.Adaptive != 1 {
		t.Errorf("adapting on the built-in catalog: %d jobs adapted, error %v; want 1 and none", r.Adaptive, err)
	}
}

// TestAdaptiveBatchEstimated: with estimated information a job that adapts
// starts at its own batch (no noise measured yet), learns its noise and
// throughput from its reports, changes its batch within its range, and
// the runs are deterministic.
func TestAdaptiveBatchEstimated(t *testing.T) {
	cat := needTraces(t)
	ws, err := simulator.ReadWorkloads(filepath.Join(traces, "workloads", "workload-1.csv"), cat)
	if err != nil {
		t.Fatal(err)
	}
	cfg := polluxArtifact(algorithm.NameHeSRPT)
	cfg.Information, cfg.AdaptiveBatch, cfg.RecordEvents = simulator.InfoEstimated, true, true
	res, err := simulator.Run(cfg, ws[0], cat)
	if err != nil {
		t.Fatal(err)
	}
	again, err := simulator.Run(cfg, ws[0], cat)
	if err != nil {
		t.Fatal(err)
	}
	changed := 0
	for _, j := range res.Jobs {
		m, _ := cat.Lookup(j.Model)
		// The estimate's batches are whole multiples of the GPUs: the
		// initial one may round down by less than one sample per GPU.
		lo := j.Batch - j.Max*j.GPUsPerWorker
		if hi := m.(simulator.AdaptiveModel).MaxBatch(); !j.Adaptive || j.FinalBatch <= lo || j.FinalBatch > max(hi, j.Batch) {
			t.Errorf("%+v: want an adaptive job ending between %d and %d", j, j.Batch, hi)
		}
		if j.FinalBatch != j.Batch {
			changed++
		}
	}
	s := simulator.Summarise(res)
	t.Logf("estimated information: mean JCT %.0f s, %.2f batch changes and %.2f restarts for them per job, %d of %d jobs ended at another batch",
		s.AvgJCT, s.BatchChangesPerJob, s.RetunesPerJob, changed, len(res.Jobs))
	if changed == 0 || s.RetunesPerJob == 0 {
		t.Errorf("no job changed its batch (%d) or restarted for it (%.2f)", changed, s.RetunesPerJob)
	}
	// Every job starts at its own batch: nothing is known of its noise.
	for _, e := range res.Events {
		if e.Kind == simulator.EventBatch && !strings.Contains(e.Reason, "batch size ") {
			t.Errorf("batch event %+v", e)
		}
	}
	res.WallSeconds, again.WallSeconds = 0, 0
	if !reflect.DeepEqual(res, again) {
		t.Error("two runs differ")
	}
}

// TestAdaptiveBatchAblations: each ablation of estimated information runs
// the workload to the end, deterministically, and changes decisions (the
// part it replaces is used); one without estimated information, or of an
// unknown name, is refused by name.
func TestAdaptiveBatchAblations(t *testing.T) {
	cat := needTraces(t)
	ws, err := simulator.ReadWorkloads(filepath.Join(traces, "workloads-0.5", "workload-1.csv"), cat)
	if err != nil {
		t.Fatal(err)
	}
	cfg := polluxArtifact(algorithm.NameHeSRPT)
	cfg.Information, cfg.AdaptiveBatch = simulator.InfoEstimated, true
	base, err := simulator.Run(cfg, ws[0], cat)
	if err != nil {
		t.Fatal(err)
	}
	mean := simulator.Summarise(base).AvgJCT
	for _, a := range []string{simulator.AblatePlacement, simulator.AblateBatch, simulator.AblateBatchTime, simulator.AblatePolluxFit, simulator.AblateFixedShares, simulator.AblateCurve} {
		c := cfg
		c.Ablation = a
		res, err := simulator.Run(c, ws[0], cat)
		if err != nil {
			t.Fatalf("%s: %v", a, err)
		}
		again, err := simulator.Run(c, ws[0], cat)
		if err != nil {
			t.Fatal(err)
		}
		res.WallSeconds, again.WallSeconds = 0, 0
		if !reflect.DeepEqual(res, again) {
			t.Errorf("%s: two runs differ", a)
		}
		got := simulator.Summarise(res).AvgJCT
		t.Logf("%s: mean JCT %.0f s (estimated, as the controller does: %.0f s)", a, got, mean)
		if got == mean {
			t.Errorf("%s: the same mean JCT as without it, %.0f s", a, got)
		}
	}
	for _, c := range []simulator.Config{
		func() simulator.Config { c := cfg; c.Ablation = "exact"; return c }(),
		func() simulator.Config {
			c := cfg
			c.Information, c.Ablation = simulator.InfoOracle, simulator.AblateBatchTime
			return c
		}(),
	} {
		if err := simulator.Check(c, ws[0], cat); err == nil || !strings.Contains(err.Error(), "ablation") {
			t.Errorf("ablation %q with %s information: error %v, want one naming the ablation", c.Ablation, c.Information, err)
		}
	}
}
