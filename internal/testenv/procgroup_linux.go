package testenv

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/vodascheduler/voda/internal/proctable"
)

// GroupSysProcAttr starts a process in a process group of its own (its PID
// is the group's ID), killed with the test binary if that dies first. A
// program that forks helpers, or a wrapper script that runs the real binary
// as its child (Debian's /usr/bin/chromium-headless-shell does), can then be
// ended as a whole by EndGroup: killing only the PID that was started
// orphans the rest, which then outlive the test.
func GroupSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// EndGroup kills every process of process group pgid and waits until none
// is left, or until timeout; then it names those still there. A process
// that has exited but is not reaped yet (a zombie) counts as gone: it runs
// nothing and writes nothing.
func EndGroup(pgid int, timeout time.Duration) error {
	if pgid <= 1 {
		return fmt.Errorf("end process group %d: not a group a test started", pgid)
	}
	deadline := time.Now().Add(timeout)
	for {
		left := GroupMembers(pgid)
		if len(left) == 0 {
			return nil
		}
		// Kill again each time: a member that forked after the first
		// signal would otherwise survive it.
		if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("end process group %d: %w", pgid, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("process group %d still has %d processes %s after SIGKILL: %s",
				pgid, len(left), timeout, strings.Join(left, "; "))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// GroupMembers lists the live processes of process group pgid as
// "PID command line", read from /proc.
func GroupMembers(pgid int) []string {
	var out []string
	for _, p := range proctable.Live() {
		if p.PGID == pgid {
			out = append(out, p.String())
		}
	}
	return out
}
