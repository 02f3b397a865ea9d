package testenv

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
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
	for _, p := range liveProcesses() {
		if p.pgid == pgid {
			out = append(out, p.String())
		}
	}
	return out
}

// procInfo is what /proc/PID/stat says of one process.
type procInfo struct {
	pid, ppid, pgid int
	state           byte
	cmdline         string
}

func (p procInfo) String() string { return fmt.Sprintf("%d %s", p.pid, p.cmdline) }

// liveProcesses reads every process of the machine that is not a zombie.
// A process that exits while it is read is left out.
func liveProcesses() []procInfo {
	dir, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []procInfo
	for _, d := range dir {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		p, ok := readProc(pid)
		if ok && p.state != 'Z' && p.state != 'X' {
			out = append(out, p)
		}
	}
	return out
}

func readProc(pid int) (procInfo, bool) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procInfo{}, false
	}
	// "PID (comm) state ppid pgrp …"; comm may hold spaces and parentheses,
	// so the fields start after the last ')'.
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return procInfo{}, false
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 3 || len(f[0]) != 1 {
		return procInfo{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgid, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil {
		return procInfo{}, false
	}
	cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	line := strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))
	if len(line) > 200 {
		line = line[:200] + "…"
	}
	return procInfo{pid: pid, ppid: ppid, pgid: pgid, state: f[0][0], cmdline: line}, true
}
