package cli

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// The container's memory limit is read from cgroup v2, else v1; no limit,
// "max" and v1's unlimited value mean none, and garbage is an error naming
// the file.
func TestCgroupLimit(t *testing.T) {
	write := func(t *testing.T, root, name, text string) {
		t.Helper()
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name, file, text string
		want             int64
		bad              bool
	}{
		{"none", "", "", 0, false},
		{"v2", "memory.max", "536870912\n", 512 << 20, false},
		{"v2 max", "memory.max", "max\n", 0, false},
		{"v1", "memory/memory.limit_in_bytes", "536870912\n", 512 << 20, false},
		{"v1 unlimited", "memory/memory.limit_in_bytes", "9223372036854771712\n", 0, false},
		{"garbage", "memory.max", "lots\n", 0, true},
		{"zero", "memory.max", "0\n", 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			if c.file != "" {
				write(t, root, c.file, c.text)
			}
			got, err := cgroupLimit(root)
			if got != c.want || (err != nil) != c.bad {
				t.Errorf("%d, %v; want %d, error %v", got, err, c.want, c.bad)
			}
		})
	}
}

// The soft limit is the fraction of the container's, unless GOMEMLIMIT
// says otherwise or the fraction is 0.
func TestSetMemoryLimit(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "memory.max"), []byte("1000000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	t.Setenv("GOMEMLIMIT", "")
	if got, err := setMemoryLimit(root, 0); got != 0 || err != nil || debug.SetMemoryLimit(-1) != before {
		t.Errorf("fraction 0 set %d, %v", got, err)
	}
	if got, err := setMemoryLimit(root, 0.9); got != 900000000 || err != nil || debug.SetMemoryLimit(-1) != 900000000 {
		t.Errorf("set %d, %v; runtime %d; want 900000000", got, err, debug.SetMemoryLimit(-1))
	}
	debug.SetMemoryLimit(before)
	t.Setenv("GOMEMLIMIT", "300MiB")
	if got, err := setMemoryLimit(root, 0.9); got != 0 || err != nil || debug.SetMemoryLimit(-1) != before {
		t.Errorf("with GOMEMLIMIT set %d, %v", got, err)
	}
}
