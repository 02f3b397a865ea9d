package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vodascheduler/voda/pkg/apis/rest"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/client"
)

var update = flag.Bool("update", false, "rewrite the golden files of the CLI tests")

// The fixed moment of the golden outputs.
var goldenNow = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) *metav1.Time { t := metav1.NewTime(goldenNow.Add(-d)); return &t }

// goldenJobs are the jobs the canned server returns.
func goldenJobs() []v1alpha1.TrainingJob {
	rem := int64(754)
	running := v1alpha1.TrainingJob{
		ObjectMeta: metav1.ObjectMeta{Name: "mnist", Namespace: "voda", CreationTimestamp: *at(20 * time.Minute)},
		Spec: v1alpha1.TrainingJobSpec{GPUType: "nvidia-tesla-v100", MinWorkers: 1, MaxWorkers: 4, RequestedWorkers: 2,
			Epochs: 20, Category: "mnist", Submitter: "alice", BatchSize: &v1alpha1.BatchSizeSpec{Initial: 64, Max: 1024}},
		Status: v1alpha1.TrainingJobStatus{Phase: v1alpha1.PhaseRunning, Message: "running with 3 of up to 4 workers",
			Workers: 3, RunningWorkers: 3, GPUsPerWorker: 1, Placement: []string{"gpu-a", "gpu-a", "gpu-b"}, SubmitTime: at(20 * time.Minute),
			FirstStartTime: at(18 * time.Minute), LastStartTime: at(5 * time.Minute), AccountedTime: at(30 * time.Second),
			WaitingMillis: 120_000, RunningMillis: 1_050_000, GPUMillis: 2_700_000, Rescales: 2, Restarts: 1, RemainingSeconds: &rem,
			Batch: &v1alpha1.BatchStatus{Global: 192, Local: 64, Accumulation: 1, EfficiencyPercent: 87, Retunes: 1,
				Sizes: "1:128:64:2 2:256:128:1 3:192:64:1 4:256:64:1"},
			Progress: &v1alpha1.TrainingProgress{Epoch: 6, Reports: 6, NoiseScale: resource.NewQuantity(1180, resource.DecimalSI),
				EquivalentEpochs: resource.NewMilliQuantity(5400, resource.DecimalSI),
				EpochTimes:       []v1alpha1.EpochTime{{Workers: 2, Millis: 61_000, Epochs: 2, Batch: 64}, {Workers: 3, Millis: 38_500, Epochs: 4, Batch: 192, Nodes: 2}}}},
	}
	waiting := v1alpha1.TrainingJob{
		ObjectMeta: metav1.ObjectMeta{Name: "cifar10-resnet50-20261123-113000", Namespace: "voda", CreationTimestamp: *at(30 * time.Minute)},
		Spec:       v1alpha1.TrainingJobSpec{GPUType: "nvidia-tesla-v100", MinWorkers: 4, MaxWorkers: 8, Submitter: "bob"},
		Status: v1alpha1.TrainingJobStatus{Phase: v1alpha1.PhaseWaiting, Message: "waiting: 4 GPUs needed at least, 1 free",
			Queue: 1, SubmitTime: at(30 * time.Minute), AccountedTime: at(time.Minute), WaitingMillis: 29 * 60_000},
	}
	done := v1alpha1.TrainingJob{
		ObjectMeta: metav1.ObjectMeta{Name: "transformer", Namespace: "voda", CreationTimestamp: *at(3 * time.Hour)},
		Spec:       v1alpha1.TrainingJobSpec{GPUType: "nvidia-gtx-1080ti", MinWorkers: 2, MaxWorkers: 2, Submitter: "alice"},
		Status: v1alpha1.TrainingJobStatus{Phase: v1alpha1.PhaseCompleted, Message: "the launcher succeeded",
			SubmitTime: at(3 * time.Hour), FirstStartTime: at(170 * time.Minute), LastStartTime: at(170 * time.Minute),
			FinishTime: at(time.Hour), AccountedTime: at(time.Hour), WaitingMillis: 600_000, RunningMillis: 6_600_000, GPUMillis: 13_200_000},
	}
	starting := v1alpha1.TrainingJob{
		ObjectMeta: metav1.ObjectMeta{Name: "llama-ft", Namespace: "voda", CreationTimestamp: *at(2 * time.Minute)},
		Spec: v1alpha1.TrainingJobSpec{GPUType: "nvidia-tesla-v100", MinWorkers: 1, MaxWorkers: 4, GPUsPerWorker: 4, Submitter: "carol",
			Template: v1alpha1.TrainingJobTemplate{MPIJob: &v1alpha1.MPIJobTemplate{}}},
		Status: v1alpha1.TrainingJobStatus{Phase: v1alpha1.PhaseStarting,
			Message: "1 of 2 workers running; worker 1 is Pending: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu",
			Workers: 2, GPUs: 8, GPUsPerWorker: 4, RunningWorkers: 1, Placement: []string{"gpu-a", "gpu-b"},
			SubmitTime: at(2 * time.Minute), FirstStartTime: at(time.Minute), LastStartTime: at(time.Minute),
			AccountedTime: at(30 * time.Second), WaitingMillis: 60_000, RunningMillis: 30_000, GPUMillis: 240_000},
	}
	return []v1alpha1.TrainingJob{waiting, running, done, starting}
}

// cannedServer answers like a Voda server with fixed data and records
// what it was asked.
type cannedServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []string
	jobs     func() []v1alpha1.TrainingJob
}

func newCannedServer(t *testing.T) *cannedServer {
	cs := &cannedServer{jobs: goldenJobs}
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, code int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(v)
	}
	find := func(name string) *v1alpha1.TrainingJob {
		for _, j := range cs.jobs() {
			if j.Name == name {
				return &j
			}
		}
		return nil
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		cs.mu.Lock()
		cs.requests = append(cs.requests, r.Method+" "+r.URL.RequestURI()+" "+r.Header.Get("Authorization"))
		cs.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer tok" {
			reply(w, 401, rest.Error{Error: "the bearer token is not valid"})
			return
		}
		name := strings.TrimPrefix(r.URL.Path, "/api/v1/jobs/")
		name = strings.TrimSuffix(name, "/events")
		switch {
		case r.Method == "GET" && r.URL.Path == "/api/v1/jobs":
			reply(w, 200, rest.JobList{Items: cs.jobs()})
		case r.Method == "GET" && strings.HasSuffix(r.URL.Path, "/events") && find(name) != nil:
			reply(w, 200, rest.EventList{Items: []rest.Event{
				{Type: "Normal", Reason: "Started", Message: "Started with 2 workers on gpu-a", Count: 1, FirstTime: goldenNow.Add(-18 * time.Minute), LastTime: goldenNow.Add(-18 * time.Minute)},
				{Type: "Normal", Reason: "Scaled", Message: "Scaled 2→3 workers, on gpu-a, gpu-b", Count: 2, FirstTime: goldenNow.Add(-10 * time.Minute), LastTime: goldenNow.Add(-5 * time.Minute)},
			}})
		case (r.Method == "GET" || r.Method == "DELETE") && find(name) != nil:
			reply(w, 200, find(name))
		case r.Method == "GET" || r.Method == "DELETE":
			reply(w, 404, rest.Error{Error: "job " + name + " not found"})
		case r.Method == "POST":
			j := goldenJobs()[1]
			j.Name = "mnist-20261123-120000"
			reply(w, 201, j)
		case r.Method == "PUT":
			// The parameters sent come back as the server would list them.
			var up rest.SchedulerUpdate
			if err := json.NewDecoder(r.Body).Decode(&up); err != nil {
				reply(w, 400, rest.Error{Error: err.Error()})
				return
			}
			sc := rest.Scheduler{GPUType: "nvidia-tesla-v100", Algorithm: "Tiresias", RateLimit: "10s"}
			if up.PolicyParams != nil {
				sc.Parameters, sc.PolicyParams = *up.PolicyParams, *up.PolicyParams
			}
			reply(w, 200, sc)
		}
	})
	mux.HandleFunc("/api/v1/schedulers", func(w http.ResponseWriter, r *http.Request) {
		reply(w, 200, rest.SchedulerList{Items: []rest.Scheduler{
			{GPUType: "nvidia-gtx-1080ti", Algorithm: "ElasticFIFO", RateLimit: "30s", Nodes: 2, GPUs: 8, Jobs: map[string]int{"Completed": 1}},
			{GPUType: "nvidia-tesla-v100", Algorithm: "Tiresias", RateLimit: "10s", Nodes: 4, GPUs: 16, AllocatedGPUs: 12, OtherGPUs: 3,
				Jobs: map[string]int{"Running": 5, "Waiting": 2, "Failed": 1}, SettingsError: "rateLimit \"x\" is not a non-negative duration"},
		}})
	})
	mux.HandleFunc("/api/v1/queues", func(w http.ResponseWriter, r *http.Request) {
		reply(w, 200, rest.QueueList{Items: []rest.Queue{
			{Name: "default", Default: true, ClusterQueue: "vision", Cohort: "research", Nominal: 8, Used: 12, Borrowed: 4, Pending: 2, RunningJobs: 3, WaitingJobs: 1,
				GPUTypes: []v1alpha1.QueueUsage{{GPUType: "nvidia-tesla-v100", Nominal: 8, Used: 12, Borrowed: 4, Pending: 2, Budget: 12, WeightedShare: "0.500"}}},
			{Name: "nlp", ClusterQueue: "nlp", Cohort: "research", Nominal: 8, Lent: 4,
				GPUTypes: []v1alpha1.QueueUsage{{GPUType: "nvidia-tesla-v100", Nominal: 8, Lent: 4}}},
			{Name: "old", ClusterQueue: "gone", Message: "ClusterQueue gone does not exist: the jobs of this queue wait"},
		}})
	})
	mux.HandleFunc("/api/v1/version", func(w http.ResponseWriter, r *http.Request) {
		reply(w, 200, rest.Version{Version: "1.2.3", Namespace: "voda"})
	})
	cs.Server = httptest.NewServer(mux)
	t.Cleanup(cs.Close)
	return cs
}

// runAgainst runs the CLI with a fixed clock, no config file and the
// canned server's address in the environment.
func runAgainst(t *testing.T, cs *cannedServer, args ...string) (int, string, string) {
	t.Helper()
	t.Setenv("VODA_SERVER", cs.URL)
	t.Setenv("VODA_TOKEN", "tok")
	t.Setenv("VODA_CONFIG", "")
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", "")
	prev := now
	now = func() time.Time { return goldenNow }
	t.Cleanup(func() { now = prev })
	return run(args...)
}

// golden compares out with testdata/NAME.golden (rewritten with -update).
func golden(t *testing.T, name, out string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/cli -update)", err)
	}
	if diff := cmp.Diff(string(want), out); diff != "" {
		t.Errorf("%s (-golden +got):\n%s", name, diff)
	}
}

func TestGoldenOutput(t *testing.T) {
	job := filepath.Join(t.TempDir(), "job.yaml")
	if err := os.WriteFile(job, []byte("kind: MPIJob\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		code int
	}{
		{"get-jobs", []string{"get", "jobs"}, 0},
		{"get-jobs-wide", []string{"get", "jobs", "-o", "wide"}, 0},
		{"get-job-yaml", []string{"get", "job", "transformer", "-o", "yaml"}, 0},
		{"describe-running", []string{"describe", "job", "mnist"}, 0},
		{"describe-waiting", []string{"describe", "job", "cifar10-resnet50-20261123-113000"}, 0},
		{"describe-completed", []string{"describe", "job", "transformer"}, 0},
		{"describe-starting", []string{"describe", "job", "llama-ft"}, 0},
		{"get-schedulers", []string{"get", "schedulers"}, 0},
		{"get-queues", []string{"get", "queues"}, 0},
		{"describe-queue", []string{"describe", "queue", "default"}, 0},
		{"describe-queue-missing", []string{"describe", "queue", "vision"}, 1},
		{"create", []string{"create", "-f", job}, 0},
		{"delete-several", []string{"delete", "mnist", "gone", "transformer"}, 1},
		{"set-scheduler", []string{"set", "scheduler", "nvidia-tesla-v100", "--algorithm", "tiresias", "--rate-limit", "10s"}, 0},
		{"set-scheduler-params", []string{"set", "scheduler", "nvidia-tesla-v100", "--policy-param", "tiresias.thresholds=4h", "--policy-param", "tiresias.promote-knob=0"}, 0},
		{"version", []string{"version"}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cs := newCannedServer(t)
			code, out, errOut := runAgainst(t, cs, c.args...)
			if code != c.code {
				t.Errorf("exit code %d, want %d; stderr %s", code, c.code, errOut)
			}
			// The server's address changes from run to run.
			golden(t, c.name, strings.ReplaceAll(out+errOut, cs.URL, "http://SERVER"))
		})
	}
}

// -o table names the default format.
func TestOutputTableIsTheDefault(t *testing.T) {
	for _, args := range [][]string{{"get", "jobs"}, {"get", "schedulers"}, {"get", "queues"}} {
		cs := newCannedServer(t)
		code, def, _ := runAgainst(t, cs, args...)
		tcode, table, stderr := runAgainst(t, cs, append(args, "-o", "table")...)
		if code != 0 || tcode != 0 || table != def {
			t.Errorf("%v -o table: exit %d (%s), output\n%s\nwant exit %d and\n%s", args, tcode, stderr, table, code, def)
		}
	}
}

// TestDeleteSendsEveryName guards against the original's bug of deleting
// the first name once per argument.
func TestDeleteSendsEveryName(t *testing.T) {
	cs := newCannedServer(t)
	runAgainst(t, cs, "delete", "mnist", "gone", "transformer")
	want := []string{
		"DELETE /api/v1/jobs/mnist Bearer tok",
		"DELETE /api/v1/jobs/gone Bearer tok",
		"DELETE /api/v1/jobs/transformer Bearer tok",
	}
	if diff := cmp.Diff(want, cs.requests); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func TestClientCommandsRefuseBadInput(t *testing.T) {
	cs := newCannedServer(t)
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"create without -f", []string{"create"}, 2, "-f FILE is required"},
		{"create a missing file", []string{"create", "-f", "/nonexistent.yaml"}, 2, "no such file"},
		{"unknown output", []string{"get", "jobs", "-o", "xml"}, 2, "-o xml: want table (the default), wide, json, yaml"},
		{"watch as JSON", []string{"get", "jobs", "-w", "-o", "json"}, 2, "--watch prints tables only"},
		{"get nothing", []string{"get"}, 2, "say what to get"},
		{"delete nothing", []string{"delete"}, 2, "requires at least 1 arg"},
		{"describe two", []string{"describe", "job", "a", "b"}, 2, "accepts 1 arg"},
		{"set nothing", []string{"set", "scheduler", "v100"}, 2, "nothing to change"},
		{"set unknown algorithm", []string{"set", "scheduler", "v100", "--algorithm", "Fastest"}, 2, "valid policies are"},
		{"set bad rate limit", []string{"set", "scheduler", "v100", "--rate-limit", "soon"}, 2, `--rate-limit "soon"`},
		{"set unknown parameter", []string{"set", "scheduler", "v100", "--policy-param", "hesrpt.speed=2"}, 2, `--policy-param: unknown policy parameter "hesrpt.speed"`},
		{"set a parameter twice", []string{"set", "scheduler", "v100", "--policy-param", "hesrpt.aging=1h", "--policy-param", "hesrpt.aging=2h"}, 2, "given twice"},
		{"set and clear parameters", []string{"set", "scheduler", "v100", "--policy-param", "hesrpt.aging=1h", "--clear-policy-params"}, 2, "contradict"},
		{"bad server URL", []string{"get", "jobs", "--server", "voda:8088"}, 2, `"voda:8088" is not an http:// or https:// URL`},
		{"wrong token", []string{"get", "jobs", "--token", "nope"}, 1, "the bearer token is not valid (check --token"},
		{"missing job", []string{"describe", "job", "gone"}, 1, "job gone not found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, errOut := runAgainst(t, cs, c.args...)
			if code != c.code || !strings.Contains(errOut, c.want) {
				t.Errorf("exit %d, stderr %q; want %d saying %q", code, errOut, c.code, c.want)
			}
		})
	}
}

func TestClientConfigPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(file, []byte("server: http://from-file:1\ntoken: file-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("sever: http://typo\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name               string
		flags              clientFlags
		env                map[string]string
		wantServer, wantTk string
		wantErr            string
	}{
		{"file only", clientFlags{}, map[string]string{"VODA_CONFIG": file}, "http://from-file:1", "file-token", ""},
		{"env beats file", clientFlags{}, map[string]string{"VODA_CONFIG": file, "VODA_SERVER": "http://from-env:2", "VODA_TOKEN": "env-token"}, "http://from-env:2", "env-token", ""},
		{"flags beat env", clientFlags{server: "http://from-flag:3", token: "flag-token"}, map[string]string{"VODA_CONFIG": file, "VODA_SERVER": "http://from-env:2"}, "http://from-flag:3", "flag-token", ""},
		{"--config beats VODA_CONFIG", clientFlags{config: file}, map[string]string{"VODA_CONFIG": bad}, "http://from-file:1", "file-token", ""},
		{"default file under HOME", clientFlags{}, map[string]string{"XDG_CONFIG_HOME": dir + "/xdg"}, "http://from-xdg:4", "", ""},
		{"unknown field in the file", clientFlags{config: bad}, nil, "", "", `unknown field "sever"`},
		{"explicit file missing", clientFlags{config: dir + "/none.yaml"}, nil, "", "", "no such file"},
		{"nothing", clientFlags{}, nil, "", "", "no Voda server: pass --server URL"},
	}
	if err := os.MkdirAll(dir+"/xdg/voda", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/xdg/voda/config.yaml", []byte("server: http://from-xdg:4\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, k := range []string{"VODA_CONFIG", "VODA_SERVER", "VODA_TOKEN"} {
				t.Setenv(k, "")
			}
			t.Setenv("HOME", t.TempDir())
			t.Setenv("XDG_CONFIG_HOME", filepath.Join(t.TempDir(), "empty"))
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			cfg, err := c.flags.resolve()
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Server != c.wantServer || cfg.Token != c.wantTk {
				t.Errorf("server %q token %q, want %q %q", cfg.Server, cfg.Token, c.wantServer, c.wantTk)
			}
		})
	}
}

// TestWatchPrintsChanges polls a server whose jobs change and prints the
// table once, then only what changed.
func TestWatchPrintsChanges(t *testing.T) {
	jobs := goldenJobs()[:2]
	polls := 0
	fetch := func(context.Context) ([]v1alpha1.TrainingJob, error) {
		polls++
		switch polls {
		case 2: // nothing changes
		case 3: // the waiting job starts
			jobs[0].Status.Phase, jobs[0].Status.Workers = v1alpha1.PhaseRunning, 4
		case 4: // the running one is deleted
			jobs = jobs[:1]
		case 5:
			return nil, &client.Error{Status: 503, Message: "cannot check the token now"}
		}
		return append([]v1alpha1.TrainingJob(nil), jobs...), nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	var out bytes.Buffer
	done := make(chan error)
	prev := now
	now = func() time.Time { return goldenNow }
	defer func() { now = prev }()
	go func() { done <- watchJobs(ctx, &out, fetch, false, time.Millisecond) }()
	time.Sleep(50 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if polls < 5 {
		t.Fatalf("only %d polls", polls)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{
		`^NAME +STATUS +WORKERS`,
		`^cifar10-resnet50-20261123-113000 +Waiting +0 `,
		`^mnist +Running +3 `,
		`^cifar10-resnet50-20261123-113000 +Running +4 `,
		`^mnist +Deleted`,
		`^# cannot check the token now \(retrying\)`,
	}
	if len(lines) < len(want) {
		t.Fatalf("output:\n%s", out.String())
	}
	for i, w := range want {
		if !matches(w, lines[i]) {
			t.Errorf("line %d %q does not match %q\n%s", i, lines[i], w, out.String())
		}
	}
}

func matches(pattern, s string) bool { return regexp.MustCompile(pattern).MatchString(s) }
