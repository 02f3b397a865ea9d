package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Labels and resources of the fake GPU nodes.
const (
	// AcceleratorLabel carries a node's GPU type, as on a real Voda cluster.
	AcceleratorLabel = "vodascheduler/accelerator"
	// GPUResource is the extended resource the NVIDIA device plugin advertises.
	GPUResource corev1.ResourceName = "nvidia.com/gpu"
)

// MPIJobGVR is the resource of Kubeflow MPIJobs served once the CRD is applied.
var MPIJobGVR = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v2beta1", Resource: "mpijobs"}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// CreateNamespace creates a namespace (if missing) and waits for its default
// service account.
func (e *Env) CreateNamespace(ctx context.Context, name string) error {
	_, err := e.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	return e.WaitServiceAccount(ctx, name)
}

// applyMPIJobCRD creates the MPIJob CRD copied from the pinned mpi-operator
// module and waits until it is Established.
func (e *Env) applyMPIJobCRD(ctx context.Context) error {
	return e.applyCRDFile(ctx, "kubeflow.org_mpijobs.yaml")
}

// applyCRDFile applies a CRD file that hack/tools/build.sh copied next to
// the binaries.
func (e *Env) applyCRDFile(ctx context.Context, name string) error {
	data, err := os.ReadFile(filepath.Join(e.bin, name))
	if err != nil {
		return err
	}
	return e.ApplyCRDs(ctx, data)
}

// ApplyCRDs creates the CustomResourceDefinitions in a YAML stream (existing
// ones are left alone) and waits until every one is Established.
func (e *Env) ApplyCRDs(ctx context.Context, data []byte) error {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var names []string
	for {
		var obj unstructured.Unstructured
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return fmt.Errorf("decode CRD: %w", err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		if _, err := e.Dynamic.Resource(crdGVR).Create(ctx, &obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create CRD %s: %w", obj.GetName(), err)
		}
		names = append(names, obj.GetName())
	}
	for _, name := range names {
		err := poll(ctx, readyTimeout, "CRD "+name+" Established", nil, func(ctx context.Context) (bool, error) {
			crd, err := e.Dynamic.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
			for _, c := range conds {
				m, _ := c.(map[string]any)
				if m["type"] == "Established" && m["status"] == "True" {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// NodeSpec describes a group of identical fake GPU nodes.
type NodeSpec struct {
	GPUType string // the vodascheduler/accelerator label, e.g. nvidia-tesla-v100
	Count   int    // how many nodes
	GPUs    int    // units of Resource per node
	// Resource is what GPUs counts: empty means nvidia.com/gpu; an
	// extended resource (amd.com/gpu, nvidia.com/mig-1g.10gb) is advertised
	// instead of it; cpu makes the node's CPU cores GPUs (no GPUs then).
	Resource corev1.ResourceName
}

// CreateGPUNodes creates the nodes kwok fakes, named <type>-<i>, and waits
// until they are Ready and untainted. It returns their names.
func (e *Env) CreateGPUNodes(ctx context.Context, specs ...NodeSpec) ([]string, error) {
	var names []string
	for _, s := range specs {
		for i := range s.Count {
			name := s.GPUType + "-" + strconv.Itoa(i)
			if err := e.createNode(ctx, name, s); err != nil {
				return nil, err
			}
			names = append(names, name)
		}
	}
	return names, e.WaitNodesReady(ctx, names...)
}

// CreateGPUNode creates one node named name as CreateGPUNodes would (Count
// is ignored) and waits until it is Ready: a node that joins later, e.g. to
// replace one that was deleted.
func (e *Env) CreateGPUNode(ctx context.Context, name string, s NodeSpec) error {
	if err := e.createNode(ctx, name, s); err != nil {
		return err
	}
	return e.WaitNodesReady(ctx, name)
}

func (e *Env) createNode(ctx context.Context, name string, s NodeSpec) error {
	unit := s.Resource
	if unit == "" {
		unit = GPUResource
	}
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("64"),
		corev1.ResourceMemory: resource.MustParse("512Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
		unit:                  *resource.NewQuantity(int64(s.GPUs), resource.DecimalSI),
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{kwokNodeAnnotation: kwokNodeValue},
			Labels: map[string]string{
				AcceleratorLabel:         s.GPUType,
				corev1.LabelHostname:     name,
				corev1.LabelOSStable:     "linux",
				corev1.LabelArchStable:   "amd64",
				"type":                   "kwok",
				"node.kubernetes.io/gpu": "true",
			},
		},
		// kwok keeps the capacity it finds and fills in conditions, addresses and nodeInfo.
		Status: corev1.NodeStatus{Capacity: res, Allocatable: res},
	}
	if _, err := e.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create node %s: %w", name, err)
	}
	return nil
}

// WaitNodesReady waits until every named node is Ready and carries none of
// the node lifecycle controller's not-ready or unreachable taints.
func (e *Env) WaitNodesReady(ctx context.Context, names ...string) error {
	for _, name := range names {
		err := poll(ctx, readyTimeout, "node "+name+" Ready", nil, func(ctx context.Context) (bool, error) {
			n, err := e.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return nodeReady(n), nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func nodeReady(n *corev1.Node) bool {
	ready := false
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			ready = true
		}
	}
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			return false
		}
	}
	return ready
}
