package testenv

import (
	"os/exec"
	"testing"
	"time"
)

// Killing the process a test started leaves what it forked running;
// EndGroup ends them all and waits for them.
func TestEndGroupEndsWhatTheProcessForked(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes; skipped with -short")
	}
	cmd := exec.Command("sh", "-c", "sleep 300 & sleep 300 & wait")
	cmd.SysProcAttr = GroupSysProcAttr()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	deadline := time.Now().Add(10 * time.Second)
	for len(GroupMembers(pgid)) < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := len(GroupMembers(pgid)); n != 3 {
		t.Fatalf("group %d: got %d processes, want 3 (sh and two sleeps): %v", pgid, n, GroupMembers(pgid))
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if n := len(GroupMembers(pgid)); n != 2 {
		t.Fatalf("after killing sh: got %d processes in group %d, want its 2 orphans", n, pgid)
	}
	if err := EndGroup(pgid, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if left := GroupMembers(pgid); len(left) > 0 {
		t.Fatalf("EndGroup returned with %v left", left)
	}
}

func TestEndGroupRefusesGroupsItDidNotStart(t *testing.T) {
	for _, pgid := range []int{0, 1, -5} {
		if err := EndGroup(pgid, time.Second); err == nil {
			t.Errorf("EndGroup(%d): got nil, want an error", pgid)
		}
	}
}
