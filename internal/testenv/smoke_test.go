package testenv

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// waitTimeout bounds every wait in these tests; each normally takes seconds.
const waitTimeout = 90 * time.Second

// The integration tests' names contain "Integration" so that
// `make test-integration` can select them; -short skips them.

func TestIntegrationMPIJobLifecycle(t *testing.T) {
	env := New(t, Options{})
	ctx := t.Context()
	if _, err := env.CreateGPUNodes(ctx, NodeSpec{GPUType: "nvidia-tesla-v100", Count: 2, GPUs: 4}); err != nil {
		t.Fatal(err)
	}
	const ns = "smoke"
	if err := env.CreateNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	mpijobs := env.Dynamic.Resource(MPIJobGVR).Namespace(ns)
	if _, err := mpijobs.Create(ctx, mpiJob(ns, "pi", 2, 2), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create MPIJob: %v", err)
	}
	workers := "training.kubeflow.org/job-name=pi,training.kubeflow.org/job-role=worker"
	waitRunningPods(t, env, ns, workers, 2)

	patch(t, env, ns, "pi", `{"spec":{"mpiReplicaSpecs":{"Worker":{"replicas":4}}}}`)
	waitRunningPods(t, env, ns, workers, 4)
	waitFor(t, "discover_hosts.sh to list 4 workers", func(ctx context.Context) (bool, error) {
		cm, err := env.Client.CoreV1().ConfigMaps(ns).Get(ctx, "pi-config", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		script := cm.Data["discover_hosts.sh"]
		if got := strings.Count(script, "pi-worker-"); got != 4 {
			return false, fmt.Errorf("discover_hosts.sh lists %d workers, want 4:\n%s", got, script)
		}
		t.Logf("discover_hosts.sh:\n%s", script)
		return true, nil
	})

	patch(t, env, ns, "pi", `{"spec":{"runPolicy":{"suspend":true}}}`)
	waitFor(t, "every pod of the suspended job to be gone", func(ctx context.Context) (bool, error) {
		pods, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "training.kubeflow.org/job-name=pi"})
		if err != nil {
			return false, err
		}
		if n := len(pods.Items); n != 0 {
			return false, fmt.Errorf("%d pods left", n)
		}
		return true, nil
	})

	patch(t, env, ns, "pi", `{"spec":{"runPolicy":{"suspend":false}}}`)
	waitRunningPods(t, env, ns, workers, 4)
	launcher := waitRunningPods(t, env, ns, "training.kubeflow.org/job-name=pi,training.kubeflow.org/job-role=launcher", 1)[0]
	// The launcher runs until told otherwise; let it finish now.
	ann := fmt.Sprintf(`{"metadata":{"annotations":{%q:"1s"}}}`, CompleteAfterAnnotation)
	if _, err := env.Client.CoreV1().Pods(ns).Patch(ctx, launcher.Name, types.MergePatchType, []byte(ann), metav1.PatchOptions{}); err != nil {
		t.Fatalf("annotate launcher: %v", err)
	}
	waitFor(t, "the MPIJob to succeed", func(ctx context.Context) (bool, error) {
		job, err := mpijobs.Get(ctx, "pi", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if !hasCondition(job, "Succeeded") {
			return false, fmt.Errorf("conditions: %v", conditions(job))
		}
		t.Logf("MPIJob conditions: %v", conditions(job))
		return true, nil
	})
}

func TestIntegrationPods(t *testing.T) {
	env := New(t, Options{NoMPIOperator: true})
	ctx := t.Context()
	nodes, err := env.CreateGPUNodes(ctx,
		NodeSpec{GPUType: "nvidia-tesla-v100", Count: 2, GPUs: 4},
		NodeSpec{GPUType: "nvidia-gtx-1080ti", Count: 1, GPUs: 8})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range nodes {
		n, err := env.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := n.Status.Allocatable[GPUResource]; got.Value() != 4 && got.Value() != 8 {
			t.Errorf("node %s: allocatable %s = %s, want 4 or 8", name, GPUResource, got.String())
		}
	}

	t.Run("a gated pod lands on the node its update selects", func(t *testing.T) {
		pod := gpuPod("gated", 1)
		pod.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "vodascheduler/placement"}}
		pods := env.Client.CoreV1().Pods("default")
		if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the scheduler to see the gate", func(ctx context.Context) (bool, error) {
			p, err := pods.Get(ctx, "gated", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonSchedulingGated {
					return true, nil
				}
			}
			return false, fmt.Errorf("conditions %v", p.Status.Conditions)
		})
		target := nodes[1]
		p, err := pods.Get(ctx, "gated", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: target}
		p.Spec.SchedulingGates = nil
		if _, err := pods.Update(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("select node and ungate: %v", err)
		}
		got := waitPodPhase(t, env, "default", "gated", corev1.PodRunning)
		if got.Spec.NodeName != target {
			t.Errorf("pod runs on %s, want %s", got.Spec.NodeName, target)
		}
	})

	t.Run("kwok ends pods as their annotations say", func(t *testing.T) {
		for name, tc := range map[string]struct {
			annotations map[string]string
			want        corev1.PodPhase
		}{
			"done": {map[string]string{CompleteAfterAnnotation: "2s"}, corev1.PodSucceeded},
			"fail": {map[string]string{CompleteAfterAnnotation: "1s", ExitAnnotation: "fail"}, corev1.PodFailed},
		} {
			pod := gpuPod(name, 1)
			pod.Annotations = tc.annotations
			if _, err := env.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitPodPhase(t, env, "default", name, tc.want)
		}
	})
}

func TestIntegrationStopEndsEveryProcess(t *testing.T) {
	env := New(t, Options{NoMPIOperator: true})
	env.mu.Lock()
	procs := append([]*process(nil), env.procs...)
	env.mu.Unlock()
	if len(procs) != 5 {
		t.Fatalf("started %d processes, want 5 (etcd, apiserver, controller manager, scheduler, kwok)", len(procs))
	}
	env.Stop()
	for _, p := range procs {
		if dead, _ := p.exited(); !dead {
			t.Errorf("%s still running after Stop", p.name)
		}
		if left := GroupMembers(p.cmd.Process.Pid); len(left) > 0 {
			t.Errorf("%s's process group still holds %v after Stop", p.name, left)
		}
	}
}

func mpiJob(ns, name string, workers, gpus int) *unstructured.Unstructured {
	container := func(name string, gpus int) map[string]any {
		c := map[string]any{"name": name, "image": "mpioperator/mpi-pi:openmpi"}
		if gpus > 0 {
			c["resources"] = map[string]any{"limits": map[string]any{string(GPUResource): fmt.Sprint(gpus)}}
		}
		return c
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubeflow.org/v2beta1",
		"kind":       "MPIJob",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"slotsPerWorker": int64(gpus),
			"runPolicy":      map[string]any{"cleanPodPolicy": "Running"},
			"mpiReplicaSpecs": map[string]any{
				"Launcher": map[string]any{
					"replicas": int64(1),
					"template": map[string]any{"spec": map[string]any{
						"containers": []any{container("launcher", 0)},
					}},
				},
				"Worker": map[string]any{
					"replicas": int64(workers),
					"template": map[string]any{"spec": map[string]any{
						"containers": []any{container("worker", gpus)},
					}},
				},
			},
		},
	}}
}

func gpuPod(name string, gpus int64) *corev1.Pod {
	q := *resource.NewQuantity(gpus, resource.DecimalSI)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:      "train",
				Image:     "train",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{GPUResource: q}},
			}},
			RestartPolicy: corev1.RestartPolicyNever,
		},
	}
}

func waitFor(t *testing.T, what string, check func(context.Context) (bool, error)) {
	t.Helper()
	if err := PollUntil(t.Context(), waitTimeout, what, check); err != nil {
		t.Fatal(err)
	}
}

// waitRunningPods waits until exactly n pods match selector and all run.
func waitRunningPods(t *testing.T, env *Env, ns, selector string, n int) []corev1.Pod {
	t.Helper()
	var running []corev1.Pod
	waitFor(t, fmt.Sprintf("%d running pods %s", n, selector), func(ctx context.Context) (bool, error) {
		pods, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err
		}
		running = running[:0]
		var phases []string
		for _, p := range pods.Items {
			phases = append(phases, p.Name+":"+string(p.Status.Phase))
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				running = append(running, p)
			}
		}
		if len(running) != n || len(pods.Items) != n {
			return false, fmt.Errorf("pods %v", phases)
		}
		return true, nil
	})
	return running
}

func waitPodPhase(t *testing.T, env *Env, ns, name string, want corev1.PodPhase) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	waitFor(t, fmt.Sprintf("pod %s %s", name, want), func(ctx context.Context) (bool, error) {
		p, err := env.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pod = p
		if p.Status.Phase != want {
			return false, fmt.Errorf("phase %s, node %q", p.Status.Phase, p.Spec.NodeName)
		}
		return true, nil
	})
	return pod
}

func patch(t *testing.T, env *Env, ns, name, body string) {
	t.Helper()
	_, err := env.Dynamic.Resource(MPIJobGVR).Namespace(ns).Patch(t.Context(), name, types.MergePatchType, []byte(body), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("patch MPIJob %s with %s: %v", name, body, err)
	}
}

func conditions(obj *unstructured.Unstructured) []string {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	var out []string
	for _, c := range conds {
		m, _ := c.(map[string]any)
		out = append(out, fmt.Sprintf("%v=%v", m["type"], m["status"]))
	}
	return out
}

func hasCondition(obj *unstructured.Unstructured, typ string) bool {
	for _, c := range conditions(obj) {
		if c == typ+"=True" {
			return true
		}
	}
	return false
}
