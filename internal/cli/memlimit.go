package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// cgroupLimit returns the memory limit of the cgroup the process runs in,
// as a container sees it under root (/sys/fs/cgroup): cgroup v2's
// memory.max, else cgroup v1's memory/memory.limit_in_bytes. It returns 0
// when there is no limit ("max", or v1's page-rounded maximum) or no such
// file.
func cgroupLimit(root string) (int64, error) {
	for _, name := range []string{"memory.max", filepath.Join("memory", "memory.limit_in_bytes")} {
		data, err := os.ReadFile(filepath.Join(root, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, err
		}
		text := strings.TrimSpace(string(data))
		if text == "max" {
			return 0, nil
		}
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("%s: %q is not a memory limit", filepath.Join(root, name), text)
		}
		if n >= math.MaxInt64/2 { // cgroup v1 without a limit
			return 0, nil
		}
		return n, nil
	}
	return 0, nil
}

// setMemoryLimit sets the Go runtime's soft memory limit to fraction of
// the container's memory limit, so that the collector works harder as the
// controller nears it instead of the kernel killing the controller. It
// leaves the runtime alone when GOMEMLIMIT is set, fraction is 0 or the
// process has no memory limit. It returns the limit it set, 0 for none.
func setMemoryLimit(root string, fraction float64) (int64, error) {
	if fraction == 0 || os.Getenv("GOMEMLIMIT") != "" {
		return 0, nil
	}
	limit, err := cgroupLimit(root)
	if err != nil || limit == 0 {
		return 0, err
	}
	soft := int64(float64(limit) * fraction)
	debug.SetMemoryLimit(soft)
	return soft, nil
}
