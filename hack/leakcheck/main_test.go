//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vodascheduler/voda/internal/proctable"
)

// leakcheck passes a command's status on when it leaves nothing behind,
// and fails, naming and ending them, when it does.
func TestLeakcheck(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs leakcheck; skipped with -short")
	}
	bin := filepath.Join(t.TempDir(), "leakcheck")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	// A sleep of a length no other process uses marks what the cases start.
	marker := fmt.Sprintf("117.%d", os.Getpid())
	for name, c := range map[string]struct {
		script   string
		wantCode int
		wantErr  string
	}{
		"a clean command keeps its status 0":         {"true", 0, ""},
		"a failing command keeps its own status":     {"exit 3", 3, ""},
		"a child that ends within the grace is fine": {"(sleep 0.3) & exit 0", 0, ""},
		"an orphan that keeps running fails the run": {"sleep " + marker + " & exit 0", 1, "sleep " + marker},
		"an orphan's own children are ended with it": {"sh -c 'sleep " + marker + " & sleep " + marker + "; wait' & exit 0", 1, "1 processes outlived"},
	} {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(bin, "--grace", "1s", "--", "sh", "-c", c.script)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != c.wantCode {
				t.Errorf("exit code: got %d, want %d; stderr:\n%s", code, c.wantCode, stderr.String())
			}
			if c.wantErr == "" && stderr.Len() > 0 {
				t.Errorf("stderr: got %q, want nothing", stderr.String())
			}
			if !strings.Contains(stderr.String(), c.wantErr) {
				t.Errorf("stderr: got %q, want it to contain %q", stderr.String(), c.wantErr)
			}
			for _, p := range proctable.Live() {
				if strings.Contains(p.Cmdline, marker) {
					t.Errorf("still running after leakcheck exited: %s", p)
					_ = syscallKill(p.PID)
				}
			}
		})
	}
}

func syscallKill(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}
