// Command devcluster runs the local control plane of internal/testenv in the
// foreground with fake GPU nodes, so Voda can be tried without a cluster:
//
//	NODES=4 GPUS=4 TYPES=nvidia-tesla-v100,nvidia-gtx-1080ti go run ./hack/devcluster
//
// NODES nodes of GPUS GPUs are created for each type in TYPES, and the Voda
// controller runs against them (ALGORITHM, default HeSRPT; RATE_LIMIT,
// default 5s; CONTROLLER=0 leaves it out, to run `voda controller` yourself),
// with its REST API on API_ADDR (default 127.0.0.1:8088) for the voda CLI.
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
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vodascheduler/voda/internal/testenv"
	"github.com/vodascheduler/voda/pkg/cluster/kube"
	"github.com/vodascheduler/voda/pkg/server"
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
	apiHint := ""
	if envString("CONTROLLER", "1") != "0" {
		if apiHint, err = startController(ctx, env, filepath.Join(dir, "logs", "voda-controller.log")); err != nil {
			return err
		}
	}
	fmt.Printf("Use it from another shell:\n\n  export KUBECONFIG=%s\n  kubectl get nodes -L %s\n  kubectl apply --server-side -f examples/mnist-trainingjob.yaml\n  kubectl get tj\n\n%s", env.Kubeconfig, testenv.AcceleratorLabel, apiHint)
	fmt.Printf("Logs are in %s. Pods on the fake nodes run until deleted; annotate one with\n%s=30s to end it (add %s=fail to fail it).\nPress Ctrl-C to stop.\n",
		filepath.Join(dir, "logs"), testenv.CompleteAfterAnnotation, testenv.ExitAnnotation)
	<-ctx.Done()
	fmt.Println("\ndev-cluster: stopping")
	return nil
}

// startController runs the Voda controller in this process, logging to a
// file beside the components' logs, with its REST API on API_ADDR
// (default 127.0.0.1:8088) authenticating through TokenReview. It returns
// how to use the API: a token of the service account default/developer,
// whose namespace's service accounts are API admins.
func startController(ctx context.Context, env *testenv.Env, logPath string) (string, error) {
	rate, err := time.ParseDuration(envString("RATE_LIMIT", "5s"))
	if err != nil {
		return "", fmt.Errorf("RATE_LIMIT: %w", err)
	}
	f, err := os.Create(logPath)
	if err != nil {
		return "", err
	}
	o := kube.ManagerOptions{
		Options: kube.Options{
			Policy:          envString("ALGORITHM", kube.DefaultPolicy),
			RateLimit:       rate,
			ConfigNamespace: devNamespace,
			Log:             logr.FromSlogHandler(slog.NewTextHandler(f, nil)),
		},
		MetricsAddr: "0",
		HealthAddr:  "0",
	}
	mgr, _, err := kube.NewManager(env.Config, o)
	if err != nil {
		return "", err
	}
	c, err := client.New(env.Config, client.Options{Scheme: kube.Scheme()})
	if err != nil {
		return "", err
	}
	srv, err := server.New(c, server.TokenReview{Client: c}, server.Options{
		Namespace: devNamespace, ConfigNamespace: devNamespace,
		AdminGroups:      []string{"system:masters", server.DefaultAdminGroup, "system:serviceaccounts:" + devNamespace},
		DefaultAlgorithm: o.Policy, DefaultRateLimit: rate, Version: "dev-cluster", Log: o.Log, UI: true,
	})
	if err != nil {
		return "", err
	}
	addr := envString("API_ADDR", "127.0.0.1:8088")
	if err := mgr.Add(&server.Listener{Addr: addr, Handler: srv.Handler()}); err != nil {
		return "", err
	}
	token, err := developerToken(ctx, env)
	if err != nil {
		return "", err
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "dev-cluster: controller:", err)
		}
	}()
	fmt.Printf("dev-cluster: voda controller running (%s, rate limit %s, REST API on %s), log in %s\n\n", o.Policy, rate, addr, logPath)
	return fmt.Sprintf("or with the voda CLI (go build -o bin/voda ./cmd/voda):\n\n  export VODA_SERVER=http://%s VODA_TOKEN=%s\n  bin/voda create -f examples/mnist-trainingjob.yaml\n  bin/voda get jobs\n  bin/voda describe job mnist\n\n"+
		"The dashboard is at http://%s/ui/ — log in with the same token (an admin's: it may change the policies):\n\n  %s\n\n", addr, token, addr, token), nil
}

// devNamespace holds the jobs of the API, the settings ConfigMap and the
// developer's service account.
const devNamespace = "default"

// developerToken creates the service account default/developer and a
// token for it, valid for a day.
func developerToken(ctx context.Context, env *testenv.Env) (string, error) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: devNamespace, Name: "developer"}}
	if _, err := env.Client.CoreV1().ServiceAccounts(devNamespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	day := int64(24 * 3600)
	tr, err := env.Client.CoreV1().ServiceAccounts(devNamespace).CreateToken(ctx, "developer",
		&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: &day}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token for default/developer: %w", err)
	}
	return tr.Status.Token, nil
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
