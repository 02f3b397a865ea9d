// Package examples holds the job files and scripts of examples/; its test
// checks the Python scripts.
package examples

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/vodascheduler/voda/pkg/progress"
)

// python returns the Python 3 interpreter, skipping the test without one:
// the scripts run in the training containers, not on the machine that runs
// the tests.
func python(t *testing.T) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed: the example scripts cannot be checked here")
	}
	return py
}

// Every script compiles. Where PyTorch is installed, the elastic DDP example
// also trains one CPU step under torchrun and resumes from its checkpoint.
func TestPythonExamples(t *testing.T) {
	py := python(t)
	scripts := []string{"progress/voda_progress.py", "pytorch/train.py"}
	for _, s := range scripts {
		out, err := exec.Command(py, "-c", "import ast,sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])", s).CombinedOutput()
		if err != nil {
			t.Errorf("%s does not parse: %v\n%s", s, err, out)
		}
	}
	py = torchPython(t)
	if py == "" {
		t.Log("PyTorch is not installed: train.py was parsed, not run")
		return
	}
	ckpt := filepath.Join(t.TempDir(), "state.pt")
	for run, want := range []string{"starting at epoch 0", "starting at epoch 1"} {
		cmd := torchrun(t, py, 1, "--epochs=1", "--steps-per-epoch=1", "--global-batch=8", "--checkpoint="+ckpt)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), want) {
			t.Fatalf("run %d: %v; want %q in:\n%s", run, err, want, out)
		}
	}
}

// torchPython returns a Python 3 with PyTorch — Debian's (python3-torch)
// first, then the one on PATH — or "" without one, unless
// VODA_REQUIRE_TORCH is set (CI installs python3-torch): then the test
// fails.
func torchPython(t *testing.T) string {
	t.Helper()
	for _, py := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(py, "-c", "import torch.distributed.run").Run() == nil {
			return py
		}
	}
	if os.Getenv("VODA_REQUIRE_TORCH") != "" {
		t.Fatal("VODA_REQUIRE_TORCH is set but no python3 imports torch: install Debian's python3-torch")
	}
	return ""
}

// torchrun runs train.py under torchrun with procs processes on this
// machine, with voda_progress.py importable and one GPU per process.
func torchrun(t *testing.T, py string, procs int, args ...string) *exec.Cmd {
	cmd := exec.Command(py, append([]string{"-m", "torch.distributed.run", "--standalone",
		"--nproc_per_node=" + strconv.Itoa(procs), "pytorch/train.py"}, args...)...)
	// torch 1.13 on Python 3.11 needs its output redirected to work at
	// all; TMPDIR keeps its files out of /tmp.
	cmd.Env = append(os.Environ(), "PYTHONPATH=progress", "VODA_GPUS_PER_WORKER="+strconv.Itoa(procs),
		"PET_REDIRECTS=1", "PET_TEE=1", "TMPDIR="+t.TempDir())
	return cmd
}

// A job that lets Voda choose its batch size: train.py runs the batch of
// VODA_BATCH_SIZES for its size (in accumulation steps), measures the
// gradient noise on its two processes and reports it with each epoch, and
// counts its epochs at the initial batch; the reports are checked as the
// REST API would take them.
func TestAdaptiveTraining(t *testing.T) {
	py := torchPython(t)
	if py == "" {
		t.Skip("PyTorch is not installed: set VODA_REQUIRE_TORCH=1 to make this a failure")
	}
	var mu sync.Mutex
	var reports []progress.Report
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rep progress.Report
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&rep); err != nil || r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, fmt.Sprint(err), http.StatusBadRequest)
			return
		}
		if err := rep.Validate(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		reports = append(reports, rep)
		mu.Unlock()
		w.Write([]byte("{}"))
	}))
	defer srv.Close()
	// One worker of 2 GPUs: a batch of 128 = 32 per process × 2 processes ×
	// 2 accumulation steps, against an initial 64.
	cmd := torchrun(t, py, 2, "--epochs=3", "--steps-per-epoch=20", "--global-batch=64",
		"--checkpoint="+filepath.Join(t.TempDir(), "state.pt"))
	cmd.Env = append(cmd.Env, "VODA_BATCH_SIZES=1:128:32:2 2:256:32:2", "VODA_INITIAL_BATCH_SIZE=64",
		"VODA_PROGRESS_URL="+srv.URL, "VODA_PROGRESS_TOKEN=tok")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "batch 128 (32 per process × 2 accumulation steps)") {
		t.Fatalf("%v\n%s", err, out)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reports) < 3 {
		t.Fatalf("%d reports, want one per epoch, 3 or more:\n%s", len(reports), out)
	}
	last, stats := 0.0, 0
	for i, r := range reports {
		if r.GlobalBatch != 128 || r.LocalBatch != 32 || r.Workers != 1 || r.Steps != 10 {
			t.Errorf("report %d: batch %d (%d per process), %d workers, %d steps; want 128, 32, 1, 10", i, r.GlobalBatch, r.LocalBatch, r.Workers, r.Steps)
		}
		if r.GradSqr != nil {
			stats++
		}
		// An epoch at twice the initial batch is worth between a half and
		// one epoch at it.
		if e := r.EquivalentEpochs; e == nil || *e-last < 0.5-1e-6 || *e-last > 1+1e-6 {
			t.Errorf("report %d: equivalent epochs %v after %v", i, e, last)
		} else {
			last = *e
		}
	}
	if last < 3 {
		t.Errorf("training stopped at %v epochs' worth, want 3", last)
	}
	// An epoch's estimate that comes out negative is left out; on this
	// model's random labels they are far from it.
	if stats < len(reports)-1 {
		t.Errorf("%d of %d reports carry gradient statistics", stats, len(reports))
	}
}

// workers_of turns processes into workers with the GPUs per worker Voda
// sets in every pod.
func TestWorkersOf(t *testing.T) {
	py := python(t)
	for _, c := range []struct{ env, procs, want string }{
		{"", "8", "8"}, {"4", "8", "2"}, {"4", "3", "1"}, {"junk", "6", "6"},
	} {
		cmd := exec.Command(py, "-c", "import sys, voda_progress as v; print(v.workers_of(int(sys.argv[1])))", c.procs)
		cmd.Dir = "progress"
		cmd.Env = append(os.Environ(), "VODA_GPUS_PER_WORKER="+c.env)
		out, err := cmd.Output()
		if got := strings.TrimSpace(string(out)); err != nil || got != c.want {
			t.Errorf("VODA_GPUS_PER_WORKER=%q, %s processes: got %q (%v), want %s", c.env, c.procs, got, err, c.want)
		}
	}
}
