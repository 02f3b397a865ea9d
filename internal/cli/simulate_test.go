package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSimulateJSONContract(t *testing.T) {
	code, out, stderr := run("simulate", "--policy", "FIFO,AFS-L", "--jobs", "30", "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var doc map[string][]map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("output is not one JSON object: %v\n%s", err, out)
	}
	keys := func(m map[string]any) []string {
		var k []string
		for key := range m {
			k = append(k, key)
		}
		sort.Strings(k)
		return k
	}
	wantResult := []string{"avg_jct_s", "avg_queue_s", "eff_util", "gpu_util", "gpus_per_worker", "jct_over_bound", "jobs", "lower_bound_s",
		"makespan_s", "p50_jct_s", "p99_jct_s", "policy", "rescales_per_job", "restarts_per_job", "share_rho_above_1_05", "sim_wall_s", "workload", "worst_rho"}
	wantMean := []string{"avg_jct_s", "lower_bound_s", "makespan_s", "p99_jct_s", "policy", "workloads"}
	if len(doc["results"]) != 2 || len(doc["mean"]) != 2 {
		t.Fatalf("got %d results and %d means, want 2 and 2", len(doc["results"]), len(doc["mean"]))
	}
	if diff := cmp.Diff(wantResult, keys(doc["results"][0])); diff != "" {
		t.Errorf("result keys (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff(wantMean, keys(doc["mean"][0])); diff != "" {
		t.Errorf("mean keys (-want,+got):\n%s", diff)
	}
	if doc["results"][0]["policy"] != "FIFO" || doc["results"][1]["policy"] != "AFS-L" {
		t.Errorf("policies out of order: %v", doc["results"])
	}
}

func TestSimulateIsDeterministic(t *testing.T) {
	args := []string{"simulate", "--jobs", "40", "--seed", "3", "--output", "csv"}
	_, first, _ := run(args...)
	_, second, _ := run(args...)
	strip := func(s string) string { // drop sim_wall_s, the one non-deterministic column
		var lines []string
		for _, l := range strings.Split(s, "\n") {
			if i := strings.LastIndex(l, ","); i >= 0 {
				l = l[:i]
			}
			lines = append(lines, l)
		}
		return strings.Join(lines, "\n")
	}
	if strip(first) != strip(second) || len(first) == 0 {
		t.Errorf("two runs differ:\n%s\n%s", first, second)
	}
}

func TestSimulateWritesPerJobAndPlots(t *testing.T) {
	dir := t.TempDir()
	perJob := filepath.Join(dir, "jobs.csv")
	code, out, stderr := run("simulate", "--policy", "ElasticFIFO", "--jobs", "12", "--per-job", perJob, "--plot", filepath.Join(dir, "plots"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "ElasticFIFO") {
		t.Errorf("table does not name the policy:\n%s", out)
	}
	raw, err := os.ReadFile(perJob)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(string(raw), "\n"); lines != 13 {
		t.Errorf("per-job file has %d lines, want a header and 12 jobs", lines)
	}
	plots, _ := filepath.Glob(filepath.Join(dir, "plots", "*.svg"))
	if len(plots) != 2 {
		t.Fatalf("plots: %v", plots)
	}
	for _, p := range plots {
		svg, _ := os.ReadFile(p)
		if !strings.HasPrefix(string(svg), "<svg") || !strings.Contains(string(svg), "ElasticFIFO") {
			t.Errorf("%s is not an SVG naming the policy", p)
		}
	}
}

func TestSimulateWritesHTML(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "run.html")
	args := []string{"simulate", "--policy", "ElasticTiresias", "--jobs", "12", "--output", "json"}
	code, withHTML, stderr := run(append(args, "--html", page)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	_, plain, _ := run(args...)
	var a, b struct{ Results []map[string]any }
	if err := json.Unmarshal([]byte(withHTML), &a); err != nil || len(a.Results) != 1 {
		t.Fatalf("output with --html: %v\n%s", err, withHTML)
	}
	json.Unmarshal([]byte(plain), &b)
	delete(a.Results[0], "sim_wall_s")
	delete(b.Results[0], "sim_wall_s")
	if diff := cmp.Diff(b, a); diff != "" {
		t.Errorf("--html changed the results (-without,+with):\n%s", diff)
	}
	raw, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	checkSelfContained(t, raw)
	doc := parsePage(t, raw)
	checkSummary(t, summaryShown(doc), a.Results[0])
	jobs := only(t, doc, "job figures", classed("figure", "jobs"))
	if rows := jobs.all(classed("g", "row")); len(rows) != 12 {
		t.Errorf("%d job rows, want 12", len(rows))
	}
	for _, kind := range []string{"submit", "start", "end"} {
		if n := len(jobs.all(named("g", "data-kind", kind))); n != 12 {
			t.Errorf("%d %q marks, want one per job", n, kind)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("files left in the directory: %v", entries)
	}
}

// gavelDir is Gavel's data beside the repository.
var gavelDir = filepath.Join("..", "..", "..", "shared", "traces", "gavel")

// TestSimulateHetero runs a small heterogeneous comparison through the CLI.
func TestSimulateHetero(t *testing.T) {
	if _, err := os.Stat(gavelDir); err != nil {
		t.Skip("no Gavel data beside the repository")
	}
	code, out, stderr := run("simulate", "--gpu-types", "v100=1x4,k80=2x4", "--gavel", gavelDir, "--jobs", "40", "--jobs-per-hour", "2", "--policy", "FIFO")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"Workload gavel-40-jobs-2-per-hour-seed-1: 40 jobs on 8 k80 4 v100 GPUs", "POLICY  CHOICE", "FIFO    random", "FIFO    fastest", "FIFO    voda",
		"FIFO: Voda's choice of type: average JCT"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = run("simulate", "--gpu-types", "v100=1x4,k80=2x4", "--gavel", gavelDir, "--workload", filepath.Join(gavelDir, "traces", "physical_cluster", "small_test.trace"),
		"--policy", "SRJF", "--type-choice", "voda", "--output", "json")
	var doc struct {
		Runs []struct {
			Workload, Policy, Choice string
			Jobs                     int
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || len(doc.Runs) != 1 || doc.Runs[0].Choice != "voda" || doc.Runs[0].Workload != "small_test" || doc.Runs[0].Jobs != 20 {
		t.Errorf("json: %d %s", code, out)
	}
}

// simulateHeSRPT runs HeSRPT on a synthetic workload of the given jobs at
// load 2 with the extra flags, and returns its JSON result without the
// wall time.
func simulateHeSRPT(t *testing.T, jobs int, extra ...string) map[string]any {
	t.Helper()
	args := append([]string{"simulate", "--policy", "HeSRPT", "--jobs", fmt.Sprint(jobs), "--load", "2", "--output", "json"}, extra...)
	code, out, stderr := run(args...)
	var doc struct{ Results []map[string]any }
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || len(doc.Results) != 1 {
		t.Fatalf("%v: exit %d: %s\n%s", extra, code, stderr, out)
	}
	delete(doc.Results[0], "sim_wall_s")
	return doc.Results[0]
}

// --policy-param reaches the policy: HeSRPT with an exponent of 0 (all
// jobs weigh the same) schedules differently from its default, and a
// parameter that only Tiresias reads leaves HeSRPT's results alone.
func TestSimulatePolicyParams(t *testing.T) {
	sim := func(extra ...string) map[string]any { t.Helper(); return simulateHeSRPT(t, 30, extra...) }
	def := sim()
	if diff := cmp.Diff(def, sim("--policy-param", "tiresias.thresholds=2h")); diff != "" {
		t.Errorf("a Tiresias parameter changed HeSRPT's results:\n%s", diff)
	}
	if diff := cmp.Diff(def, sim("--policy-param", "hesrpt.exponent=0.3")); diff != "" {
		t.Errorf("HeSRPT's default exponent, given, changed its results:\n%s", diff)
	}
	if flat := sim("--policy-param", "hesrpt.exponent=0"); flat["avg_jct_s"] == def["avg_jct_s"] {
		t.Errorf("exponent 0 left the average JCT at %v", def["avg_jct_s"])
	}
}

// --runtime pytorch restarts jobs in the measured 16 s and tells HeSRPT,
// which weighs a restart at twice that: told 30 s, it weighs 60 s, its own
// assumption, so the run is the default one.
func TestSimulateRuntime(t *testing.T) {
	sim := func(extra ...string) map[string]any { t.Helper(); return simulateHeSRPT(t, 40, extra...) }
	def := sim()
	if diff := cmp.Diff(def, sim("--runtime", "pytorch", "--restart-delay", "30s")); diff != "" {
		t.Errorf("PyTorch jobs restarting in 30 s, HeSRPT told so, differ from its own 60 s assumption:\n%s", diff)
	}
	pt := sim("--runtime", "pytorch")
	if diff := cmp.Diff(pt, sim("--runtime", "pytorch", "--restart-delay", "16s")); diff != "" {
		t.Errorf("--runtime pytorch is not a 16 s restart:\n%s", diff)
	}
	if diff := cmp.Diff(pt, sim("--restart-delay", "16s")); diff == "" {
		t.Error("HeSRPT told of 16 s restarts decided as when it assumed 60 s")
	}
	if pt["avg_jct_s"] == def["avg_jct_s"] {
		t.Errorf("16 s restarts left the average JCT at %v", def["avg_jct_s"])
	}
}

func TestSimulateBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("name,time,application,num_replicas,batch_size\na,1,cifar10,2,128\nb,2,gpt9,1,8\n"), 0o644)
	cases := map[string]struct {
		args []string
		want string
	}{
		"unknown policy":          {[]string{"--policy", "lottery"}, `unknown policy "lottery"`},
		"both triggers":           {[]string{"--rate-limit", "10s", "--interval", "60s"}, "exclude each other"},
		"negative nodes":          {[]string{"--nodes", "-1"}, "nodes is -1"},
		"absurd load":             {[]string{"--load", "0"}, "load is 0"},
		"no GPUs per worker":      {[]string{"--gpus-per-worker", "0"}, "--gpus-per-worker 0"},
		"bad output":              {[]string{"--output", "xml"}, `--output "xml"`},
		"bad baseline":            {[]string{"--baseline", "slurm"}, "the only preset is pollux-artifact"},
		"missing profiles":        {[]string{"--profiles", filepath.Join(dir, "nope")}, "nope"},
		"missing workload":        {[]string{"--workload", filepath.Join(dir, "nope.csv")}, "nope.csv"},
		"unknown application":     {[]string{"--workload", bad}, `bad.csv:3: application "gpt9"`},
		"synthetic flags":         {[]string{"--workload", bad, "--jobs", "5"}, "do not apply with --workload"},
		"not a duration":          {[]string{"--restart-delay", "soon"}, "restart-delay"},
		"negative restart":        {[]string{"--restart-delay", "-5s"}, "restart delay -5s"},
		"unknown runtime":         {[]string{"--runtime", "torch"}, `--runtime "torch": want horovod or pytorch`},
		"unexpected arguments":    {[]string{"extra"}, "unknown command"},
		"html in no directory":    {[]string{"--html", filepath.Join(dir, "nope", "x.html")}, "--html: cannot write " + filepath.Join(dir, "nope", "x.html")},
		"html a directory":        {[]string{"--html", dir}, "--html: cannot write " + dir + ": it is a directory"},
		"workers that never fit":  {[]string{"--gpus-per-worker", "3", "--policy", "FIFO"}, "4-GPU nodes hold 1 such workers, 16 in all: choose GPUs per worker that divide the GPUs per node"},
		"per-job in no directory": {[]string{"--per-job", filepath.Join(dir, "nope", "x.csv")}, "--per-job: cannot write " + filepath.Join(dir, "nope", "x.csv")},
		"baseline parameter":      {[]string{"--baseline", "pollux-artifact", "--policy", "Tiresias", "--policy-param", "tiresias.promote-knob=3"}, "set tiresias.promote-knob=0 or tiresias.service=since-start (--baseline pollux-artifact sets tiresias.thresholds=57600 tiresias.service=executed-x-requested tiresias.promote-knob=0)"},
		"gavel without types":     {[]string{"--gavel", gavelDir}, "--gavel without --gpu-types needs --gpu-type"},
		"gpu type without trace":  {[]string{"--gavel", gavelDir, "--gpu-type", "v100"}, "--gpu-type needs --workload"},
		"queues and teams":        {[]string{"--teams", "2", "--queues", bad}, "--queues and --teams exclude each other"},
		"spread without queues":   {[]string{"--spread", "even"}, "--spread needs queues"},
		"bad spread":              {[]string{"--teams", "2", "--spread", "odd"}, `spread "odd"`},
		"too many teams":          {[]string{"--teams", "30", "--spread", "even"}, "--teams: 30 teams: want 1 to 26"},
		"teams without spread":    {[]string{"--teams", "2"}, "names no queue: give the workload a queue column, or --spread"},
		"queues not a queue file": {[]string{"--queues", bad, "--spread", "even"}, "--queues: queues " + bad},
		"queues with types":       {[]string{"--teams", "2", "--gpu-types", "v100=1x4", "--gavel", gavelDir}, "--teams applies to a cluster of one GPU type"},
		"types without gavel":     {[]string{"--gpu-types", "v100=1x4"}, "--gpu-types needs --gavel DIR"},
		"bad type size":           {[]string{"--gpu-types", "v100=4", "--gavel", gavelDir}, `--gpu-types "v100=4": want TYPE=NODESxGPUS`},
		"unknown GPU type":        {[]string{"--gpu-types", "h100=1x8", "--gavel", gavelDir}, "h100 has no throughputs in Gavel's table, which has k80, p100, v100"},
		"hetero and nodes":        {[]string{"--gpu-types", "v100=1x4", "--gavel", gavelDir, "--nodes", "3"}, "--nodes does not apply with --gpu-types"},
		"bad type choice":         {[]string{"--gpu-types", "v100=1x4", "--gavel", gavelDir, "--type-choice", "best"}, `type choice "best"`},
		"missing gavel data":      {[]string{"--gpu-types", "v100=1x4", "--gavel", dir}, "simulation_throughputs.json"},
		"gavel trace a directory": {[]string{"--gpu-types", "v100=1x4", "--gavel", gavelDir, "--workload", dir}, "is a directory: give one of its .trace files"},
		"unknown parameter":       {[]string{"--policy-param", "hesrpt.speed=2"}, `--policy-param: unknown policy parameter "hesrpt.speed"`},
		"bad parameter":           {[]string{"--policy-param", "hesrpt.exponent=-1"}, "--policy-param: policy parameter hesrpt.exponent=-1: want 0 or more"},
		"hetero bad parameter":    {[]string{"--gpu-types", "v100=1x4", "--gavel", gavelDir, "--policy-param", "tiresias.service=total"}, "--policy-param: tiresias promotion (promote knob 8) needs the since-start service measure, but it is \"total\": set tiresias.promote-knob=0"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			code, out, stderr := run(append([]string{"simulate"}, tc.args...)...)
			if code != 2 {
				t.Errorf("exit %d, want 2 (stderr %q)", code, stderr)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr %q does not contain %q", stderr, tc.want)
			}
			if out != "" {
				t.Errorf("printed results on bad input: %q", out)
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe for the progress goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestProgressBarAppearsOnlyAfterTheDelay(t *testing.T) {
	var quick syncBuffer
	p := startProgress(&quick, 4, true, time.Hour, time.Millisecond)
	p.done()
	p.stop()
	if quick.String() != "" {
		t.Errorf("a fast run drew a bar: %q", quick.String())
	}
	var slow syncBuffer
	p = startProgress(&slow, 4, true, time.Millisecond, time.Millisecond)
	p.done()
	time.Sleep(20 * time.Millisecond)
	p.done()
	p.stop()
	if out := slow.String(); !strings.Contains(out, "2/4 runs") || !strings.HasSuffix(out, "\n") {
		t.Errorf("slow run output %q, want a bar ending at 2/4 and a newline", out)
	}
	var off syncBuffer
	p = startProgress(&off, 4, false, 0, time.Millisecond)
	p.done()
	time.Sleep(5 * time.Millisecond)
	p.stop()
	if off.String() != "" {
		t.Errorf("a bar on a non-terminal: %q", off.String())
	}
}
