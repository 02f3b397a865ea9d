//go:build !linux

package testenv

import (
	"syscall"
	"time"
)

// GroupSysProcAttr puts no process in a group of its own: the process
// table is read from /proc, which only Linux has.
func GroupSysProcAttr() *syscall.SysProcAttr { return nil }

// EndGroup does nothing where the process table cannot be read.
func EndGroup(pgid int, timeout time.Duration) error { return nil }

// GroupMembers knows no process where the process table cannot be read.
func GroupMembers(pgid int) []string { return nil }
