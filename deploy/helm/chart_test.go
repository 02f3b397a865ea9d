// Tests of the Helm chart in voda/: lint, rendering, and installing,
// applying and upgrading it on the local control plane.
package helm_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/vodascheduler/voda/internal/testenv"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/cluster/kube"
)

// allOptions turns every option of the chart on.
const allOptions = `replicas: 3
image: {repository: registry.example/voda, tag: test, pullPolicy: Always}
imagePullSecrets: [{name: regcred}]
scheduler:
  algorithm: Tiresias
  rateLimit: 10s
  policyParams: [tiresias.thresholds=16h, tiresias.promote-knob=0]
  perGPUType:
    nvidia-tesla-v100: {algorithm: ElasticTiresias, rateLimit: 5s, policyParams: ['tiresias.thresholds=8h,32h']}
    nvidia-gtx-1080ti: {algorithm: AFS-L}
  gpuTypes: [nvidia-tesla-v100, nvidia-gtx-1080ti]
  accelerators: {amd-mi300x: amd.com/gpu, cpu-pool: cpu}
  statusSync: 10s
  statusSyncWrites: 25
  typeChoicePeriod: 1m
  typeChoiceDwell: 20m
  gangTimeout: 2m
  operatorIdle: 90s
  gangScheduler: volcano
  gangSchedulerName: volcano-gpu
  gangQueue: research
watchNamespace: ml
api:
  port: 8443
  auth: static
  staticTokenSecret: voda-tokens
  adminGroups: [ml-admins]
  jobNamespace: ml
  tlsSecret: voda-tls
  maxBodyBytes: 262144
  ui: false
metrics:
  port: 9090
  serviceMonitor: {enabled: true, interval: 15s, labels: {release: prometheus}}
keepCRD: false
metricsDirClaim: voda-metrics
nodeSelector: {node-role.kubernetes.io/control-plane: ""}
tolerations: [{key: dedicated, operator: Exists}]
podAnnotations: {team: ml-infra}
priorityClassName: system-cluster-critical
logVerbose: true
`

// helmBin is the pinned helm, or the test is skipped.
func helmBin(t *testing.T) string {
	if testing.Short() {
		t.Skip("runs helm; skipped with -short")
	}
	bin, err := testenv.BinDir()
	if err == nil {
		err = testenv.HasHelm(bin)
	}
	if err != nil {
		t.Skip(err)
	}
	return filepath.Join(bin, "helm")
}

func chartDir(t *testing.T) string {
	dir, err := testenv.ChartDir()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// valuesFile writes values into a file for -f.
func valuesFile(t *testing.T, values string) string {
	f := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(f, []byte(values), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func helm(t *testing.T, args ...string) (string, error) {
	cmd := exec.Command(helmBin(t), args...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestChartLint(t *testing.T) {
	for name, values := range map[string]string{"defaults": "", "every option": allOptions} {
		args := []string{"lint", "--strict", chartDir(t)}
		if values != "" {
			args = append(args, "-f", valuesFile(t, values))
		}
		out, err := helm(t, args...)
		if err != nil || !strings.Contains(out, "1 chart(s) linted, 0 chart(s) failed") || strings.Contains(out, "[WARNING]") {
			t.Errorf("%s: %v\n%s", name, err, out)
		}
	}
}

// TestChartRendersWhatItPromises checks the rendered Deployment: two
// replicas with leader election, probes, resources, non-root, read-only
// root filesystem, and every option reaching the controller's flags.
func TestChartRendersWhatItPromises(t *testing.T) {
	render := func(values string) appsv1.Deployment {
		args := []string{"template", "voda", chartDir(t), "-n", "voda-system", "--show-only", "templates/deployment.yaml"}
		if values != "" {
			args = append(args, "-f", valuesFile(t, values))
		}
		out, err := helm(t, args...)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		var d appsv1.Deployment
		if err := yaml.UnmarshalStrict([]byte(out), &d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	d := render("")
	c := d.Spec.Template.Spec.Containers[0]
	sc, psc := c.SecurityContext, d.Spec.Template.Spec.SecurityContext
	switch {
	case *d.Spec.Replicas != 2:
		t.Errorf("replicas %d", *d.Spec.Replicas)
	case c.LivenessProbe == nil || c.ReadinessProbe == nil:
		t.Error("no probes")
	case c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero():
		t.Error("no resource requests")
	case psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot:
		t.Error("may run as root")
	case sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation:
		t.Error("root filesystem writable or privilege escalation allowed")
	case !contains(c.Args, "--leader-elect=true") || !contains(c.Args, "--api-auth=tokenreview") || !contains(c.Args, "--api-namespace=voda-system") || !contains(c.Args, "--ui=true"):
		t.Errorf("args %v", c.Args)
	}
	full := render(allOptions).Spec.Template.Spec.Containers[0]
	for _, want := range []string{"--algorithm=Tiresias", "--rate-limit=10s", "--gpu-types=nvidia-tesla-v100,nvidia-gtx-1080ti",
		"--namespace=ml", "--api-namespace=ml", "--api-addr=:8443", "--api-auth=static", "--api-token-file=/etc/voda/tokens/tokens.csv",
		"--api-admin-groups=ml-admins", "--api-tls-cert-file=/etc/voda/tls/tls.crt", "--metrics-addr=:9090", "--api-max-body-bytes=262144", "--ui=false", "--metrics-dir=/metrics", "--gang-timeout=2m", "--operator-idle=90s", "--verbose",
		"--gang-scheduler=volcano", "--gang-scheduler-name=volcano-gpu", "--gang-queue=research",
		"--accelerator=amd-mi300x=amd.com/gpu", "--accelerator=cpu-pool=cpu",
		"--policy-param=tiresias.thresholds=16h", "--policy-param=tiresias.promote-knob=0",
		"--type-choice-period=1m", "--type-choice-dwell=20m", "--status-sync=10s", "--status-sync-writes=25"} {
		if !contains(full.Args, want) {
			t.Errorf("every option: %s missing from %v", want, full.Args)
		}
	}
	if full.Image != "registry.example/voda:test" {
		t.Errorf("image %s", full.Image)
	}
	// The per-type settings reach the ConfigMap as the controller reads
	// them, parameters included.
	out, err := helm(t, "template", "voda", chartDir(t), "-n", "voda-system", "--show-only", "templates/configmap.yaml", "-f", valuesFile(t, allOptions))
	var cm corev1.ConfigMap
	if err == nil {
		err = yaml.UnmarshalStrict([]byte(out), &cm)
	}
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	set, err := kube.ParseSchedulerSettings(cm.Data["nvidia-tesla-v100"])
	if err == nil {
		_, _, err = set.Resolve(kube.Defaults{Policy: "Tiresias", RateLimit: 10 * time.Second})
	}
	if err != nil || set.Algorithm != "ElasticTiresias" || !slices.Equal(set.PolicyParams, []string{"tiresias.thresholds=8h,32h"}) {
		t.Errorf("the v100 entry %q reads as %+v, %v", cm.Data["nvidia-tesla-v100"], set, err)
	}
	// Bad values fail with a message.
	for values, want := range map[string]string{
		"api: {auth: magic}":  `api.auth is "magic"`,
		"api: {auth: static}": "needs api.staticTokenSecret",
		"api: {auth: static, staticTokenSecret: t, tokenAudiences: [voda]}": "api.tokenAudiences is for api.auth tokenreview",
		"watchNamespace: a\napi: {jobNamespace: b}":                         "must equal watchNamespace",
		"scheduler: {gangScheduler: kueue}":                                 `scheduler.gangScheduler is "kueue": want none, scheduler-plugins or volcano`,
		"scheduler: {gangQueue: research}":                                  "scheduler.gangQueue is only for scheduler.gangScheduler volcano",
		"scheduler: {policyParams: {hesrpt.exponent: 0.2}}":                 "scheduler.policyParams must be a list of NAME=VALUE strings",
		"scheduler: {policyParams: [hesrpt.exponent]}":                      `scheduler.policyParams has "hesrpt.exponent": want NAME=VALUE`,
	} {
		out, err := helm(t, "template", "voda", chartDir(t), "-f", valuesFile(t, values))
		if err == nil || !strings.Contains(out, want) {
			t.Errorf("values %q: %v, want a failure saying %q\n%s", values, err, want, out)
		}
	}
}

// Two replicas or more get a PodDisruptionBudget and prefer different
// nodes; one gets neither, and an affinity of the values replaces the
// chart's.
func TestChartHighAvailability(t *testing.T) {
	for values, want := range map[string][2]bool{
		"":                             {true, true},
		"replicas: 1":                  {false, false},
		"affinity: {nodeAffinity: {}}": {true, false},
	} {
		out, err := helm(t, "template", "voda", chartDir(t), "-f", valuesFile(t, values))
		if err != nil {
			t.Fatalf("values %q: %v\n%s", values, err, out)
		}
		dep, err := helm(t, "template", "voda", chartDir(t), "--show-only", "templates/deployment.yaml", "-f", valuesFile(t, values))
		if err != nil {
			t.Fatal(err)
		}
		if pdb, spread := strings.Contains(out, "kind: PodDisruptionBudget"), strings.Contains(dep, "podAntiAffinity"); pdb != want[0] || spread != want[1] {
			t.Errorf("values %q: budget %v, anti-affinity %v; want %v", values, pdb, spread, want)
		}
	}
}

// api.tokenAudiences reaches the controller's flags.
func TestChartTokenAudiences(t *testing.T) {
	for values, want := range map[string]string{"": "", "api: {tokenAudiences: [voda, voda.example.com]}": "--api-token-audiences=voda,voda.example.com"} {
		out, err := helm(t, "template", "voda", chartDir(t), "--show-only", "templates/deployment.yaml", "-f", valuesFile(t, values))
		if err != nil || (want == "") == strings.Contains(out, "--api-token-audiences") || want != "" && !strings.Contains(out, want) {
			t.Errorf("values %q: %v, want %q in\n%s", values, err, want, out)
		}
	}
}

// The ClusterRole grants PodGroups only of the gang scheduler chosen.
func TestChartRBACFollowsGangScheduler(t *testing.T) {
	for gang, want := range map[string]string{"none": "", "scheduler-plugins": "scheduling.x-k8s.io", "volcano": "scheduling.volcano.sh"} {
		out, err := helm(t, "template", "voda", chartDir(t), "-n", "voda-system", "--show-only", "templates/rbac.yaml", "--set", "scheduler.gangScheduler="+gang)
		if err != nil {
			t.Fatalf("%s: %v\n%s", gang, err, out)
		}
		var rules []rbacv1.PolicyRule
		for _, doc := range strings.Split(out, "\n---") {
			var role rbacv1.ClusterRole
			if err := yaml.Unmarshal([]byte(doc), &role); err != nil {
				t.Fatalf("%s: %v\n%s", gang, err, doc)
			}
			if role.Kind == "ClusterRole" {
				rules = append(rules, role.Rules...)
			}
		}
		var groups []string
		for _, r := range rules {
			if slices.Contains(r.Resources, "podgroups") {
				groups = append(groups, r.APIGroups...)
				if !slices.Equal(r.Verbs, []string{"get", "create", "patch"}) {
					t.Errorf("%s: PodGroup verbs %v", gang, r.Verbs)
				}
			}
		}
		if got := strings.Join(groups, ","); got != want {
			t.Errorf("%s: PodGroups of %q, want %q", gang, got, want)
		}
	}
}

// Both runtimes' children are the controller's to create, scale, suspend
// and delete; nothing more.
func TestChartRBACCoversBothRuntimes(t *testing.T) {
	out, err := helm(t, "template", "voda", chartDir(t), "-n", "voda-system", "--show-only", "templates/rbac.yaml")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	verbs := map[string][]string{}
	for _, doc := range strings.Split(out, "\n---") {
		var role rbacv1.ClusterRole
		if err := yaml.Unmarshal([]byte(doc), &role); err != nil {
			t.Fatal(err)
		}
		for _, r := range role.Rules {
			if slices.Contains(r.APIGroups, "kubeflow.org") {
				for _, res := range r.Resources {
					verbs[res] = r.Verbs
				}
			}
		}
	}
	want := []string{"get", "list", "watch", "create", "patch", "delete"}
	for _, res := range []string{"mpijobs", "pytorchjobs"} {
		if !slices.Equal(verbs[res], want) {
			t.Errorf("%s: verbs %v, want %v", res, verbs[res], want)
		}
	}
	if len(verbs) != 2 {
		t.Errorf("kubeflow.org resources %v, want only mpijobs and pytorchjobs", verbs)
	}
}

func contains(list []string, s string) bool { return slices.Contains(list, s) }

// serviceMonitorCRD stands in for the Prometheus Operator's CRD, which is
// not built here: it accepts any ServiceMonitor, so the chart's is checked
// for being well-formed Kubernetes, not against the operator's schema.
const serviceMonitorCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: servicemonitors.monitoring.coreos.com
spec:
  group: monitoring.coreos.com
  names: {kind: ServiceMonitor, listKind: ServiceMonitorList, plural: servicemonitors, singular: servicemonitor}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

// TestIntegrationChart installs the chart, runs a job under it, upgrades
// the chart while the job runs, and applies the chart with every option on.
func TestIntegrationChart(t *testing.T) {
	env := testenv.New(t, testenv.Options{})
	ctx := context.Background()
	for _, ns := range []string{"voda-system", "ml"} {
		if err := env.CreateNamespace(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	nodes, err := env.CreateGPUNodes(ctx, testenv.NodeSpec{GPUType: "chart-gpu", Count: 2, GPUs: 4})
	if err != nil {
		t.Fatal(err)
	}
	// docs/install.md labels GPU nodes so.
	for _, n := range nodes {
		if out, err := env.Kubectl(ctx, nil, "label", "node", n, "vodascheduler/accelerator=chart-gpu", "--overwrite"); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	k8s, err := client.New(env.Config, client.Options{Scheme: kube.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	dir := chartDir(t)

	// The previous version of the chart: this chart, packaged as 0.0.1.
	prev := t.TempDir()
	if out, err := env.Helm(ctx, "package", dir, "--version", "0.0.1", "--app-version", "0.0.1", "-d", prev); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	prevChart := filepath.Join(prev, "voda-0.0.1.tgz")
	rendered, err := env.Helm(ctx, "template", "voda", prevChart, "-n", "voda-system", "--kube-version", "1.34.4")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := env.Kubectl(ctx, rendered, "apply", "--dry-run=server", "--server-side", "-f", "-"); err != nil {
		t.Fatalf("server-side dry run of the default chart: %v\n%s", err, out)
	}
	// The control plane has the CRDs already, as a cluster does where they
	// were applied by hand: the release adopts them (docs/install.md).
	for _, crd := range []string{"trainingjobs.vodascheduler.io", "clusterqueues.vodascheduler.io", "localqueues.vodascheduler.io"} {
		for _, args := range [][]string{
			{"annotate", "crd", crd, "meta.helm.sh/release-name=voda", "meta.helm.sh/release-namespace=voda-system"},
			{"label", "crd", crd, "app.kubernetes.io/managed-by=Helm"},
		} {
			if out, err := env.Kubectl(ctx, nil, args...); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
		}
	}
	if out, err := env.Helm(ctx, "install", "voda", prevChart, "-n", "voda-system", "--wait", "--timeout", "2m"); err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	var dep appsv1.Deployment
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: "voda-system", Name: "voda"}, &dep); err != nil || dep.Status.ReadyReplicas != 2 {
		t.Fatalf("deployment: %v, %d ready", err, dep.Status.ReadyReplicas)
	}

	// A job runs, scheduled by a controller with the release's identity
	// (the Deployment's pods are kwok's and run nothing).
	// docs/install.md: a token for the API (here, the release's own
	// ServiceAccount, which also runs the controller below).
	if out, err := env.Kubectl(ctx, nil, "create", "token", "voda", "-n", "voda-system"); err != nil || len(out) < 100 {
		t.Fatalf("kubectl create token: %v\n%s", err, out)
	}
	cfg, err := env.ServiceAccountConfig(ctx, "voda-system", "voda")
	if err != nil {
		t.Fatal(err)
	}
	mgr, _, err := kube.NewManager(cfg, kube.ManagerOptions{
		Options:     kube.Options{RateLimit: 300 * time.Millisecond, SyncPeriod: time.Second, ConfigNamespace: "voda-system", Log: funcr.New(func(string, string) {}, funcr.Options{})},
		MetricsAddr: "0", HealthAddr: "0", LeaderElect: true, LeaderElectionNamespace: "voda-system", LeaderElectionID: "voda",
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(runCtx) }()
	t.Cleanup(func() { cancel(); <-done })
	tj := &v1alpha1.TrainingJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: "voda-system", Name: "steady"},
		Spec: v1alpha1.TrainingJobSpec{GPUType: "chart-gpu", MinWorkers: 2, MaxWorkers: 4,
			Template: v1alpha1.TrainingJobTemplate{MPIJob: &v1alpha1.MPIJobTemplate{
				Launcher: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "l", Image: "busybox"}}}},
				Worker:   corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "w", Image: "busybox"}}}},
			}}},
	}
	if err := k8s.Create(ctx, tj); err != nil {
		t.Fatal(err)
	}
	before := waitRunning(t, k8s, 4)

	// A setting changed at runtime (as voda set scheduler writes it) in the
	// ConfigMap the release made.
	var cm corev1.ConfigMap
	cmKey := types.NamespacedName{Namespace: "voda-system", Name: "voda-schedulers"}
	if err := k8s.Get(ctx, cmKey, &cm); err != nil {
		t.Fatalf("the release's ConfigMap: %v", err)
	}
	cm.Data = map[string]string{"chart-gpu": "rateLimit: 1s\n"}
	if err := k8s.Update(ctx, &cm); err != nil {
		t.Fatal(err)
	}

	// Upgrade to this chart with changed values: the job is untouched, the
	// runtime setting stays, and the values seed only a type without one
	// (and say which they did not apply).
	out, err := env.Helm(ctx, "upgrade", "voda", dir, "-n", "voda-system", "--wait", "--timeout", "2m",
		"--set", "scheduler.rateLimit=10s", "--set-json", `scheduler.perGPUType={"chart-gpu":{"rateLimit":"5s"},"other-gpu":{"algorithm":"FIFO"}}`)
	if err != nil {
		t.Fatalf("helm upgrade: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "scheduler.perGPUType.chart-gpu was not applied") {
		t.Errorf("the upgrade's notes do not say chart-gpu's values were not applied:\n%s", out)
	}
	if err := k8s.Get(ctx, cmKey, &cm); err != nil || cm.Data["chart-gpu"] != "rateLimit: 1s\n" || cm.Data["other-gpu"] != "algorithm: FIFO" {
		t.Errorf("ConfigMap after the upgrade: %v %q", err, cm.Data)
	}
	time.Sleep(3 * time.Second) // a few rounds of the controller
	after := waitRunning(t, k8s, 4)
	if before != after {
		t.Errorf("the running job changed across the upgrade:\nbefore %s\nafter  %s", before, after)
	}
	if out, err := env.Helm(ctx, "history", "voda", "-n", "voda-system"); err != nil || !strings.Contains(string(out), "voda-0.0.1") || !strings.Contains(string(out), "voda-0.1.0") {
		t.Errorf("history: %v\n%s", err, out)
	}

	// Uninstalling keeps the CRD, and with it the jobs.
	if out, err := env.Helm(ctx, "uninstall", "voda", "-n", "voda-system", "--wait"); err != nil {
		t.Fatalf("helm uninstall: %v\n%s", err, out)
	}
	if err := k8s.Get(ctx, cmKey, &cm); err != nil || cm.Data["chart-gpu"] != "rateLimit: 1s\n" {
		t.Errorf("the scheduler settings did not survive helm uninstall: %v %q", err, cm.Data)
	}
	var kept v1alpha1.TrainingJob
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: "voda-system", Name: "steady"}, &kept); err != nil {
		t.Errorf("the job did not survive helm uninstall: %v", err)
	}
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: "voda-system", Name: "voda"}, &appsv1.Deployment{}); err == nil {
		t.Error("the Deployment survived helm uninstall")
	}

	// A gang scheduler whose PodGroup CRD is missing fails the install.
	// So it does into a namespace the install would create (the checks
	// once looked the release's namespace up to tell a cluster from helm
	// template, and were skipped there).
	for _, args := range [][]string{{"-n", "voda-system"}, {"-n", "not-yet", "--create-namespace"}} {
		out, err := env.Helm(ctx, append([]string{"install", "voda-gang", dir, "--dry-run=server", "--set", "scheduler.gangScheduler=volcano"}, args...)...)
		if err == nil || !strings.Contains(err.Error(), "its PodGroup CRD (podgroups.scheduling.volcano.sh) is missing") {
			t.Errorf("install %v with a missing Volcano: %v\n%s", args, err, out)
		}
	}

	// Every option on: accepted by a server-side dry run, then applied.
	if err := env.ApplyCRDs(ctx, []byte(serviceMonitorCRD)); err != nil {
		t.Fatal(err)
	}
	rendered, err = env.Helm(ctx, "template", "voda-full", dir, "-n", "ml", "--kube-version", "1.34.4", "-f", valuesFile(t, allOptions))
	if err != nil {
		t.Fatal(err)
	}
	for _, extra := range [][]string{{"--dry-run=server"}, nil} {
		args := append([]string{"apply", "--server-side", "--force-conflicts", "-f", "-"}, extra...)
		if out, err := env.Kubectl(ctx, rendered, args...); err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
	}
	out, err = env.Kubectl(ctx, nil, "get", "servicemonitor/voda-full", "configmap/voda-schedulers", "deployment/voda-full", "-n", "ml", "-o", "name")
	if err != nil || strings.Count(string(out), "\n") != 3 {
		t.Errorf("every-option objects: %v\n%s", err, out)
	}
}

// waitRunning waits until the job runs on n workers and returns what must
// not change while it keeps running: its UID, start time, counters of
// restarts, and its MPIJob's and worker pods' UIDs.
func waitRunning(t *testing.T, c client.Client, n int32) string {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(time.Minute)
	for {
		var tj v1alpha1.TrainingJob
		err := c.Get(ctx, types.NamespacedName{Namespace: "voda-system", Name: "steady"}, &tj)
		var pods corev1.PodList
		if err == nil {
			err = c.List(ctx, &pods, client.InNamespace("voda-system"), client.MatchingLabels{v1alpha1.JobLabel: "steady"})
		}
		running, launcher := 0, false
		var uids []string
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
				// The launcher starts once every worker runs.
				launcher = launcher || strings.Contains(p.Name, "-launcher")
			}
			uids = append(uids, p.Name+"="+string(p.UID))
		}
		if err == nil && tj.Status.Phase == v1alpha1.PhaseRunning && tj.Status.Workers == n && running == int(n)+1 && launcher {
			start := ""
			if tj.Status.LastStartTime != nil {
				start = tj.Status.LastStartTime.String()
			}
			slices.Sort(uids)
			return fmt.Sprintf("job %s started %s restarts %d rescales %d pods %v", tj.UID, start, tj.Status.Restarts, tj.Status.Rescales, uids)
		}
		if time.Now().After(deadline) {
			t.Fatalf("job not running on %d workers: %v, phase %s, workers %d, %d pods running", n, err, tj.Status.Phase, tj.Status.Workers, running)
		}
		time.Sleep(300 * time.Millisecond)
	}
}
