package testenv

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/rest"
)

// Outage stops a component of the control plane — "kube-apiserver" or
// "etcd" — keeps it down for down, starts it again with the same flags and
// data, and returns once it is ready again (the API server's /readyz, or
// etcd's /health and then the API server's /readyz). The stop is SIGTERM,
// then SIGKILL after the grace period; the component's log continues in
// the same file.
func (e *Env) Outage(ctx context.Context, name string, down time.Duration) error {
	if name != "kube-apiserver" && name != "etcd" {
		return fmt.Errorf("testenv: Outage of %q: only kube-apiserver and etcd", name)
	}
	old, i := e.running(name)
	if old == nil {
		return fmt.Errorf("testenv: %s is not running", name)
	}
	if err := old.stop(stopGrace); err != nil {
		return err
	}
	e.opts.Logf("testenv: stopped %s for %s", name, down)
	select {
	case <-time.After(down):
	case <-ctx.Done():
		return ctx.Err()
	}
	// Restarted under the lock and only while the environment runs: a
	// component started after Stop took its list would outlive the test.
	e.mu.Lock()
	if e.stopping {
		e.mu.Unlock()
		return fmt.Errorf("testenv: the environment stopped during the outage of %s", name)
	}
	p, err := restartProcess(old)
	if err != nil {
		e.mu.Unlock()
		return err
	}
	e.procs[i] = p
	e.mu.Unlock()
	e.opts.Logf("testenv: restarted %s (pid %d)", name, p.cmd.Process.Pid)
	if name == "etcd" {
		var url string
		for _, a := range p.cmd.Args {
			if v, ok := strings.CutPrefix(a, "--advertise-client-urls="); ok {
				url = v
			}
		}
		err := poll(ctx, readyTimeout, "etcd /health", p, func(ctx context.Context) (bool, error) {
			return httpOK(ctx, http.DefaultClient, url+"/health")
		})
		if err != nil {
			return err
		}
	}
	return e.waitAPIReady(ctx)
}

// waitAPIReady waits until the API server answers /readyz.
func (e *Env) waitAPIReady(ctx context.Context) error {
	rc, err := rest.HTTPClientFor(e.Config)
	if err != nil {
		return err
	}
	api, _ := e.running("kube-apiserver")
	if api == nil {
		return errors.New("testenv: kube-apiserver is not running")
	}
	return poll(ctx, readyTimeout, "kube-apiserver /readyz", api, func(ctx context.Context) (bool, error) {
		return httpOK(ctx, rc, e.Config.Host+"/readyz")
	})
}

// restartProcess starts a stopped process again with the same command,
// appending to its log.
func restartProcess(old *process) (*process, error) {
	f, err := os.OpenFile(old.logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("restart %s: %w", old.name, err)
	}
	fmt.Fprintf(f, "\n==== testenv: restarted at %s ====\n", time.Now().Format(time.RFC3339Nano))
	_ = f.Close()
	p, err := startProcess(old.name, old.cmd.Path, old.cmd.Args[1:], filepath.Dir(old.logPath), old.env...)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// running returns the component the environment runs under name, and its
// index in e.procs; nil and -1 if there is none.
func (e *Env) running(name string) (*process, int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	i := slices.IndexFunc(e.procs, func(p *process) bool { return p.name == name })
	if i < 0 {
		return nil, -1
	}
	return e.procs[i], i
}
