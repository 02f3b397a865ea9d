package testenv

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// How long each component may take to become ready. Generous: a loaded CI
// machine with the race detector on is slow, and a healthy start takes seconds.
const (
	readyTimeout = 60 * time.Second
)

// kwok manages the nodes with this annotation; CreateGPUNodes sets it.
const (
	kwokNodeAnnotation = "kwok.x-k8s.io/node"
	kwokNodeValue      = "fake"
)

func (e *Env) startEtcd(ctx context.Context, clientPort, peerPort int) error {
	client := "http://127.0.0.1:" + strconv.Itoa(clientPort)
	peer := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	p, err := e.start("etcd", "etcd", []string{
		"--name=testenv",
		"--data-dir=" + filepath.Join(e.Dir, "etcd"),
		"--listen-client-urls=" + client,
		"--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=testenv=" + peer,
		// The data is thrown away with the test; fsync only costs time.
		"--unsafe-no-fsync",
		"--log-level=warn",
	})
	if err != nil {
		return err
	}
	return poll(ctx, readyTimeout, "etcd /health", p, func(ctx context.Context) (bool, error) {
		return httpOK(ctx, http.DefaultClient, client+"/health")
	})
}

func (e *Env) startAPIServer(ctx context.Context, etcdPort, port int) error {
	host := "https://127.0.0.1:" + strconv.Itoa(port)
	_, err := e.start("kube-apiserver", "kube-apiserver", []string{
		"--etcd-servers=http://127.0.0.1:" + strconv.Itoa(etcdPort),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + filepath.Join(e.Dir, "pki", "apiserver"),
		"--tls-cert-file=" + e.pki.servingCert,
		"--tls-private-key-file=" + e.pki.servingKey,
		"--client-ca-file=" + e.pki.caCert,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + e.pki.saKey,
		"--service-account-signing-key-file=" + e.pki.saKey,
		"--authorization-mode=Node,RBAC",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--allow-privileged=true",
		// 127.0.0.1 is not a valid endpoint address; nothing here needs the
		// kubernetes service's endpoints.
		"--endpoint-reconciler-type=none",
		"--profiling=false",
	})
	if err != nil {
		return err
	}
	if err := e.writeKubeconfig(host); err != nil {
		return err
	}
	return e.waitAPIReady(ctx)
}

// startControllerManager runs every default controller, among them node
// lifecycle (it removes the not-ready taint from kwok nodes), job, garbage
// collection, and the service-account and token controllers.
//
// Node lifecycle gets five minutes, not 50 s, before it takes a silent node
// for lost: on two loaded cores kwok renews hundreds of nodes' leases late,
// and the controller then marks every pod on them not Ready, which a
// kubelet would undo and kwok does not (an MPIJob's launcher, created once
// its workers are Ready, then never comes).
func (e *Env) startControllerManager(port int) (*process, error) {
	return e.start("kube-controller-manager", "kube-controller-manager", append(e.componentFlags("kube-controller-manager", port),
		"--controllers=*",
		"--node-monitor-grace-period=5m",
		"--node-startup-grace-period=5m",
		"--use-service-account-credentials=false",
		"--service-account-private-key-file="+e.pki.saKey,
		"--root-ca-file="+e.pki.caCert,
		"--cluster-signing-cert-file="+e.pki.caCert,
		"--cluster-signing-key-file="+e.pki.caKey,
	))
}

func (e *Env) startScheduler(port int) (*process, error) {
	flags := e.componentFlags("kube-scheduler", port)
	if q := e.opts.ComponentQPS; q > 0 {
		flags = append(flags, "--kube-api-qps="+strconv.Itoa(q), "--kube-api-burst="+strconv.Itoa(2*q))
	}
	return e.start("kube-scheduler", "kube-scheduler", flags)
}

// operatorRate is the operators' client rate flags.
func (e *Env) operatorRate() []string {
	q := e.opts.ComponentQPS
	if q <= 0 {
		q = 100
	}
	return []string{"--kube-api-qps=" + strconv.Itoa(q), "--kube-api-burst=" + strconv.Itoa(2*q)}
}

// componentFlags are the flags kube-controller-manager and kube-scheduler
// share: the admin kubeconfig for everything, a serving port on loopback
// with its own certificate directory, no leader election, no profiling.
func (e *Env) componentFlags(name string, port int) []string {
	return []string{
		"--kubeconfig=" + e.Kubeconfig,
		"--authentication-kubeconfig=" + e.Kubeconfig,
		"--authorization-kubeconfig=" + e.Kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + filepath.Join(e.Dir, "pki", name),
		"--leader-elect=false",
		"--profiling=false",
	}
}

// startKwok runs kwok with our pod stages (stages.go); it keeps its default
// node stages (initialize, heartbeat with leases).
func (e *Env) startKwok() (*process, error) {
	dir := filepath.Join(e.Dir, "kwok")
	cfg := filepath.Join(dir, "stages.yaml")
	if err := os.WriteFile(cfg, []byte(podStages), 0o600); err != nil {
		return nil, err
	}
	return e.start("kwok", "kwok", []string{
		"--kubeconfig=" + e.Kubeconfig,
		"--config=" + cfg,
		"--manage-nodes-with-annotation-selector=" + kwokNodeAnnotation + "=" + kwokNodeValue,
		"--cidr=10.244.0.1/16",
		"--node-ip=10.0.1.1",
		// With a configuration of stages only, kwok's lease duration is 0:
		// it renews no node Lease and heartbeats no node status, and node
		// lifecycle takes every node for lost once its grace period ends.
		"--node-lease-duration-seconds=40",
	},
		// kwok also reads ~/.kwok/kwok.yaml; keep the user's out of the tests.
		"HOME="+dir)
}

// waitHealthy waits until a component's /healthz answers on its secure port.
func (e *Env) waitHealthy(ctx context.Context, p *process, port int) error {
	url := "https://127.0.0.1:" + strconv.Itoa(port) + "/healthz"
	return poll(ctx, readyTimeout, p.name+" /healthz", p, func(ctx context.Context) (bool, error) {
		return httpOK(ctx, insecureClient, url)
	})
}

// WaitServiceAccount waits until namespace's default service account exists;
// the ServiceAccount admission plugin rejects pods until it does.
func (e *Env) WaitServiceAccount(ctx context.Context, namespace string) error {
	return poll(ctx, readyTimeout, "service account "+namespace+"/default", nil, func(ctx context.Context) (bool, error) {
		_, err := e.Client.CoreV1().ServiceAccounts(namespace).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
}

// mpiOperatorHealthPort is where mpi-operator v0.6.0 serves /healthz; it is
// fixed in its source, so only one environment with mpi-operator can run on a
// machine at a time (lockMPIOperator makes them take turns).
const mpiOperatorHealthPort = 8080

func (e *Env) startMPIOperator(ctx context.Context) error {
	l, err := net.Listen("tcp", ":"+strconv.Itoa(mpiOperatorHealthPort))
	if err != nil {
		return fmt.Errorf("mpi-operator needs port %d for its health check, which another program uses: %w",
			mpiOperatorHealthPort, err)
	}
	_ = l.Close()
	const lockNamespace = "mpi-operator"
	if err := e.CreateNamespace(ctx, lockNamespace); err != nil {
		return err
	}
	p, err := e.start("mpi-operator", "mpi-operator", append([]string{
		"--kubeConfig=" + e.Kubeconfig,
		"--lock-namespace=" + lockNamespace,
		"--threadiness=4",
		"--monitoring-port=0",
		// Its workqueue's default, 10 events a second across all jobs,
		// delays a job's sync by seconds while pods start; every event
		// meanwhile doubles the job's backoff, so one failed sync then
		// (a conflict writing the MPIJob's status is common) leaves the
		// job unhandled for up to 1 000 s (docs/controller.md, Limits).
		"--controller-queue-rate-limit=1000",
		"--controller-queue-burst=1000",
	}, e.operatorRate()...))
	if err != nil {
		return err
	}
	// It runs its controller once it holds its leader-election lease.
	return poll(ctx, readyTimeout, "mpi-operator leader lease", p, func(ctx context.Context) (bool, error) {
		l, err := e.Client.CoordinationV1().Leases(lockNamespace).Get(ctx, "mpi-operator", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "", nil
	})
}
