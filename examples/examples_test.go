// Package examples holds the job files and scripts of examples/; its test
// checks the Python scripts.
package examples

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
	if err := exec.Command(py, "-c", "import torch").Run(); err != nil {
		t.Log("PyTorch is not installed: train.py was parsed, not run")
		return
	}
	ckpt := filepath.Join(t.TempDir(), "state.pt")
	for run, want := range []string{"starting at epoch 0", "starting at epoch 1"} {
		cmd := exec.Command(py, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=1",
			"pytorch/train.py", "--epochs=1", "--steps-per-epoch=1", "--global-batch=8", "--checkpoint="+ckpt)
		cmd.Env = append(os.Environ(), "PYTHONPATH=progress", "VODA_GPUS_PER_WORKER=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), want) {
			t.Fatalf("run %d: %v; want %q in:\n%s", run, err, want, out)
		}
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
