package testenv

import "syscall"

// sysProcAttr asks the kernel to kill a component if the process that started
// it dies without running its teardown (a test binary killed on timeout), and
// puts it in its own process group so a terminal's Ctrl-C reaches only the
// parent, which then stops the components in order.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}
