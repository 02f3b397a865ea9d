package testenv

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// stopGrace is how long a component gets to exit after SIGTERM before SIGKILL.
const stopGrace = 10 * time.Second

// process is one component the environment started. It is ended by its PID
// only, so nothing else on the machine is touched.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	logFile *os.File
	done    chan struct{} // closed when the process has exited
	err     error         // the exit status; read only after done is closed
	env     []string      // added to the environment (kept for a restart)
}

// startProcess runs bin with args in a process group of its own, its stdout and stderr going to
// <logDir>/<name>.log, and env added to the current environment.
func startProcess(name, bin string, args []string, logDir string, env ...string) (*process, error) {
	logPath := filepath.Join(logDir, name+".log")
	// Appended to: a restarted component (Env.Outage) continues its log.
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = GroupSysProcAttr()
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, logFile: f, done: make(chan struct{}), env: env}
	go func() {
		p.err = cmd.Wait()
		_ = f.Close()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended, and how.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		if p.err == nil {
			return true, fmt.Errorf("%s exited", p.name)
		}
		return true, fmt.Errorf("%s exited: %w", p.name, p.err)
	default:
		return false, nil
	}
}

// stop sends SIGTERM to the process's PID and SIGKILL after grace. It
// returns once the process has been reaped and nothing it started is left
// in its process group, or says what is.
func (p *process) stop(grace time.Duration) error {
	if ok, _ := p.exited(); !ok {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(grace):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
	if err := EndGroup(p.cmd.Process.Pid, grace); err != nil {
		return fmt.Errorf("stop %s: %w", p.name, err)
	}
	return nil
}

// tail returns the last n lines of the process's log.
func (p *process) tail(n int) string {
	return tailFile(p.logPath, n, "")
}

// tailFile returns the last n lines of the file at path that contain
// match (every line, if match is empty).
func tailFile(path string, n int, match string) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		if match != "" && !strings.Contains(sc.Text(), match) {
			continue
		}
		lines = append(lines, sc.Text())
		if len(lines) > 2*n {
			lines = append(lines[:0], lines[len(lines)-n:]...)
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		lines = append(lines, fmt.Sprintf("(reading log: %v)", err))
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
