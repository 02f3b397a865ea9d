package kube

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
)

// What the cache keeps of a child reads back as the whole child does —
// its state, its batch sizes, its replica roles, its owner — and holds
// none of the pod templates; the child read from the API server is not
// changed.
func TestSlimChildReadsAsWhole(t *testing.T) {
	pod := func(c string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: c, Image: "img",
			Command: []string{"python", "train.py", "--epochs", "90"}}}}}
	}
	tj := &v1alpha1.TrainingJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "job", UID: "uid-1"},
		Spec: v1alpha1.TrainingJobSpec{MinWorkers: 1, MaxWorkers: 4, GPUsPerWorker: 1, Template: v1alpha1.TrainingJobTemplate{
			MPIJob: &v1alpha1.MPIJobTemplate{Launcher: pod("launcher"), Worker: pod("worker")}}},
	}
	for _, rt := range runtimes {
		t.Run(rt.kind, func(t *testing.T) {
			tj := tj.DeepCopy()
			if rt == pytorchRuntime {
				tj.Spec.Template = v1alpha1.TrainingJobTemplate{PyTorchJob: &v1alpha1.PyTorchJobTemplate{Worker: pod(v1alpha1.PyTorchContainer)}}
			}
			for _, state := range []struct {
				sizes    string
				suspend  bool
				conds    []any
				recorded bool // the operator has recorded the suspension
			}{
				{},
				{sizes: "1:256:256:1 2:512:256:1", suspend: true},
				{conds: []any{
					map[string]any{"type": "Created", "status": "True", "reason": "MPIJobCreated", "message": "created", "lastTransitionTime": "2026-11-27T00:00:00Z"},
					map[string]any{"type": "Succeeded", "status": "True", "reason": "Done", "message": "job succeeded"},
				}},
				{conds: []any{map[string]any{"type": "Failed", "status": "True", "message": "worker 2 exited"}}},
				{suspend: true, recorded: true, conds: []any{
					map[string]any{"type": "Running", "status": "False", "reason": "MPIJobSuspended", "message": "MPIJob ns/job is suspended."},
					map[string]any{"type": "Suspended", "status": "True", "reason": "MPIJobSuspended", "message": "MPIJob suspended"},
				}},
				{conds: []any{map[string]any{"type": "Suspended", "status": "False", "reason": "MPIJobResumed", "message": "MPIJob resumed"}}},
			} {
				child, err := rt.build(tj, 3, Gang{}, "nvidia.com/gpu", []corev1.EnvVar{{Name: "VODA_PROGRESS_URL", Value: "http://voda"}})
				if err != nil {
					t.Fatal(err)
				}
				child.SetName(tj.Name)
				child.SetNamespace(tj.Namespace)
				child.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "vodascheduler.io/v1alpha1", Kind: "TrainingJob", Name: tj.Name, UID: tj.UID, Controller: new(true)}})
				child.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "voda", Operation: metav1.ManagedFieldsOperationUpdate}})
				if state.sizes != "" {
					if err := rt.annotate(child, state.sizes); err != nil {
						t.Fatal(err)
					}
				}
				if state.suspend {
					if err := unstructured.SetNestedField(child.Object, true, "spec", "runPolicy", "suspend"); err != nil {
						t.Fatal(err)
					}
				}
				if state.conds != nil {
					child.Object["status"] = map[string]any{"conditions": state.conds, "startTime": "2026-11-27T00:00:00Z"}
				}
				before, _ := json.Marshal(child.Object)

				got, err := slimCached(child)
				if err != nil {
					t.Fatal(err)
				}
				slim := got.(*unstructured.Unstructured)
				if after, _ := json.Marshal(child.Object); string(after) != string(before) {
					t.Fatalf("the child read was changed:\n%s\n%s", before, after)
				}
				if a, b := rt.read(slim), rt.read(child); a != b {
					t.Errorf("read %+v, the whole child %+v", a, b)
				}
				if got := rt.read(slim).recorded; got != state.recorded {
					t.Errorf("suspension recorded: %t, want %t (conditions %v)", got, state.recorded, state.conds)
				}
				if a, b := rt.templatesAnnotation(slim, "x"), rt.templatesAnnotation(child, "x"); !reflect.DeepEqual(a, b) {
					t.Errorf("roles %v, the whole child's %v", a, b)
				}
				var a, b batchState
				a.recover(tj, rt, slim)
				b.recover(tj, rt, child)
				if a.sizes != b.sizes || a.sizes != state.sizes {
					t.Errorf("batch sizes %q, the whole child's %q, written %q", a.sizes, b.sizes, state.sizes)
				}
				if ref, want := metav1.GetControllerOf(slim), metav1.GetControllerOf(child); ref == nil || ref.UID != want.UID {
					t.Errorf("controller %v, want %v", ref, want)
				}
				if slim.GroupVersionKind() != rt.gvk || slim.GetName() != tj.Name || slim.GetNamespace() != tj.Namespace {
					t.Errorf("identity %v %s/%s", slim.GroupVersionKind(), slim.GetNamespace(), slim.GetName())
				}
				kept, _ := json.Marshal(slim.Object)
				for _, gone := range []string{"containers", "train.py", "VODA_PROGRESS_URL", "managedFields", "startTime", "lastTransitionTime"} {
					if strings.Contains(string(kept), gone) {
						t.Errorf("the cached child keeps %q: %s", gone, kept)
					}
				}
			}
		})
	}
}
