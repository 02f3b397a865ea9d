package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
)

// workload is a runtime: one kind of child workload Voda runs a TrainingJob
// as. Every runtime has the same verbs — create with n workers, scale by patching the
// worker replicas, suspend and resume with runPolicy.suspend — and names its
// worker pods <job>-worker-<i>, so placement (scheduling gate, hostname
// nodeSelector, delete to migrate) and the gang rules are the same for all.
type workload struct {
	// kind is the child's kind, as Runtime() names it.
	kind string
	gvk  schema.GroupVersionKind
	// replicas is the path of the worker replicas in the child.
	replicas []string
	// others is the pods of a running child besides its workers (the MPI
	// launcher), which a gang must count.
	others int32
	// storeOnWorker0 says that worker 0 hosts the job's rendezvous
	// (torchrun's c10d store): the other workers' agents exit with code 1
	// when it goes, so worker 0 is never replaced under running peers —
	// the whole job restarts instead (Controller.rendezvousLost).
	storeOnWorker0 bool
	// lags says the operator may leave a job's events unhandled for
	// minutes (mpi-operator's per-job backoff), so the controller does
	// two of its chores when it falls behind: the host list the job
	// reads and the removal of workers beyond the replicas (lag.go).
	lags bool
	// build returns the child running tj with the given workers, each
	// holding the job's units of res.
	build func(tj *v1alpha1.TrainingJob, workers int32, g Gang, res corev1.ResourceName, env []corev1.EnvVar) (*unstructured.Unstructured, error)
}

// PyTorchJobGVK is the Kubeflow PyTorchJob kind Voda creates for a
// TrainingJob with a pytorchJob template.
var PyTorchJobGVK = schema.GroupVersionKind{Group: "kubeflow.org", Version: "v1", Kind: "PyTorchJob"}

var (
	mpiRuntime = &workload{kind: "MPIJob", gvk: MPIJobGVK, others: 1, lags: true,
		replicas: []string{"spec", "mpiReplicaSpecs", "Worker", "replicas"},
		build:    buildMPIJob}
	pytorchRuntime = &workload{kind: "PyTorchJob", gvk: PyTorchJobGVK, storeOnWorker0: true,
		replicas: []string{"spec", "pytorchReplicaSpecs", "Worker", "replicas"},
		build:    buildPyTorchJob}
	// runtimes are every runtime, in the order they are looked for.
	runtimes = []*workload{mpiRuntime, pytorchRuntime}
)

// runtimeOf returns the runtime of a TrainingJob.
func runtimeOf(tj *v1alpha1.TrainingJob) (*workload, error) {
	for _, r := range runtimes {
		if r.kind == tj.Spec.Template.Runtime() {
			return r, nil
		}
	}
	return nil, fmt.Errorf("training job %s/%s sets no runtime in spec.template", tj.Namespace, tj.Name)
}

// object returns an empty child for the client to fill.
func (r *workload) object() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(r.gvk)
	return u
}

// childState is what Voda reads back from a child workload.
type childState struct {
	replicas  int32
	suspended bool
	// succeeded or failed, with the condition's message.
	succeeded, failed bool
	message           string
	// recorded says the operator has recorded the suspension: the
	// condition Suspended is True.
	recorded bool
}

// read returns a child's state. Both operators keep the Kubeflow job
// conditions (Succeeded, Failed, Suspended) and runPolicy.suspend.
func (r *workload) read(u *unstructured.Unstructured) childState {
	var s childState
	if n, ok, _ := unstructured.NestedInt64(u.Object, r.replicas...); ok {
		s.replicas = int32(n)
	}
	s.suspended, _, _ = unstructured.NestedBool(u.Object, "spec", "runPolicy", "suspend")
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["status"] != string(corev1.ConditionTrue) {
			continue
		}
		msg, _ := m["message"].(string)
		switch m["type"] {
		case "Succeeded":
			s.succeeded, s.message = true, msg
		case "Failed":
			s.failed, s.message = true, msg
		case "Suspended":
			s.recorded = true
		}
	}
	return s
}

// runtimeFor returns the runtime whose child has the given kind, or nil.
func runtimeFor(gvk schema.GroupVersionKind) *workload {
	for _, r := range runtimes {
		if r.gvk == gvk {
			return r
		}
	}
	return nil
}

// slim returns what the controller reads of a child, for its cache: the
// identity and owners (metadata, without managedFields), runPolicy.suspend,
// each replica spec's replicas and batch sizes annotation (read, recover,
// templatesAnnotation), and the conditions' type, status and message. The
// pod templates, most of a child, stay in the API server: the controller
// builds children from the TrainingJob and changes them only by merge
// patches, never by writing back what it read.
func (r *workload) slim(u *unstructured.Unstructured) *unstructured.Unstructured {
	out := map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind()}
	if md, ok := u.Object["metadata"].(map[string]any); ok {
		md = maps.Clone(md)
		delete(md, "managedFields")
		out["metadata"] = md
	}
	spec := map[string]any{}
	if v, ok, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "runPolicy", "suspend"); ok {
		spec["runPolicy"] = map[string]any{"suspend": v}
	}
	if v, _, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", r.replicas[1]); v != nil {
		specs, _ := v.(map[string]any)
		roles := map[string]any{}
		for role, rs := range specs {
			rs, _ := rs.(map[string]any)
			kept := map[string]any{}
			if n, ok := rs["replicas"]; ok {
				kept["replicas"] = n
			}
			if v, ok, _ := unstructured.NestedFieldNoCopy(rs, "template", "metadata", "annotations", BatchSizesAnnotation); ok {
				kept["template"] = map[string]any{"metadata": map[string]any{"annotations": map[string]any{BatchSizesAnnotation: v}}}
			}
			roles[role] = kept
		}
		spec[r.replicas[1]] = roles
	}
	out["spec"] = spec
	if conds, ok, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "conditions"); ok {
		var kept []any
		list, _ := conds.([]any)
		for _, c := range list {
			if m, ok := c.(map[string]any); ok {
				kept = append(kept, map[string]any{"type": m["type"], "status": m["status"], "message": m["message"]})
			}
		}
		out["status"] = map[string]any{"conditions": kept}
	}
	return &unstructured.Unstructured{Object: out}
}

// patch is the merge patch that sets a child's suspension and workers.
func (r *workload) patch(suspend bool, workers int32) map[string]any {
	replicas := map[string]any{}
	spec := map[string]any{"runPolicy": map[string]any{"suspend": suspend}}
	// replicas is spec.<replica specs>.Worker.replicas
	spec[r.replicas[1]] = map[string]any{"Worker": replicas}
	replicas["replicas"] = int64(workers)
	return map[string]any{"spec": spec}
}

// minMember is the gang size of a job of this runtime running the given
// workers: the workers and the other pods that start with them.
func (r *workload) minMember(workers int32) int64 { return int64(workers + r.others) }

// childOf returns the child of kind gvk with the given spec for tj: named
// as the job, labelled with it, and controlled by it, so that deleting the
// TrainingJob deletes the child.
func childOf(tj *v1alpha1.TrainingJob, gvk schema.GroupVersionKind, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(gvk)
	u.SetName(tj.Name)
	u.SetNamespace(tj.Namespace)
	u.SetLabels(map[string]string{v1alpha1.JobLabel: tj.Name})
	u.SetOwnerReferences([]metav1.OwnerReference{*metav1.NewControllerRef(tj, v1alpha1.GroupVersion.WithKind("TrainingJob"))})
	return u
}

// resumeChild resumes a suspended child on workers workers; a job that
// lets Voda choose its batch size gets the batch sizes chosen now.
func (c *Controller) resumeChild(ctx context.Context, tj *v1alpha1.TrainingJob, rt *workload, child *unstructured.Unstructured, workers int32) error {
	p := rt.patch(false, workers)
	if sizes := c.batchSizes(tj); sizes != "" {
		specs := p["spec"].(map[string]any)
		ours := specs[rt.replicas[1]].(map[string]any)
		for role, v := range rt.templatesAnnotation(child, sizes) {
			if m, ok := ours[role].(map[string]any); ok {
				maps.Copy(m, v.(map[string]any))
			} else {
				ours[role] = v
			}
		}
	}
	patch, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if err := c.client.Patch(ctx, child, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("resume %s %s: %w", rt.kind, child.GetName(), err)
	}
	return nil
}

// patchChild sets a child workload's suspension and worker replicas.
func (c *Controller) patchChild(ctx context.Context, rt *workload, child *unstructured.Unstructured, suspend bool, workers int32) error {
	patch, err := json.Marshal(rt.patch(suspend, workers))
	if err != nil {
		return err
	}
	if err := c.client.Patch(ctx, child, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("patch %s %s: %w", rt.kind, child.GetName(), err)
	}
	return nil
}
