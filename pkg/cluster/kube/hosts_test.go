package kube_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// testHostList: mpi-operator lags behind a job's workers (here it is frozen,
// as its backoff after a burst of events can hold it for minutes) and has
// left discover_hosts.sh listing fewer workers than run. The controller
// that sees the workers run writes the list elastic Horovod reads; when
// mpi-operator goes on, it finds the list current and leaves it.
func testHostList(t *testing.T, k *cluster) {
	const ns, gpu = "hostlist", "hostlist-gpu"
	k.scenario(t, ns, gpu, 1, 4)
	o := controllerOpts(t, gpu)
	_, stop := k.startController(t, o)
	k.create(t, newJob(ns, "j1", gpu, 1, 4))
	before := k.waitSettled(t, ns, "j1", 4)
	stop()

	resume, err := k.env.Pause("mpi-operator")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resume() })
	ctx := context.Background()
	key := types.NamespacedName{Namespace: ns, Name: "j1-config"}
	var cm corev1.ConfigMap
	if err := k.c.Get(ctx, key, &cm); err != nil {
		t.Fatal(err)
	}
	full := cm.Data["discover_hosts.sh"]
	stale := fmt.Sprintf("#!/bin/sh\necho j1-worker-0.j1.%s.svc\necho j1-worker-1.j1.%s.svc\n", ns, ns)
	cm.Data["discover_hosts.sh"] = stale
	if err := k.c.Update(ctx, &cm); err != nil {
		t.Fatal(err)
	}

	// A controller that sees j1's four workers run corrects the list while
	// mpi-operator does nothing.
	k.startController(t, o)
	after := k.waitSettled(t, ns, "j1", 4) // settled includes the list
	if got := k.job(t, ns, "j1").Status; got.Restarts != before.Status.Restarts || got.Rescales != before.Status.Rescales {
		t.Errorf("j1 restarted or rescaled (%d, %d; before %d, %d): the list alone was behind",
			got.Restarts, got.Rescales, before.Status.Restarts, before.Status.Rescales)
	}
	if err := k.c.Get(ctx, key, &cm); err != nil {
		t.Fatal(err)
	}
	if got := cm.Data["discover_hosts.sh"]; got != full || strings.Count(got, "echo ") != 4 {
		t.Fatalf("discover_hosts.sh is %q, want %q as mpi-operator wrote it", got, full)
	}
	if after.Status.Placement[0] != before.Status.Placement[0] {
		t.Errorf("j1 moved from %v to %v", before.Status.Placement, after.Status.Placement)
	}

	// mpi-operator goes on (it may restart, having lost its lease) and
	// agrees: the list stays as it is.
	if err := resume(); err != nil {
		t.Fatal(err)
	}
	rv := cm.ResourceVersion
	time.Sleep(5 * time.Second)
	if err := k.c.Get(ctx, key, &cm); err != nil {
		t.Fatal(err)
	}
	if cm.Data["discover_hosts.sh"] != full {
		t.Errorf("after mpi-operator resumed, discover_hosts.sh is %q (version %s, was %s), want %q",
			cm.Data["discover_hosts.sh"], cm.ResourceVersion, rv, full)
	}
}
