// Package proctable reads the machine's process table from /proc, for the
// tests and tools that must end every process they started (test
// environments, browsers, hack/leakcheck). It imports only the standard
// library; on systems without /proc it lists nothing.
package proctable

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Process is what /proc/PID/stat and /proc/PID/cmdline say of one process.
type Process struct {
	PID, PPID, PGID int
	// Cmdline is the command line, arguments separated by spaces, cut
	// at 300 characters.
	Cmdline string
}

func (p Process) String() string { return fmt.Sprintf("%d %s", p.PID, p.Cmdline) }

// Live lists the processes that run: a process that has exited but waits
// to be reaped (a zombie) runs nothing and writes nothing, and is left
// out, as is one that exits while it is read.
func Live() []Process {
	dir, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []Process
	for _, d := range dir {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if p, ok := read(pid); ok {
			out = append(out, p)
		}
	}
	return out
}

func read(pid int) (Process, bool) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Process{}, false
	}
	// "PID (comm) state ppid pgrp …"; comm may hold spaces and parentheses,
	// so the fields start after the last ')'.
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return Process{}, false
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
		return Process{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgid, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil {
		return Process{}, false
	}
	cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	line := strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))
	if len(line) > 300 {
		line = line[:300] + "…"
	}
	return Process{PID: pid, PPID: ppid, PGID: pgid, Cmdline: line}, true
}
