//go:build unix

package testenv

import (
	"fmt"
	"syscall"
)

// Pause freezes a supervised component (an operator, say) with SIGSTOP, as
// an operator lagging behind its queue would be: it keeps its connections
// and caches but does nothing until the returned resume sends SIGCONT. It
// may have lost a leader lease meanwhile; it then exits and is restarted,
// as after any loss of its lease. Resuming twice is harmless.
func (e *Env) Pause(name string) (resume func() error, err error) {
	if !supervised[name] {
		return nil, fmt.Errorf("testenv: Pause of %q: only a supervised component (an operator, a controller)", name)
	}
	p, _ := e.running(name)
	if p == nil {
		return nil, fmt.Errorf("testenv: %s is not running", name)
	}
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return nil, fmt.Errorf("testenv: pause %s: %w", name, err)
	}
	e.opts.Logf("testenv: paused %s (pid %d)", name, p.cmd.Process.Pid)
	return func() error {
		if ok, _ := p.exited(); ok {
			return nil
		}
		if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			return fmt.Errorf("testenv: resume %s: %w", name, err)
		}
		e.opts.Logf("testenv: resumed %s (pid %d)", name, p.cmd.Process.Pid)
		return nil
	}, nil
}
