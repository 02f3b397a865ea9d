// Command leakcheck runs a command, typically `go test`, and fails if any
// process it started, directly or not, is still running once it has exited.
//
// It makes itself a child subreaper (Linux's PR_SET_CHILD_SUBREAPER), so a
// process whose parent exits without ending it (a browser a test forgot, a
// control-plane component orphaned by a killed test binary) is re-parented
// to leakcheck instead of to init, where it could run unseen. When the
// command exits, leakcheck waits up to --grace for such processes to end,
// then names every one left, kills them with all they started, and exits 1.
// Otherwise it exits with the command's status.
//
// Usage: go run ./hack/leakcheck [--grace 10s] -- go test ./...
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/vodascheduler/voda/internal/proctable"
)

func main() {
	grace := flag.Duration("grace", 10*time.Second, "how long processes left by the command get to exit on their own before they count as leaked")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: leakcheck [--grace 10s] -- command [args...]\n\n"+
			"Runs the command and fails if a process it started outlives it.\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	os.Exit(run(flag.Args(), *grace))
}

func run(args []string, grace time.Duration) int {
	subreaper := becomeSubreaper() == nil
	if !subreaper {
		fmt.Fprintln(os.Stderr, "leakcheck: this system has no child subreapers; running the command without the check")
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// Interrupts reach the command through the terminal's process group;
	// a SIGTERM sent to leakcheck alone is passed on.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "leakcheck: %v\n", err)
		return 127
	}
	go func() {
		for s := range sigs {
			if s == syscall.SIGTERM {
				_ = cmd.Process.Signal(s)
			}
		}
	}()
	status := exitStatus(cmd.Wait())
	if !subreaper {
		return status
	}
	left := waitForOrphans(grace)
	if len(left) == 0 {
		return status
	}
	fmt.Fprintf(os.Stderr, "leakcheck: %d processes outlived `%s` by %s; a test started them and did not end them:\n",
		len(left), strings.Join(args, " "), grace)
	for _, p := range left {
		fmt.Fprintf(os.Stderr, "  pid %d (process group %d): %s\n", p.PID, p.PGID, p.Cmdline)
	}
	killAll(left)
	if status == 0 {
		status = 1
	}
	return status
}

func exitStatus(err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if ee.ExitCode() >= 0 {
			return ee.ExitCode()
		}
		return 1
	default:
		fmt.Fprintf(os.Stderr, "leakcheck: %v\n", err)
		return 1
	}
}

// waitForOrphans reaps the children re-parented to leakcheck until none
// is left or grace has passed, and returns those still running.
func waitForOrphans(grace time.Duration) []proc {
	deadline := time.Now().Add(grace)
	for {
		reap()
		left := children(os.Getpid())
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// reap collects every child that has exited, without blocking.
func reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}

// killAll kills the processes, their process groups and their
// descendants, then reaps them.
func killAll(ps []proc) {
	for round := 0; round < 50; round++ {
		all := descendants(os.Getpid())
		if len(all) == 0 {
			return
		}
		for _, p := range all {
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
			if p.PGID > 1 && p.PGID != syscall.Getpgrp() {
				_ = syscall.Kill(-p.PGID, syscall.SIGKILL)
			}
		}
		time.Sleep(100 * time.Millisecond)
		reap()
	}
	fmt.Fprintln(os.Stderr, "leakcheck: some processes could not be killed")
}

type proc = proctable.Process

// children lists the live processes whose parent is pid.
func children(pid int) []proc {
	var out []proc
	for _, p := range proctable.Live() {
		if p.PPID == pid {
			out = append(out, p)
		}
	}
	return out
}

// descendants lists every live process below pid.
func descendants(pid int) []proc {
	all := proctable.Live()
	below := map[int]bool{pid: true}
	var out []proc
	for changed := true; changed; {
		changed = false
		for _, p := range all {
			if below[p.PPID] && !below[p.PID] {
				below[p.PID] = true
				out = append(out, p)
				changed = true
			}
		}
	}
	return out
}
