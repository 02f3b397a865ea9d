package testenv

import (
	"context"
	"os"
	"path/filepath"
	"strings"
)

// CoschedulerName is the scheduler name of the secondary scheduler that
// StartCoscheduling runs: pods with this schedulerName and the label
// PodGroupLabel are scheduled as a gang.
const (
	CoschedulerName = "scheduler-plugins-scheduler"
	PodGroupLabel   = "scheduling.x-k8s.io/pod-group"
)

// coschedulingConfig enables the Coscheduling plugin in a profile of its
// own, next to the default scheduler.
const coschedulingConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
clientConnection:
  kubeconfig: KUBECONFIG
profiles:
- schedulerName: ` + CoschedulerName + `
  plugins:
    multiPoint:
      enabled:
      - name: Coscheduling
    queueSort:
      enabled:
      - name: Coscheduling
      disabled:
      - name: "*"
  pluginConfig:
  - name: Coscheduling
    args:
      permitWaitingTimeSeconds: 10
`

// ApplyPodGroupCRD installs scheduler-plugins' PodGroup CRD, built by
// hack/tools/build.sh, without starting its scheduler.
func (e *Env) ApplyPodGroupCRD(ctx context.Context) error {
	return e.applyCRDFile(ctx, "scheduling.x-k8s.io_podgroups.yaml")
}

// StartCoscheduling installs the PodGroup CRD and runs the scheduler-plugins
// scheduler with coscheduling as a secondary scheduler, and its PodGroup
// controller, all built by hack/tools/build.sh from sigs.k8s.io/scheduler-plugins.
// Once they run, later calls do nothing.
func (e *Env) StartCoscheduling(ctx context.Context) error {
	e.coschedMu.Lock()
	defer e.coschedMu.Unlock()
	if e.cosched {
		return nil
	}
	if err := HasFiles(e.bin, coschedulingFiles...); err != nil {
		return err
	}
	if err := e.ApplyPodGroupCRD(ctx); err != nil {
		return err
	}
	cfg := filepath.Join(e.Dir, "coscheduling.yaml")
	if err := os.WriteFile(cfg, []byte(strings.Replace(coschedulingConfig, "KUBECONFIG", e.Kubeconfig, 1)), 0o600); err != nil {
		return err
	}
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	flags := append(e.componentFlags("scheduler-plugins", ports[0]), "--config="+cfg)
	// The configuration file says how to reach the API server and that
	// there is no leader election; those flags may not be given with it.
	flags = dropFlags(flags, "--kubeconfig=", "--leader-elect=")
	sched, err := e.start("scheduler-plugins-scheduler", "scheduler-plugins-scheduler", flags)
	if err != nil {
		return err
	}
	if _, err := e.start("scheduler-plugins-controller", "scheduler-plugins-controller", []string{
		"--kubeconfig=" + e.Kubeconfig, "--metricsAddr=0", "--probeAddr=0", "--qps=50", "--burst=100",
	}); err != nil {
		return err
	}
	if err := e.waitHealthy(ctx, sched, ports[0]); err != nil {
		return err
	}
	e.cosched = true
	return nil
}

func dropFlags(flags []string, prefixes ...string) []string {
	var out []string
	for _, f := range flags {
		keep := true
		for _, p := range prefixes {
			keep = keep && !strings.HasPrefix(f, p)
		}
		if keep {
			out = append(out, f)
		}
	}
	return out
}
