package testenv

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// ChartRelease is the release name the tests render the Helm chart as; the
// chart names its ServiceAccount and roles after it.
const ChartRelease = "voda"

// ChartDir is the Helm chart's directory.
func ChartDir() (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "deploy", "helm", "voda"), nil
}

// Helm runs the pinned helm against the environment and returns its
// standard output.
func (e *Env) Helm(ctx context.Context, args ...string) ([]byte, error) {
	if err := HasHelm(e.bin); err != nil {
		return nil, err
	}
	return e.run(ctx, nil, "helm", append(args, "--kubeconfig", e.Kubeconfig)...)
}

// Kubectl runs the pinned kubectl against the environment with stdin as its
// input and returns its standard output.
func (e *Env) Kubectl(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	return e.run(ctx, stdin, "kubectl", append(args, "--kubeconfig", e.Kubeconfig)...)
}

func (e *Env) run(ctx context.Context, stdin []byte, bin string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(e.bin, bin), args...)
	cmd.Env = append(cmd.Environ(), "HOME="+e.Dir, "HELM_CACHE_HOME="+filepath.Join(e.Dir, "helm"), "HELM_CONFIG_HOME="+filepath.Join(e.Dir, "helm"))
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.Bytes(), fmt.Errorf("%s %s: %w: %s", bin, strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.Bytes(), nil
}

// ChartIdentity applies the Helm chart's ServiceAccount and RBAC, rendered
// for a release in namespace (which must exist), and returns a client
// configuration authenticated as that ServiceAccount with a token from the
// TokenRequest API: a controller run with it has exactly the chart's
// permissions.
func (e *Env) ChartIdentity(ctx context.Context, namespace string) (*rest.Config, error) {
	return e.ReleaseIdentity(ctx, namespace, ChartRelease)
}

// ReleaseIdentity is ChartIdentity for a release of another name, rendered
// with the given --set values (say, a gang scheduler, which brings its
// own rules).
func (e *Env) ReleaseIdentity(ctx context.Context, namespace, release string, set ...string) (*rest.Config, error) {
	dir, err := ChartDir()
	if err != nil {
		return nil, err
	}
	args := []string{"template", release, dir, "--namespace", namespace, "--kube-version", "1.34.4",
		"--show-only", "templates/serviceaccount.yaml", "--show-only", "templates/rbac.yaml"}
	for _, v := range set {
		args = append(args, "--set", v)
	}
	manifest, err := e.Helm(ctx, args...)
	if err != nil {
		return nil, err
	}
	if _, err := e.Kubectl(ctx, manifest, "apply", "--server-side", "-f", "-"); err != nil {
		return nil, err
	}
	return e.ServiceAccountConfig(ctx, namespace, release)
}

// ServiceAccountConfig returns a client configuration authenticated as a
// ServiceAccount, with a token from the TokenRequest API valid for two
// hours.
func (e *Env) ServiceAccountConfig(ctx context.Context, namespace, name string) (*rest.Config, error) {
	expiry := int64((2 * time.Hour).Seconds())
	tr, err := e.Client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name,
		&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("token for the service account %s/%s: %w", namespace, name, err)
	}
	cfg := rest.AnonymousClientConfig(e.Config)
	cfg.BearerToken = tr.Status.Token
	return cfg, nil
}

// GrantChartNamespaced gives the chart's ServiceAccount (of a release in
// releaseNS) its namespaced permissions — the leader Lease and the settings
// ConfigMap — in another namespace too, as the chart does in its own.
func (e *Env) GrantChartNamespaced(ctx context.Context, releaseNS, namespace string) error {
	return e.GrantReleaseNamespaced(ctx, releaseNS, ChartRelease, namespace)
}

// GrantReleaseNamespaced is GrantChartNamespaced for a release of another
// name (ReleaseIdentity).
func (e *Env) GrantReleaseNamespaced(ctx context.Context, releaseNS, release, namespace string) error {
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: release},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: release + "-namespaced"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: release, Namespace: releaseNS}},
	}
	_, err := e.Client.RbacV1().RoleBindings(namespace).Create(ctx, rb, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
