package testenv

import (
	"context"
	"errors"
	"testing"
)

// logTailLines is how much of each component's log a failed test prints.
const logTailLines = 40

// New starts an environment for a test and stops it when the test ends,
// whether it passes, fails or panics. When the test failed, the tail of every
// component's log is printed; the full logs stay in the test's temp dir. It
// skips the test under -short, and when the binaries are not built (run
// `make tools`).
func New(t testing.TB, opts Options) *Env {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a local control plane; skipped with -short")
	}
	if opts.BinDir == "" {
		bin, err := BinDir()
		if errors.Is(err, ErrNoBinaries) {
			t.Skipf("%v", err)
		}
		if err != nil {
			t.Fatal(err)
		}
		opts.BinDir = bin
	}
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	e, err := Start(context.Background(), opts)
	if e != nil {
		t.Cleanup(func() { stopForTest(t, e) })
	}
	if err != nil {
		t.Fatalf("start control plane: %v\n%s", err, logsIn(opts.Dir))
	}
	return e
}

func stopForTest(t testing.TB, e *Env) {
	if t.Failed() {
		t.Logf("component logs:\n%s", e.Logs(logTailLines))
	}
	e.Stop()
}
