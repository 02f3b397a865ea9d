package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// Bad controller flags are usage errors (exit 2) that say what is valid,
// found before any connection to a cluster is tried.
func TestControllerRejectsBadFlags(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"controller", "--algorithm", "Optimus"}, "--algorithm"},
		{[]string{"controller", "--rate-limit", "-1s"}, "--rate-limit must not be negative"},
		{[]string{"controller", "--type-choice-period", "0s"}, "--type-choice-period 0s: must be a positive duration (the default is 30s)"},
		{[]string{"controller", "--type-choice-dwell", "-1m"}, "--type-choice-dwell -1m0s: must be a positive duration (the default is 10m0s)"},
		{[]string{"controller", "--gang-timeout", "0s"}, "--gang-timeout 0s: must be a positive duration (the default is 5m0s)"},
		{[]string{"controller", "--operator-idle", "-1s"}, "--operator-idle -1s: must be a positive duration (the default is 1m0s)"},
		{[]string{"controller", "--status-sync", "-5s"}, "--status-sync -5s: must be a positive duration"},
		{[]string{"controller", "--metrics-scan", "0"}, "--metrics-scan 0s: must be a positive duration"},
		{[]string{"controller", "--rate-limit", "soon"}, "invalid argument"},
		{[]string{"controller", "--memory-limit-fraction", "1.5"}, "--memory-limit-fraction 1.5: want a fraction of the container's memory limit"},
		{[]string{"controller", "--memory-limit-fraction", "-0.1"}, "--memory-limit-fraction -0.1: want"},
		{[]string{"controller", "--api-auth", "static", "--api-token-file", "t.csv", "--api-token-audiences", "voda"}, "--api-token-audiences needs --api-auth tokenreview"},
		{[]string{"controller", "--api-auth", "static", "--api-token-file", "t.csv", "--api-auth-cache-ttl", "10s"}, "--api-auth-cache-ttl needs --api-auth tokenreview"},
		{[]string{"controller", "extra"}, "unknown command"},
		{[]string{"controller", "--gang-scheduler", "kueue"}, `unknown gang scheduler "kueue"; want one of none, scheduler-plugins, volcano`},
		{[]string{"controller", "--gang-queue", "research"}, "needs --gang-scheduler=scheduler-plugins or volcano"},
		{[]string{"controller", "--gang-scheduler", "scheduler-plugins", "--gang-queue", "q"}, "only for --gang-scheduler=volcano"},
		{[]string{"controller", "--policy-param", "hesrpt.exponent"}, "--policy-param: policy parameter \"hesrpt.exponent\": want NAME=VALUE"},
		{[]string{"controller", "--policy-param", "hesrpt.aging=0"}, "--policy-param: policy parameter hesrpt.aging=0: want a positive duration"},
		{[]string{"controller", "--policy-param", "tiresias.thresholds=2h,1h"}, "--policy-param: tiresias thresholds must increase"},
		{[]string{"controller", "--policy-param", "fifo.order=lifo"}, "valid parameters are hesrpt.exponent"},
	}
	for _, c := range cases {
		code, _, stderr := run(c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
	// The algorithm error lists the valid names.
	if _, _, stderr := run("controller", "--algorithm", "Optimus"); !strings.Contains(stderr, "ElasticTiresias") {
		t.Errorf("stderr %q does not list the policies", stderr)
	}
}

// Without a cluster the controller fails with a message saying how to
// point it at one.
func TestControllerNeedsACluster(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", t.TempDir()) // no ~/.kube/config
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	code, _, stderr := run("controller", "--leader-elect=false")
	if code != 1 || !strings.Contains(stderr, "pass --kubeconfig or run in a cluster") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// A $KUBECONFIG naming no file that exists is named in the error, not
// reported as a configuration that was never given.
func TestControllerMissingKubeconfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope")
	t.Setenv("KUBECONFIG", path)
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	code, _, stderr := run("controller")
	if want := "$KUBECONFIG names " + path + ", which does not exist"; code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, stderr %q; want 1 and %q", code, stderr, want)
	}
}
