package kube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestCannotRun(t *testing.T) {
	q := resource.MustParse
	node := func(alloc corev1.ResourceList, taints ...corev1.Taint) *corev1.Node {
		return &corev1.Node{Spec: corev1.NodeSpec{Taints: taints}, Status: corev1.NodeStatus{Allocatable: alloc}}
	}
	gpuNode := corev1.ResourceList{"nvidia.com/gpu": q("8"), corev1.ResourceCPU: q("32"), corev1.ResourceMemory: q("256Gi")}
	worker := &corev1.PodSpec{
		InitContainers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: q("100Gi")}}}},
		Containers: []corev1.Container{
			{Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: q("8"), corev1.ResourceMemory: q("64Gi")}}},
			{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("500m")}}},
		},
	}
	if launcher := workerRequests(worker, "", 0); len(launcher) != 2 {
		t.Errorf("a launcher's requests: got %v, want cpu and memory only", launcher)
	}
	want := workerRequests(worker, "nvidia.com/gpu", 2)
	for r, v := range map[corev1.ResourceName]string{"nvidia.com/gpu": "2", corev1.ResourceCPU: "8500m", corev1.ResourceMemory: "100Gi"} {
		if got := want[r]; got.Cmp(q(v)) != 0 {
			t.Errorf("worker asks for %s of %s, want %s", got.String(), r, v)
		}
	}
	team := corev1.Taint{Key: "team", Value: "b", Effect: corev1.TaintEffectNoExecute}
	for name, c := range map[string]struct {
		node *corev1.Node
		tols []corev1.Toleration
		sel  map[string]string
		want string
	}{
		"a node that fits":                {node(gpuNode), nil, nil, ""},
		"a resource the node lacks":       {node(corev1.ResourceList{"nvidia.com/gpu": q("8")}), nil, nil, "offer no cpu"},
		"not enough of a resource":        {node(corev1.ResourceList{"nvidia.com/gpu": q("8"), corev1.ResourceCPU: q("32"), corev1.ResourceMemory: q("64Gi")}), nil, nil, "offer less memory than a worker asks for (100Gi)"},
		"a taint not tolerated":           {node(gpuNode, team), nil, nil, "have taint team=b:NoExecute, which the workers do not tolerate"},
		"a taint tolerated":               {node(gpuNode, team), []corev1.Toleration{{Key: "team", Operator: corev1.TolerationOpEqual, Value: "b"}}, nil, ""},
		"a soft taint":                    {node(gpuNode, corev1.Taint{Key: "x", Effect: corev1.TaintEffectPreferNoSchedule}), nil, nil, ""},
		"a passing condition of the node": {node(gpuNode, corev1.Taint{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule}), nil, nil, ""},
		"a label the selector wants":      {node(gpuNode), nil, map[string]string{"pool": "launchers"}, "lack the label pool=launchers"},
	} {
		spec := &corev1.PodSpec{Tolerations: c.tols, NodeSelector: c.sel}
		if got := cannotRun(c.node, want, spec); got != c.want {
			t.Errorf("%s: got %q, want %q", name, got, c.want)
		}
	}
}
