package proctable

import (
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestLiveFindsThisProcessAndAChild(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	ps := Live()
	self := slices.IndexFunc(ps, func(p Process) bool { return p.PID == os.Getpid() })
	child := slices.IndexFunc(ps, func(p Process) bool { return p.PID == cmd.Process.Pid })
	if self < 0 || child < 0 {
		t.Fatalf("this process found: %v, its child: %v", self >= 0, child >= 0)
	}
	if c := ps[child]; c.PPID != os.Getpid() || c.Cmdline != "sleep 30" || c.PGID != ps[self].PGID {
		t.Errorf("child: got %+v, want parent %d, command line %q and this process's group %d", c, os.Getpid(), "sleep 30", ps[self].PGID)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if slices.ContainsFunc(Live(), func(p Process) bool { return p.PID == cmd.Process.Pid && strings.HasPrefix(p.Cmdline, "sleep") }) {
		t.Error("a reaped child is still listed")
	}
}
