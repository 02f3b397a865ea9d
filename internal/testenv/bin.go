package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// BinEnv names the environment variable that overrides where the component
// binaries are looked up.
const BinEnv = "VODA_TOOLS_BIN"

// The files of hack/tools/build.sh that every environment needs (`make
// dev-cluster` builds only these).
var requiredFiles = []string{
	"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler",
	"kwok", "mpi-operator", "kubeflow.org_mpijobs.yaml", "kubectl",
	"training-operator", "kubeflow.org_pytorchjobs.yaml",
}

// The files of what only some tests use: helm (the chart's tests) and the
// scheduler-plugins coscheduling scheduler (gang scheduling).
var (
	helmFiles         = []string{"helm"}
	coschedulingFiles = []string{"scheduler-plugins-scheduler", "scheduler-plugins-controller", "scheduling.x-k8s.io_podgroups.yaml"}
)

// HasFiles reports, as an error wrapping ErrNoBinaries, which of files are
// missing from the binaries' directory dir.
func HasFiles(dir string, files ...string) error {
	var missing []string
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s missing in %s", ErrNoBinaries, strings.Join(missing, ", "), dir)
	}
	return nil
}

// HasHelm reports whether the pinned helm is built, as HasFiles does.
func HasHelm(dir string) error { return HasFiles(dir, helmFiles...) }

// ErrNoBinaries is returned, wrapped, when the component binaries are not built.
var ErrNoBinaries = errors.New("control-plane binaries not built; run `make tools`")

// BinDir returns the directory holding the component binaries: $VODA_TOOLS_BIN
// if set, else .cache/tools/bin at the root of the repository containing the
// working directory. It fails with ErrNoBinaries when a file is missing.
func BinDir() (string, error) {
	dir := os.Getenv(BinEnv)
	if dir == "" {
		root, err := repoRoot()
		if err != nil {
			return "", fmt.Errorf("%w (%v)", ErrNoBinaries, err)
		}
		dir = filepath.Join(root, ".cache", "tools", "bin")
	}
	if err := HasFiles(dir, requiredFiles...); err != nil {
		return "", err
	}
	return dir, nil
}

// repoRoot walks up from the working directory to the directory holding the
// main module's go.mod (tests run in their package directory).
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(data), "module github.com/vodascheduler/voda\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the voda repository")
		}
		dir = parent
	}
}
