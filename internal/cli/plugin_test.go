package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vodascheduler/voda/internal/testenv"
)

// TestKubectlPluginRuns installs the binary as kubectl-voda and runs it
// through the pinned kubectl.
func TestKubectlPluginRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs kubectl; skipped with -short")
	}
	bin, err := testenv.BinDir()
	if err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "kubectl-voda"), "github.com/vodascheduler/voda/cmd/voda")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	run := func(args ...string) string {
		cmd := exec.Command(filepath.Join(bin, "kubectl"), args...)
		cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"), "HOME="+t.TempDir(), "VODA_SERVER=", "VODA_CONFIG=")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if out := run("plugin", "list"); !strings.Contains(out, "kubectl-voda") {
		t.Errorf("kubectl plugin list:\n%s", out)
	}
	if out := run("voda", "version"); !strings.HasPrefix(out, "Client: ") {
		t.Errorf("kubectl voda version:\n%s", out)
	}
	if out := run("voda", "get", "jobs", "--help"); !strings.Contains(out, "kubectl voda get jobs") {
		t.Errorf("kubectl voda get jobs --help:\n%s", out)
	}
}
