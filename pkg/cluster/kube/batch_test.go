package kube_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/vodascheduler/voda/internal/testenv"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/cluster/kube"
	"github.com/vodascheduler/voda/pkg/estimator"
	"github.com/vodascheduler/voda/pkg/progress"
)

// withBatch lets Voda choose the job's batch size between initial and max;
// the job trains 100 epochs at initial.
func withBatch(initial, most int32) jobOpt {
	return func(tj *v1alpha1.TrainingJob) {
		tj.Spec.BatchSize = &v1alpha1.BatchSizeSpec{Initial: initial, Max: most}
		tj.Spec.Epochs = 100
	}
}

// batchAt reads the batch at n workers from a VODA_BATCH_SIZES table.
func batchAt(t *testing.T, sizes string, n int) (global, local, acc int) {
	t.Helper()
	for _, f := range strings.Fields(sizes) {
		var v [4]int
		parts := strings.Split(f, ":")
		if len(parts) != 4 {
			t.Fatalf("batch sizes %q: entry %q", sizes, f)
		}
		for i, p := range parts {
			x, err := strconv.Atoi(p)
			if err != nil {
				t.Fatalf("batch sizes %q: entry %q", sizes, f)
			}
			v[i] = x
		}
		if v[0] == n {
			return v[1], v[2], v[3]
		}
	}
	t.Fatalf("batch sizes %q have no entry for %d workers", sizes, n)
	return
}

// podsGiven checks that every live worker pod of a job was given sizes
// (its annotation, which VODA_BATCH_SIZES reads) and the initial batch.
func (k *cluster) podsGiven(ctx context.Context, ns, name, sizes string, initial int32) (bool, error) {
	pods, err := k.workers(ctx, ns, name)
	if err != nil || len(pods) == 0 {
		return false, err
	}
	for i, p := range pods {
		if got := p.Annotations[kube.BatchSizesAnnotation]; got != sizes {
			return false, fmt.Errorf("worker %d was given batch sizes %q, want %q", i, got, sizes)
		}
		for _, c := range p.Spec.Containers {
			if err := batchEnvOf(c, initial); err != nil {
				return false, fmt.Errorf("worker %d: %w", i, err)
			}
		}
	}
	return true, nil
}

// batchEnvOf checks a container's batch environment: the table through the
// downward API, and the initial batch.
func batchEnvOf(c corev1.Container, initial int32) error {
	i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == kube.EnvBatchSizes })
	if i < 0 || c.Env[i].ValueFrom == nil || c.Env[i].ValueFrom.FieldRef == nil ||
		c.Env[i].ValueFrom.FieldRef.FieldPath != "metadata.annotations['"+kube.BatchSizesAnnotation+"']" {
		return fmt.Errorf("container %s: no %s from the batch sizes annotation", c.Name, kube.EnvBatchSizes)
	}
	i = slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == kube.EnvInitialBatchSize })
	if i < 0 || c.Env[i].Value != strconv.Itoa(int(initial)) {
		return fmt.Errorf("container %s: %s is not %d", c.Name, kube.EnvInitialBatchSize, initial)
	}
	return nil
}

// testBatchSize: jobs that let Voda choose their batch size. An impossible
// range is refused; a PyTorch job starts at its initial batch, the table
// of every count in its pods; a report with gradient statistics that make
// a larger batch pay restarts it as a whole at the new batch; a resize
// puts the table's batch for the new count in force; an MPIJob's launcher
// and workers get the table too; a category's measured steps change the
// batch its jobs run at, and a new leader knows them.
func testBatchSize(t *testing.T, k *cluster) {
	const ns, gpu = "batch", "batch-gpu"
	nodes := k.scenario(t, ns, gpu, 1, 4)
	k.watchOvercommit(t, nodes)
	o := controllerOpts(t, gpu) // ElasticFIFO
	o.ConfigNamespace = ns      // where the batch models are saved
	_, stop := k.startController(t, o)
	ctx := context.Background()

	k.create(t, newPyTorchJob(ns, "tiny", gpu, 1, 4, 1, withBatch(1, 2)))
	tiny := k.waitPhase(t, ns, "tiny", v1alpha1.PhaseFailed)
	if want := "spec.batchSize.max 2 cannot give each of the 4 GPUs of maxWorkers 4 one sample"; !strings.Contains(tiny.Status.Message, want) {
		t.Errorf("tiny: message %q, want it to say %q", tiny.Status.Message, want)
	}

	k.create(t, newPyTorchJob(ns, "a", gpu, 1, 4, 1, withBatch(32, 1024)))
	k.waitPTSettled(t, ns, "a", 4)
	var a *v1alpha1.TrainingJob
	err := testenv.PollUntil(ctx, 30*time.Second, "a at its initial batch, its pods given the table", func(ctx context.Context) (bool, error) {
		a = k.job(t, ns, "a")
		b := a.Status.Batch
		if b == nil || b.Global != 32 || b.Local != 8 || b.Accumulation != 1 || b.EfficiencyPercent != 100 {
			return false, fmt.Errorf("batch status %+v, want 32 = 8 per GPU, 100%% efficient", b)
		}
		return k.podsGiven(ctx, ns, "a", b.Sizes, 32)
	})
	if err != nil {
		t.Fatal(err)
	}
	if g, _, _ := batchAt(t, a.Status.Batch.Sizes, 1); g != 32 {
		t.Errorf("before any statistics, one worker gets batch %d, want the initial 32", g)
	}
	before := podUIDs(t, k, ns, "a")

	// A noise scale of 4 000 samples: a much larger batch pays, enough to
	// restart the job for it.
	sq, vr := 1e-3, 4.0
	k.reportAll(t, ns, "a", progress.Report{Epoch: 1, EpochSeconds: 60, Workers: 4, GlobalBatch: 32, LocalBatch: 8, GradSqr: &sq, GradVar: &vr})
	var retuned *v1alpha1.TrainingJob
	err = testenv.PollUntil(ctx, 90*time.Second, "a restarted at a larger batch", func(ctx context.Context) (bool, error) {
		if ok, err := k.ptSettled(ctx, ns, "a", 4); !ok {
			return false, err
		}
		retuned = k.job(t, ns, "a")
		b := retuned.Status.Batch
		if b == nil || b.Global <= 32 || b.Retunes != 1 {
			return false, fmt.Errorf("batch status %+v, want a larger batch after one retune", b)
		}
		if now := podUIDs(t, k, ns, "a"); slices.ContainsFunc(now, func(u types.UID) bool { return slices.Contains(before, u) }) {
			return false, fmt.Errorf("workers %v, were %v: want every worker new", now, before)
		}
		return k.podsGiven(ctx, ns, "a", b.Sizes, 32)
	})
	if err != nil {
		t.Fatal(err)
	}
	b4 := *retuned.Status.Batch
	if g, l, acc := batchAt(t, b4.Sizes, 4); g != int(b4.Global) || l != int(b4.Local) || acc != int(b4.Accumulation) || l*4*acc != g || g > 1024 {
		t.Errorf("at 4 workers the table says %d = %d × 4 × %d, the status %+v", g, l, acc, b4)
	}
	if b4.EfficiencyPercent >= 100 || b4.EfficiencyPercent < 50 {
		t.Errorf("efficiency %d%% at batch %d for a noise scale of 4000, want (4000+32)/(4000+%d)", b4.EfficiencyPercent, b4.Global, b4.Global)
	}
	k.expectEvents(t, ns, "a", map[string]int{"Restarted: Restarting all 4 workers: batch size 32→" + strconv.Itoa(int(b4.Global)): 1})

	// An MPIJob of its own batch range arrives: a shrinks to 3 workers and
	// runs the table's batch for 3, its pods untouched.
	k.create(t, newJob(ns, "m", gpu, 1, 1, withBatch(16, 64)))
	err = testenv.PollUntil(ctx, 90*time.Second, "a at 3 workers, m at 1", func(ctx context.Context) (bool, error) {
		if ok, err := k.ptSettled(ctx, ns, "a", 3); !ok {
			return false, err
		}
		return k.settled(ctx, ns, "m", 1)
	})
	if err != nil {
		t.Fatal(err)
	}
	a3 := k.job(t, ns, "a").Status.Batch
	g3, l3, acc3 := batchAt(t, b4.Sizes, 3)
	if a3 == nil || a3.Sizes != b4.Sizes || int(a3.Global) != g3 || int(a3.Local) != l3 || int(a3.Accumulation) != acc3 || a3.Global == b4.Global {
		t.Errorf("at 3 workers: batch status %+v, want the table's %d = %d × 3 × %d (it was %d at 4)", a3, g3, l3, acc3, b4.Global)
	}
	if ok, err := k.podsGiven(ctx, ns, "a", b4.Sizes, 32); !ok {
		t.Errorf("a's remaining workers: %v", err)
	}
	mpi := k.mpiJob(t, ns, "m")
	for _, role := range []string{"Launcher", "Worker"} {
		sizes, _, _ := unstructured.NestedString(mpi.Object, "spec", "mpiReplicaSpecs", role, "template", "metadata", "annotations", kube.BatchSizesAnnotation)
		if sizes != "1:16:16:1" {
			t.Errorf("m's %s template was given batch sizes %q, want 1:16:16:1", role, sizes)
		}
	}
	if m := k.job(t, ns, "m").Status.Batch; m == nil || m.Global != 16 {
		t.Errorf("m's batch status %+v, want 16", m)
	}
	if ok, err := k.podsGiven(ctx, ns, "m", "1:16:16:1", 16); !ok {
		t.Errorf("m's worker: %v", err)
	}

	// The learned batch model: a job whose steps cost the same at any
	// batch (its epochs at 32, 64 and 128 samples take 60, 31 and 16 s)
	// and whose noise scale is 4 000 samples runs best at the largest
	// batch, 1 024; BatchTime's fixed shares would have chosen fixed.
	fixed, _, _ := (estimator.Fit{}).Best(estimator.BatchRange{Initial: 32, Max: 1024}, 4, 1, 4000)
	for _, name := range []string{"a", "m"} {
		if err := k.c.Delete(ctx, k.job(t, ns, name)); err != nil {
			t.Fatal(err)
		}
	}
	steps := func(name string) *v1alpha1.TrainingJob {
		return newJob(ns, name, gpu, 1, 4, withBatch(32, 1024), func(tj *v1alpha1.TrainingJob) { tj.Spec.Category = "steps" })
	}
	k.create(t, steps("s"))
	k.waitSettled(t, ns, "s", 4)
	k.reportAll(t, ns, "s",
		progress.Report{Epoch: 1, EpochSeconds: 60, Workers: 4, GlobalBatch: 32, LocalBatch: 8, GradSqr: &sq, GradVar: &vr},
		progress.Report{Epoch: 2, EpochSeconds: 31, Workers: 4, GlobalBatch: 64, LocalBatch: 16, GradSqr: &sq, GradVar: &vr},
		progress.Report{Epoch: 3, EpochSeconds: 16, Workers: 4, GlobalBatch: 128, LocalBatch: 32, GradSqr: &sq, GradVar: &vr})
	// The epochs are kept with the nodes the workers were on: all four
	// on the one node.
	for _, et := range k.job(t, ns, "s").Status.Progress.EpochTimes {
		if et.Nodes != 1 {
			t.Errorf("epoch time %+v: want it on the 1 node its 4 workers were placed on", et)
		}
	}
	k.waitBatch(t, ns, "s", 4, 1024)
	k.expectEvents(t, ns, "s", map[string]int{"Restarted: Restarting all 4 workers: batch size 32→1024": 1})
	if fixed.Global >= 512 {
		t.Errorf("fixed shares choose %d: the learned model's 1024 tells nothing", fixed.Global)
	}

	// What the category measured is saved when a job completes, and a new
	// leader knows it: a job of the category that reports one epoch at
	// 32 samples goes to 1 024 at once (with that point alone, the fixed
	// shares would choose fixed).
	k.completeLauncher(t, ns, "s")
	k.waitPhase(t, ns, "s", v1alpha1.PhaseCompleted)
	err = testenv.PollUntil(ctx, 30*time.Second, "the category's steps saved", func(ctx context.Context) (bool, error) {
		var cm corev1.ConfigMap
		if err := k.c.Get(ctx, types.NamespacedName{Namespace: ns, Name: kube.HistoryConfigMap}, &cm); err != nil {
			return false, err
		}
		var saved map[string]estimator.SavedSteps
		if err := json.Unmarshal([]byte(cm.Data["steps.json"]), &saved); err != nil {
			return false, err
		}
		if got := saved[ns+"/steps@"+gpu]; len(got.Points) != 3 {
			return false, fmt.Errorf("saved steps %+v, want 3 points of %s/steps@%s", saved, ns, gpu)
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	stop()
	k.startController(t, o)
	k.create(t, steps("s2"))
	k.waitSettled(t, ns, "s2", 4)
	k.reportAll(t, ns, "s2", progress.Report{Epoch: 1, EpochSeconds: 60, Workers: 4, GlobalBatch: 32, LocalBatch: 8, GradSqr: &sq, GradVar: &vr})
	k.waitBatch(t, ns, "s2", 4, 1024)
}

// reportAll folds progress reports into a job's status at once, as the
// REST API folds each.
func (k *cluster) reportAll(t *testing.T, ns, name string, rs ...progress.Report) {
	t.Helper()
	for _, r := range rs {
		if err := r.Validate(); err != nil {
			t.Fatal(err)
		}
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		tj := &v1alpha1.TrainingJob{}
		if err := k.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, tj); err != nil {
			return err
		}
		if tj.Status.Progress == nil {
			tj.Status.Progress = &v1alpha1.TrainingProgress{}
		}
		for _, r := range rs {
			progress.Add(tj.Status.Progress, r, tj.CurrentGPUType(), tj.Status.Placement, time.Now())
		}
		return k.c.Status().Update(context.Background(), tj)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// waitBatch waits until an MPIJob runs its n workers at a global batch of
// global samples, after one restart for it.
func (k *cluster) waitBatch(t *testing.T, ns, name string, n int32, global int32) {
	t.Helper()
	err := testenv.PollUntil(context.Background(), 90*time.Second, fmt.Sprintf("%s at batch %d", name, global), func(ctx context.Context) (bool, error) {
		if ok, err := k.settled(ctx, ns, name, n); !ok {
			return false, err
		}
		b := k.job(t, ns, name).Status.Batch
		if b == nil || b.Global != global || b.Retunes != 1 {
			return false, fmt.Errorf("batch status %+v, want %d after one retune", b, global)
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
