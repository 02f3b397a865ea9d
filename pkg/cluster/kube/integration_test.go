package kube_test

import (
	"context"
	"strings"
	"testing"

	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
)

// TestIntegrationController runs the controller against a real control
// plane (etcd, kube-apiserver, controller manager, scheduler, kwok GPU
// nodes, mpi-operator), one scenario per subtest.
func TestIntegrationController(t *testing.T) {
	k := newCluster(t)

	t.Run("InvalidJobsRejected", func(t *testing.T) { testInvalidJobs(t, k) })
	t.Run("ElasticFIFO", func(t *testing.T) { testElasticFIFO(t, k) })
}

// (g) the API server rejects bad TrainingJobs with a message saying what to
// change, before the controller ever sees them.
func testInvalidJobs(t *testing.T, k *cluster) {
	if err := k.env.CreateNamespace(context.Background(), "invalid"); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		edit func(*v1alpha1.TrainingJob)
		want string
	}{
		{"min above max", func(tj *v1alpha1.TrainingJob) { tj.Spec.MinWorkers, tj.Spec.MaxWorkers = 3, 2 }, "maxWorkers must be at least minWorkers"},
		{"zero min", func(tj *v1alpha1.TrainingJob) { tj.Spec.MinWorkers = 0 }, "spec.minWorkers: Invalid value: 0: spec.minWorkers in body should be greater than or equal to 1"},
		{"requested outside range", func(tj *v1alpha1.TrainingJob) { tj.Spec.RequestedWorkers = 9 }, "requestedWorkers must lie within [minWorkers, maxWorkers]"},
		{"no GPU type", func(tj *v1alpha1.TrainingJob) { tj.Spec.GPUType = "" }, "spec.gpuType"},
		{"no template", func(tj *v1alpha1.TrainingJob) { tj.Spec.Template.MPIJob = nil }, "template.mpiJob is required"},
		{"negative priority", func(tj *v1alpha1.TrainingJob) { tj.Spec.Priority = -1 }, "spec.priority"},
	}
	for _, c := range cases {
		tj := newJob("invalid", "bad", "v100", 1, 4)
		c.edit(tj)
		err := k.c.Create(context.Background(), tj)
		if err == nil {
			t.Errorf("%s: created, want rejected", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q does not say %q", c.name, err, c.want)
		}
	}
	// And a valid job's scheduling fields cannot change afterwards.
	tj := newJob("invalid", "good", "v100", 1, 4)
	k.create(t, tj)
	tj.Spec.MaxWorkers = 8
	if err := k.c.Update(context.Background(), tj); err == nil || !strings.Contains(err.Error(), "maxWorkers is immutable") {
		t.Errorf("changing maxWorkers: %v, want rejected as immutable", err)
	}
}

// (a) three jobs on 2 nodes × 4 GPUs under ElasticFIFO follow the engine's
// plan, workers on the placement's nodes, discover_hosts.sh in step;
// (b) a completion lets the others scale out.
func testElasticFIFO(t *testing.T, k *cluster) {
	const ns, gpu = "fifo", "fifo-gpu"
	k.scenario(t, ns, gpu, 2, 4)
	ctl, _ := k.startController(t, controllerOpts(t, gpu))
	k.create(t, newJob(ns, "j1", gpu, 1, 4), newJob(ns, "j2", gpu, 1, 4), newJob(ns, "j3", gpu, 1, 4))

	var total int32
	for _, name := range []string{"j1", "j2", "j3"} {
		total += k.waitSettled(t, ns, name, 0).Status.Workers
	}
	if total != 8 {
		t.Errorf("jobs hold %d GPUs, want all 8", total)
	}
	// The statuses are the engine's plan.
	infos, err := ctl.Schedulers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 1 || infos[0].GPUs != 8 {
		t.Fatalf("schedulers %+v, want one with 8 GPUs", infos)
	}
	for _, j := range infos[0].Jobs {
		tj := k.job(t, ns, strings.TrimPrefix(string(j.ID), ns+"/"))
		if int(tj.Status.Workers) != j.Workers || len(tj.Status.Placement) != len(j.Nodes) {
			t.Errorf("%s: status %d workers on %v, engine %d on %v", j.ID, tj.Status.Workers, tj.Status.Placement, j.Workers, j.Nodes)
		}
	}

	k.completeLauncher(t, ns, "j1")
	k.waitPhase(t, ns, "j1", v1alpha1.PhaseCompleted)
	k.waitSettled(t, ns, "j2", 4)
	k.waitSettled(t, ns, "j3", 4)
	ev := k.events(t, ns, "j2")
	if countPrefix(ev, "Started:") != 1 {
		t.Errorf("j2 events %q, want one Started", ev)
	}
	if countPrefix(ev, "Scaled:") == 0 && k.job(t, ns, "j2").Status.Rescales == 0 {
		t.Logf("j2 started at full size: events %q", ev)
	}
	t.Logf("j2 events: %q", ev)
}
