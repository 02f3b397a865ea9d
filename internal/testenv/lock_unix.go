//go:build unix

package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// lockTimeout bounds how long an environment waits for another one (in a
// parallel test binary, or `make dev-cluster`) to release mpi-operator's port.
// The kube package's tests hold it for 11 minutes or more on a 2-core
// machine, so this is as long as make test's own timeout (TEST_TIMEOUT),
// which ends a run that long anyway.
const lockTimeout = 30 * time.Minute

// lockMPIOperator takes a machine-wide lock before mpi-operator starts: its
// health port is fixed, so environments with mpi-operator take turns instead
// of failing when go test runs packages in parallel. The lock goes with the
// returned file (closed by Stop, or by the kernel if the process dies).
func lockMPIOperator(ctx context.Context, logf func(string, ...any)) (*os.File, error) {
	path := filepath.Join(os.TempDir(), "voda-testenv-mpi-operator.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	logged := false
	err = poll(ctx, lockTimeout, "the mpi-operator lock "+path, nil, func(context.Context) (bool, error) {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if errors.Is(err, syscall.EWOULDBLOCK) {
			if !logged {
				logf("testenv: another environment runs mpi-operator; waiting for it to stop")
				logged = true
			}
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}
