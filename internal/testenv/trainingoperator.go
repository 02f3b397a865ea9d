package testenv

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The Kubeflow training-operator (v1.9) runs its controllers only once its
// webhook certificates are "ready": it rotates them into a Secret it
// expects to exist and waits for the files, which a Deployment would mount
// from that Secret, in a directory fixed in its source. The environment
// creates the Secret, writes a valid key pair into that directory, and
// registers no webhook configuration, so the API server never calls the
// webhook: PyTorchJobs are checked by their CRD schema alone, as on a
// cluster that runs the operator without its webhook.
const (
	trainingOperatorNamespace = "kubeflow-training"
	trainingOperatorSecret    = "training-operator-webhook-cert"
	trainingOperatorCertDir   = "/tmp/k8s-webhook-server/serving-certs"
)

// applyPyTorchJobCRD installs the PyTorchJob CRD of the pinned
// training-operator, copied next to the binaries by hack/tools/build.sh.
func (e *Env) applyPyTorchJobCRD(ctx context.Context) error {
	return e.applyCRDFile(ctx, "kubeflow.org_pytorchjobs.yaml")
}

// startTrainingOperator runs the training-operator with only the PyTorchJob
// kind enabled (mpi-operator owns MPIJobs; the two would fight over them).
// It shares mpi-operator's machine-wide turn (lockMPIOperator) because of
// its fixed certificate directory.
func (e *Env) startTrainingOperator(ctx context.Context) error {
	if err := e.CreateNamespace(ctx, trainingOperatorNamespace); err != nil {
		return err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: trainingOperatorSecret, Namespace: trainingOperatorNamespace}}
	if _, err := e.Client.CoreV1().Secrets(trainingOperatorNamespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("training-operator webhook secret: %w", err)
	}
	if err := writeServingPair(e.pki, trainingOperatorCertDir); err != nil {
		return fmt.Errorf("training-operator certificates: %w", err)
	}
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	p, err := e.start("training-operator", "training-operator", append([]string{
		"--enable-scheme=pytorchjob",
		"--metrics-bind-address=0",
		"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(ports[0]),
		"--webhook-server-port=" + strconv.Itoa(ports[1]),
		"--controller-threads=4",
		"--zap-log-level=info",
	}, e.operatorRate()...), "KUBECONFIG="+e.Kubeconfig, "MY_POD_NAMESPACE="+trainingOperatorNamespace)
	if err != nil {
		return err
	}
	// Ready once the certificates are and its webhook server listens; its
	// controllers are registered at the same moment.
	url := "http://127.0.0.1:" + strconv.Itoa(ports[0]) + "/readyz"
	return poll(ctx, readyTimeout, "training-operator /readyz", p, func(ctx context.Context) (bool, error) {
		return httpOK(ctx, http.DefaultClient, url)
	})
}

// writeServingPair writes a key pair the operator's webhook server can load
// (the API server's serving pair: nothing calls that webhook).
func writeServingPair(p *pki, dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for src, dst := range map[string]string{p.servingCert: "tls.crt", p.servingKey: "tls.key"} {
		data, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, dst), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}
