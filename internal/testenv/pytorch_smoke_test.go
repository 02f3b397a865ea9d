package testenv

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// PyTorchJobGVR is the training-operator's PyTorchJob resource.
var PyTorchJobGVR = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "pytorchjobs"}

// The training-operator runs elastic PyTorchJobs here as Voda needs: pods
// per worker replica with torchrun's elastic settings, replicas that can
// change, suspension that removes the pods and resumption that brings them
// back, and a Succeeded condition once a worker completes.
func TestIntegrationPyTorchJobLifecycle(t *testing.T) {
	env := New(t, Options{})
	ctx := t.Context()
	if _, err := env.CreateGPUNodes(ctx, NodeSpec{GPUType: "nvidia-tesla-v100", Count: 2, GPUs: 4}); err != nil {
		t.Fatal(err)
	}
	const ns = "pytorch-smoke"
	if err := env.CreateNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	jobs := env.Dynamic.Resource(PyTorchJobGVR).Namespace(ns)
	if _, err := jobs.Create(ctx, pytorchJob(ns, "ddp", 2, 2), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create PyTorchJob: %v", err)
	}
	workers := "training.kubeflow.org/job-name=ddp,training.kubeflow.org/replica-type=worker"
	pods := waitRunningPods(t, env, ns, workers, 2)
	env0 := map[string]string{}
	for _, e := range pods[0].Spec.Containers[0].Env {
		env0[e.Name] = e.Value
	}
	if env0["PET_NNODES"] != "1:3" || env0["PET_NPROC_PER_NODE"] != "2" || env0["PET_RDZV_BACKEND"] != "c10d" {
		t.Errorf("torchrun's environment %v, want PET_NNODES=1:3, PET_NPROC_PER_NODE=2, c10d", env0)
	}
	patchPyTorch(t, env, ns, "ddp", `{"spec":{"pytorchReplicaSpecs":{"Worker":{"replicas":3}}}}`)
	waitRunningPods(t, env, ns, workers, 3)
	patchPyTorch(t, env, ns, "ddp", `{"spec":{"runPolicy":{"suspend":true}}}`)
	waitFor(t, "every pod of the suspended job to be gone", func(ctx context.Context) (bool, error) {
		list, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: workers})
		if err != nil {
			return false, err
		}
		if len(list.Items) > 0 {
			return false, fmt.Errorf("%d pods left", len(list.Items))
		}
		return true, nil
	})
	patchPyTorch(t, env, ns, "ddp", `{"spec":{"runPolicy":{"suspend":false},"pytorchReplicaSpecs":{"Worker":{"replicas":1}}}}`)
	pods = waitRunningPods(t, env, ns, workers, 1)
	p := pods[0]
	patchBody := []byte(`{"metadata":{"annotations":{"` + CompleteAfterAnnotation + `":"1s"}}}`)
	if _, err := env.Client.CoreV1().Pods(ns).Patch(ctx, p.Name, types.MergePatchType, patchBody, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the PyTorchJob to succeed", func(ctx context.Context) (bool, error) {
		job, err := jobs.Get(ctx, "ddp", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if !hasCondition(job, "Succeeded") {
			return false, fmt.Errorf("conditions %v", conditions(job))
		}
		return true, nil
	})
}

func patchPyTorch(t *testing.T, env *Env, ns, name, body string) {
	t.Helper()
	_, err := env.Dynamic.Resource(PyTorchJobGVR).Namespace(ns).Patch(t.Context(), name, types.MergePatchType, []byte(body), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("patch PyTorchJob %s with %s: %v", name, body, err)
	}
}

// pytorchJob is an elastic PyTorchJob of workers of gpus GPUs each, 1 to
// workers+1 nodes.
func pytorchJob(ns, name string, workers, gpus int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubeflow.org/v1",
		"kind":       "PyTorchJob",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"elasticPolicy": map[string]any{"rdzvBackend": "c10d", "minReplicas": int64(1), "maxReplicas": int64(workers + 1), "maxRestarts": int64(10)},
			"nprocPerNode":  fmt.Sprint(gpus),
			"pytorchReplicaSpecs": map[string]any{
				"Worker": map[string]any{
					"replicas":      int64(workers),
					"restartPolicy": "ExitCode",
					"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{
						"name": "pytorch", "image": "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime", "command": []any{"torchrun", "train.py"},
						"resources": map[string]any{"limits": map[string]any{string(corev1.ResourceName(GPUResource)): fmt.Sprint(gpus)}},
					}}}},
				},
			},
		},
	}}
}
