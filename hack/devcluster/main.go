// Command devcluster runs the local control plane of internal/testenv in the
// foreground with fake GPU nodes, so Voda can be tried without a cluster:
//
//	NODES=4 GPUS=4 TYPES=nvidia-tesla-v100,nvidia-gtx-1080ti go run ./hack/devcluster
//
// NODES nodes of GPUS GPUs are created for each type in TYPES, and the Voda
// controller runs against them (ALGORITHM, default ElasticFIFO; RATE_LIMIT,
// default 5s; CONTROLLER=0 leaves it out, to run `voda controller` yourself).
// Ctrl-C stops every component. `make dev-cluster` builds the binaries first
// and runs it.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"

	"github.com/vodascheduler/voda/internal/testenv"
	"github.com/vodascheduler/voda/pkg/cluster/kube"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "dev-cluster:", err)
		os.Exit(1)
	}
}

func run() error {
	nodes, err := envInt("NODES", 4)
	if err != nil {
		return err
	}
	gpus, err := envInt("GPUS", 4)
	if err != nil {
		return err
	}
	types := strings.Split(envString("TYPES", "nvidia-tesla-v100,nvidia-gtx-1080ti"), ",")
	dir := envString("DIR", filepath.Join(".cache", "dev-cluster"))
	// A fresh state each run: etcd data from a previous run has stale nodes and leases.
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logf := func(format string, args ...any) { fmt.Printf(format+"\n", args...) }
	env, err := testenv.Start(ctx, testenv.Options{Dir: dir, Logf: logf})
	if err != nil {
		if errors.Is(err, testenv.ErrNoBinaries) {
			return fmt.Errorf("%w (make dev-cluster does)", err)
		}
		return err
	}
	defer env.Stop()

	var specs []testenv.NodeSpec
	for _, t := range types {
		if t = strings.TrimSpace(t); t != "" {
			specs = append(specs, testenv.NodeSpec{GPUType: t, Count: nodes, GPUs: gpus})
		}
	}
	begin := time.Now()
	names, err := env.CreateGPUNodes(ctx, specs...)
	if err != nil {
		return err
	}
	fmt.Printf("dev-cluster: %d GPU nodes ready in %s: %s\n\n", len(names), time.Since(begin).Round(time.Millisecond), strings.Join(names, " "))
	if envString("CONTROLLER", "1") != "0" {
		if err := startController(ctx, env, filepath.Join(dir, "logs", "voda-controller.log")); err != nil {
			return err
		}
	}
	fmt.Printf("Use it from another shell:\n\n  export KUBECONFIG=%s\n  kubectl get nodes -L %s\n  kubectl apply --server-side -f examples/mnist-trainingjob.yaml\n  kubectl get tj\n\n", env.Kubeconfig, testenv.AcceleratorLabel)
	fmt.Printf("Logs are in %s. Pods on the fake nodes run until deleted; annotate one with\n%s=30s to end it (add %s=fail to fail it).\nPress Ctrl-C to stop.\n",
		filepath.Join(dir, "logs"), testenv.CompleteAfterAnnotation, testenv.ExitAnnotation)
	<-ctx.Done()
	fmt.Println("\ndev-cluster: stopping")
	return nil
}

// startController runs the Voda controller in this process, logging to a
// file beside the components' logs.
func startController(ctx context.Context, env *testenv.Env, logPath string) error {
	rate, err := time.ParseDuration(envString("RATE_LIMIT", "5s"))
	if err != nil {
		return fmt.Errorf("RATE_LIMIT: %w", err)
	}
	f, err := os.Create(logPath)
	if err != nil {
		return err
	}
	o := kube.ManagerOptions{
		Options: kube.Options{
			Policy:    envString("ALGORITHM", kube.DefaultPolicy),
			RateLimit: rate,
			Log:       logr.FromSlogHandler(slog.NewTextHandler(f, nil)),
		},
		MetricsAddr: "0",
		HealthAddr:  "0",
	}
	mgr, _, err := kube.NewManager(env.Config, o)
	if err != nil {
		return err
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "dev-cluster: controller:", err)
		}
	}()
	fmt.Printf("dev-cluster: voda controller running (%s, rate limit %s), log in %s\n\n", o.Policy, rate, logPath)
	return nil
}

func envString(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func envInt(name string, def int) (int, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s=%q: want a positive integer", name, v)
	}
	return n, nil
}
