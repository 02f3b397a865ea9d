package simulator

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/model"
)

// fakeModel scales perfectly inside a node and loses a fifth of its speed
// once it spans nodes. One step takes 1 s on one GPU.
type fakeModel struct{ steps float64 }

func (m fakeModel) StepSeconds(shape []int, _ int) float64 {
	n := 0
	for _, g := range shape {
		n += g
	}
	t := 1 / float64(n)
	if len(shape) > 1 {
		t *= 1.25
	}
	return t
}
func (m fakeModel) FastestStepSeconds(n, perNode, _, _ int) float64 {
	if n <= perNode {
		return 1 / float64(n)
	}
	return 1.25 / float64(n)
}
func (m fakeModel) Steps(int) float64  { return m.steps }
func (m fakeModel) MaxWorkers(int) int { return 8 }

type fakeCatalog map[string]Model

func (c fakeCatalog) Lookup(name string) (Model, error) {
	if m, ok := c[name]; ok {
		return m, nil
	}
	return nil, fmt.Errorf("unknown model %q", name)
}

var cat = fakeCatalog{"toy": fakeModel{steps: 1000}, "big": fakeModel{steps: 100000}}

func config(policy string) Config {
	return Config{Policy: policy, Nodes: 2, GPUsPerNode: 4, RestartDelay: 30 * time.Second,
		RateLimit: 30 * time.Second, Tiresias: algorithm.DefaultTiresias()}
}

func workload(jobs ...Job) Workload {
	sortJobs(jobs)
	return Workload{Name: "w", Jobs: jobs}
}

func TestSingleJobRunsAtTheExpectedSpeed(t *testing.T) {
	cases := map[string]struct {
		policy string
		want   float64
	}{
		// FIFO runs the requested 2 GPUs: 30 s restart + 1000 × 0.5 s.
		"rigid at its requested size": {"FIFO", 530},
		// ElasticFIFO grows it to its maximum of 8 on two nodes:
		// 30 s + 1000 × 1.25/8 s.
		"elastic at its maximum": {"ElasticFIFO", 30 + 1000*1.25/8},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res, err := Run(config(tc.policy), workload(Job{Name: "a", Model: "toy", GPUs: 2, Batch: 1}), cat)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Jobs[0].JCT; got < tc.want-1e-6 || got > tc.want+1e-6 {
				t.Errorf("JCT %v, want %v", got, tc.want)
			}
		})
	}
}

func TestIntervalModeWaitsForTheNextRound(t *testing.T) {
	cfg := config("FIFO")
	cfg.Interval = 60 * time.Second
	res, err := Run(cfg, workload(Job{Name: "a", Model: "toy", GPUs: 4, Batch: 1, Submit: 10 * time.Second}), cat)
	if err != nil {
		t.Fatal(err)
	}
	// Arrives at 10 s, scheduled at 60 s, 30 s restart, 1000 × 0.25 s.
	if got, want := res.Jobs[0].JCT, 50.0+30+250; got < want-1e-6 || got > want+1e-6 {
		t.Errorf("JCT %v, want %v", got, want)
	}
}

// mixedWorkload is n jobs of both test models, 1 to 4 GPUs, arriving within
// five minutes.
func mixedWorkload(n int) Workload {
	var jobs []Job
	for i := range n {
		jobs = append(jobs, Job{Name: fmt.Sprintf("j%02d", i), Model: []string{"toy", "big"}[i%2],
			GPUs: 1 + i%4, Batch: 1, Submit: time.Duration(i*37%300) * time.Second})
	}
	return workload(jobs...)
}

func TestRunIsDeterministic(t *testing.T) {
	w := mixedWorkload(40)
	for _, p := range algorithm.Names() {
		a := runTwice(t, config(p), w)
		s := Summarise(a)
		if s.Jobs != 40 || !(s.AvgJCT >= s.LowerBound) || s.GPUUtil <= 0 || s.GPUUtil > 1 || s.EffUtil > s.GPUUtil+1e-9 {
			t.Errorf("%s: implausible summary %+v", p, s)
		}
	}
}

// runTwice runs a workload twice and fails unless the results are equal.
func runTwice(t *testing.T, cfg Config, w Workload) Result {
	t.Helper()
	a, err := Run(cfg, w, cat)
	if err != nil {
		t.Fatalf("%s: %v", cfg.Policy, err)
	}
	b, err := Run(cfg, w, cat)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a, b); diff != "" {
		t.Fatalf("%s: two runs differ (-first,+second):\n%s", cfg.Policy, diff)
	}
	return a
}

// With estimated information, runs are deterministic too, every job
// reports, and the estimator's errors are recorded at the checkpoints.
func TestEstimatedInformation(t *testing.T) {
	w := mixedWorkload(30)
	for _, p := range algorithm.Names() {
		cfg := config(p)
		cfg.Interval, cfg.Information = time.Minute, InfoEstimated
		a := runTwice(t, cfg, w)
		if len(a.Jobs) != 30 || len(a.EstimateErrors[1]) == 0 {
			t.Errorf("%s: %d jobs, %d errors after one report", p, len(a.Jobs), len(a.EstimateErrors[1]))
		}
		for k, errs := range a.EstimateErrors {
			for _, e := range errs {
				if !(e >= 0) || math.IsInf(e, 0) {
					t.Errorf("%s: error %v after %d reports", p, e, k)
				}
			}
		}
		if oracle, _ := Run(config(p), w, cat); oracle.EstimateErrors != nil {
			t.Errorf("%s: oracle runs record estimator errors", p)
		}
	}
}

func TestJobTooBigForTheClusterIsAnError(t *testing.T) {
	_, err := Run(config("FIFO"), workload(Job{Name: "huge", Model: "toy", GPUs: 9, Batch: 1}), cat)
	if err == nil || !strings.Contains(err.Error(), "requests 9 GPUs, the cluster has 8") {
		t.Errorf("got %v", err)
	}
}

func TestConfigValidation(t *testing.T) {
	bad := config("FIFO")
	bad.Nodes, bad.GPUsPerNode, bad.RestartDelay, bad.Policy, bad.Information = 0, 0, -time.Second, "nope", "psychic"
	err := bad.Validate()
	for _, want := range []string{"nodes is 0", "gpus per node is 0", "restart delay -1s", `unknown policy "nope"`, `information "psychic": want oracle or estimated`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not mention %q", err, want)
		}
	}
}

// srptMeanFlow is the mean flow time of preemptive SRPT on one
// unit-speed server, the capacity bound (optimal for mean flow time).
func srptMeanFlow(tasks []srptTask) float64 {
	if len(tasks) == 0 {
		return 0
	}
	total := 0.0
	for _, f := range srptFlows(tasks, nil) {
		total += f
	}
	return total / float64(len(tasks))
}

func TestSRPTMeanFlow(t *testing.T) {
	cases := map[string]struct {
		tasks []srptTask
		want  float64
	}{
		"a short job preempts a long one": {[]srptTask{{0, 10}, {1, 2}}, (12.0 + 2) / 2},
		"idle gap between jobs":           {[]srptTask{{0, 1}, {5, 1}}, 1},
		"same release, shortest first":    {[]srptTask{{0, 3}, {0, 1}, {0, 2}}, (1.0 + 3 + 6) / 3},
		"nothing":                         {nil, 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := srptMeanFlow(tc.tasks); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPartitionBound(t *testing.T) {
	// x is short on the shared server but slow alone; the ys queue behind
	// each other. Isolated: (100+5+5+5)/4; SRPT: (1+6+11+16)/4; with x's
	// isolated time and SRPT for the ys: (100+5+10+15)/4.
	tasks := []srptTask{{0, 1}, {0, 5}, {0, 5}, {0, 5}}
	iso := []float64{100, 5, 5, 5}
	if got, want := partitionBound(iso, tasks), 130.0/4; got != want {
		t.Errorf("got %v, want %v", got, want)
	}
	if got := partitionBound(nil, nil); got != 0 {
		t.Errorf("no jobs: got %v, want 0", got)
	}
}

// TestPartitionBoundIsAPartition checks, on random small instances against
// every subset, that the bound is never below the isolated and capacity
// bounds and never above the best subset (each subset's value is a valid
// bound, so the best is the most the search may return).
func TestPartitionBoundIsAPartition(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		n := 1 + r.IntN(7)
		tasks, iso := make([]srptTask, n), make([]float64, n)
		isoSum := 0.0
		for i := range n {
			tasks[i] = srptTask{float64(r.IntN(20)), 1 + float64(r.IntN(10))}
			iso[i] = tasks[i].size * (1 + 4*r.Float64())
			isoSum += iso[i]
		}
		best := 0.0
		for mask := range 1 << n {
			skip := make([]bool, n)
			sum := 0.0
			for i := range n {
				if mask&(1<<i) != 0 {
					skip[i], sum = true, sum+iso[i]
				}
			}
			for _, f := range srptFlows(tasks, skip) {
				sum += f
			}
			best = max(best, sum/float64(n))
		}
		got := partitionBound(iso, tasks)
		if got < isoSum/float64(n)-1e-9 || got < srptMeanFlow(slices.Clone(tasks))-1e-9 || got > best+1e-9 {
			t.Fatalf("tasks %v iso %v: bound %v, isolated %v, SRPT %v, best subset %v",
				tasks, iso, got, isoSum/float64(n), srptMeanFlow(slices.Clone(tasks)), best)
		}
	}
}

func TestParseWorkloadErrors(t *testing.T) {
	const head = "name,time,application,num_replicas,batch_size\n"
	cases := map[string]struct{ text, want string }{
		"bad header":           {"a,b\n", "1: header is"},
		"wrong field count":    {head + "a,1,toy,1\n", "2: 4 fields, want 5"},
		"bad worker size":      {"name,time,application,num_replicas,batch_size,gpus_per_worker\na,1,toy,4,1,0\n", `2: gpus_per_worker "0"`},
		"sixth column unnamed": {"name,time,application,num_replicas,batch_size,k\na,1,toy,4,1,2\n", "1: header is"},
		"bad time":             {head + "a,soon,toy,1,1\n", `2: time "soon"`},
		"NaN time":             {head + "a,NaN,toy,1,1\n", `2: time "NaN"`},
		"infinite time":        {head + "a,+Inf,toy,1,1\n", `2: time "+Inf"`},
		"negative replicas":    {head + "a,1,toy,-1,1\n", `2: num_replicas "-1"`},
		"bad batch":            {head + "a,1,toy,1,x\n", `2: batch_size "x"`},
		"unknown application":  {head + "a,1,gpt9,1,1\n", `2: application "gpt9": unknown model "gpt9"`},
		"duplicate name":       {head + "a,1,toy,1,1\na,2,toy,1,1\n", `3: job "a" already appears on line 2`},
		"empty":                {head, "no jobs"},
		"unterminated quote":   {head + "\"a,1,toy,1,1\n", "extraneous or missing"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ParseWorkload(strings.NewReader(tc.text), "w", cat)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func FuzzParseWorkload(f *testing.F) {
	f.Add("name,time,application,num_replicas,batch_size\na,1,toy,2,4\n")
	f.Add("name,time,application,num_replicas,batch_size\na,1e9,big,1,1\nb,0,toy,3,1\n")
	f.Add("name,time,application,num_replicas,batch_size,gpus_per_worker\na,1,toy,8,4,4\nb,0,toy,3,1,\n")
	f.Add("name,time,application,num_replicas,batch_size\na,nan,toy,2,4\n")
	f.Fuzz(func(t *testing.T, text string) {
		w, err := ParseWorkload(strings.NewReader(text), "w", cat)
		if err != nil {
			return
		}
		if len(w.Jobs) == 0 {
			t.Fatal("a parsed workload has no jobs")
		}
		for _, j := range w.Jobs {
			if j.GPUs < 1 || j.Batch < 1 || j.Submit < 0 || j.Submit > 1e9*time.Second || j.GPUsPerWorker < 0 || j.GPUsPerWorker > 64 {
				t.Fatalf("accepted a bad job %+v", j)
			}
		}
	})
}

func TestWorkersOfSeveralGPUs(t *testing.T) {
	text := "name,time,application,num_replicas,batch_size,gpus_per_worker\n" +
		"quad,0,toy,8,1,4\n" + // two workers of 4
		"odd,0,toy,3,1,2\n" + // rounded up to two workers of 2
		"plain,0,toy,2,1,\n" // the configured default
	w, err := ParseWorkload(strings.NewReader(text), "w", cat)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config("FIFO")
	cfg.Nodes = 4
	res, err := Run(cfg, w, cat)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][3]int{}
	for _, j := range res.Jobs {
		got[j.Name] = [3]int{j.GPUsPerWorker, j.Min, j.Max}
		// Alone at its rigid size on whole nodes: 30 s, then 1000 steps.
		gpus := map[string]int{"quad": 8, "odd": 4, "plain": 2}[j.Name]
		want := 30 + 1000/float64(gpus)
		if gpus > 4 {
			want = 30 + 1000*1.25/float64(gpus)
		}
		if math.Abs(j.JCT-want) > 1e-6 {
			t.Errorf("job %s: JCT %v, want %v", j.Name, j.JCT, want)
		}
		if math.Abs(j.GPUSeconds-float64(gpus)*want) > 1e-6 {
			t.Errorf("job %s: %v GPU-seconds, want %v", j.Name, j.GPUSeconds, float64(gpus)*want)
		}
	}
	// toy's largest useful GPU count is 8: 2 workers of 4, 4 of 2, 8 of 1.
	want := map[string][3]int{"quad": {4, 1, 2}, "odd": {2, 1, 4}, "plain": {1, 1, 8}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("worker size and range (-want,+got):\n%s", diff)
	}
	if s := Summarise(res); s.GPUsPerWorker != "1-4" {
		t.Errorf("summary says GPUs per worker %q, want 1-4", s.GPUsPerWorker)
	}

	cfg.GPUsPerWorker = 8
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "gpus per worker is 8") {
		t.Errorf("a worker larger than a node: got %v", err)
	}
}

// spreadModel steps twice as fast spread over nodes as on one node, as
// some measured profiles do (BERT on 2+2+2+2 GPUs against 4+4).
type spreadModel struct{ fakeModel }

func (m spreadModel) StepSeconds(shape []int, _ int) float64 {
	n := 0
	for _, g := range shape {
		n += g
	}
	if len(shape) > 1 {
		return 0.5 / float64(n)
	}
	return 1 / float64(n)
}
func (m spreadModel) FastestStepSeconds(n, _, maxNodes, _ int) float64 {
	if n > 1 && maxNodes > 1 {
		return 0.5 / float64(n)
	}
	return 1 / float64(n)
}

// With oracle information placement knows the layouts' speeds and spreads
// the job; with estimated information it packs it.
func TestOracleInformationSeeksTheFasterLayout(t *testing.T) {
	cat := fakeCatalog{"spready": spreadModel{fakeModel{steps: 1000}}}
	for info, want := range map[string]float64{InfoOracle: 30 + 1000*0.5/4, InfoEstimated: 30 + 1000*1.0/4} {
		cfg := config("FIFO")
		cfg.Information = info
		res, err := Run(cfg, workload(Job{Name: "a", Model: "spready", GPUs: 4, Batch: 1}), cat)
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Jobs[0].JCT; math.Abs(got-want) > 1e-6 {
			t.Errorf("%s information: JCT %v, want %v", info, got, want)
		}
	}
}

// A rigid job runs at its GPUs only, under every policy: its range is its
// size and it is never rescaled.
func TestRigidJobsKeepTheirSize(t *testing.T) {
	w := mixedWorkload(30)
	for i := range w.Jobs {
		w.Jobs[i].Rigid = i%2 == 0
	}
	for _, p := range algorithm.Names() {
		res := runTwice(t, config(p), w)
		for i, j := range res.Jobs {
			var src Job
			for _, s := range w.Jobs {
				if s.Name == j.Name {
					src = s
				}
			}
			if !src.Rigid {
				continue
			}
			if j.Min != j.GPUs || j.Max != j.GPUs || j.Rescales != 0 {
				t.Errorf("%s: rigid job %d (%s) of %d GPUs ran in [%d, %d] with %d rescales", p, i, j.Name, j.GPUs, j.Min, j.Max, j.Rescales)
			}
		}
	}
}

// The synthetic workload with no rigid share is the one it always was;
// with a share, that share of its jobs is rigid and nothing else changes.
func TestGenerateRigidShare(t *testing.T) {
	builtin := model.Builtin()
	gen := func(share float64) Workload {
		w, err := Generate(GenConfig{Jobs: 400, Load: 1, Seed: 3, GPUsPerNode: 4, MaxGPUs: 64, RigidShare: share}, ModelCatalog(builtin), Batches(builtin))
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	none, half := gen(0), gen(0.5)
	rigid := 0
	for i := range none.Jobs {
		if none.Jobs[i].Rigid {
			t.Fatalf("share 0: job %s is rigid", none.Jobs[i].Name)
		}
		if half.Jobs[i].Rigid {
			rigid++
		}
		half.Jobs[i].Rigid = false
	}
	if d := cmp.Diff(none.Jobs, half.Jobs); d != "" {
		t.Errorf("a rigid share changed more than rigidity (-share 0, +share 0.5):\n%s", d)
	}
	if rigid < 160 || rigid > 240 {
		t.Errorf("share 0.5: %d of 400 jobs rigid, want about 200", rigid)
	}
	if _, err := Generate(GenConfig{Jobs: 1, Load: 1, GPUsPerNode: 4, MaxGPUs: 4, RigidShare: 1.5}, ModelCatalog(builtin), Batches(builtin)); err == nil || !strings.Contains(err.Error(), "rigid share") {
		t.Errorf("share 1.5: got %v, want an error naming the rigid share", err)
	}
}
