package server_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vodascheduler/voda/pkg/apis/rest"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
)

// testQueues: a queue of 4 GPUs that may not borrow. The API lists it,
// refuses jobs naming no queue, a queue that does not exist, or a minimum
// the queue can never hold, and runs a job that names it within its
// quota although the nodes have 8 GPUs; the CLI shows the queue's use.
func testQueues(t *testing.T, e *apiEnv) {
	ctx := context.Background()
	zero := int32(0)
	cq := &v1alpha1.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: "api-team"},
		Spec: v1alpha1.ClusterQueueSpec{Cohort: "api", Quotas: []v1alpha1.GPUQuota{{GPUType: testGPUType, NominalQuota: 4, BorrowingLimit: &zero}}}}
	lq := &v1alpha1.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: apiNS, Name: "small"}, Spec: v1alpha1.LocalQueueSpec{ClusterQueue: "api-team"}}
	if err := e.k8s.Create(ctx, cq); err != nil {
		t.Fatal(err)
	}
	if err := e.k8s.Create(ctx, lq); err != nil {
		t.Fatal(err)
	}
	// The other scenarios run without queues.
	t.Cleanup(func() {
		_ = e.k8s.Delete(ctx, lq)
		_ = e.k8s.Delete(ctx, cq)
	})
	for _, c := range []struct {
		name, body string
		code       int
		want       string
	}{
		{"no queue", tj("q-none"), 400, "has no default queue: name one of small"},
		{"unknown queue", tj("q-nope", "  epochs: 3\n", "  epochs: 3\n  queueName: nope\n"), 400, `there is no queue "nope" in namespace ` + apiNS},
		{"minimum too large", tj("q-big", "  minWorkers: 1\n  maxWorkers: 4\n  requestedWorkers: 2\n", "  minWorkers: 6\n  maxWorkers: 6\n  queueName: small\n"), 422,
			"needs at least 6 GPUs but ClusterQueue api-team may never hold more than 4 on " + testGPUType},
	} {
		if code, msg := e.call(t, "POST", "/api/v1/jobs", "alice", "application/yaml", c.body); code != c.code || !strings.Contains(msg, c.want) {
			t.Errorf("%s: %d %q, want %d saying %q", c.name, code, msg, c.code, c.want)
		}
	}
	body := tj("q-job", "  minWorkers: 1\n  maxWorkers: 4\n  requestedWorkers: 2\n", "  minWorkers: 1\n  maxWorkers: 8\n  queueName: small\n")
	if code, msg := e.call(t, "POST", "/api/v1/jobs", "alice", "application/yaml", body); code != 201 {
		t.Fatalf("a job in its queue: %d %s", code, msg)
	}
	t.Cleanup(func() { e.voda(t, "root", "delete", "q-job") })
	eventually(t, 90*time.Second, "q-job runs on its queue's 4 GPUs", func() (bool, error) {
		var got v1alpha1.TrainingJob
		if err := e.k8s.Get(ctx, types.NamespacedName{Namespace: apiNS, Name: "q-job"}, &got); err != nil {
			return false, err
		}
		s := got.Status
		return s.Phase == v1alpha1.PhaseRunning && s.Workers == 4 && s.ClusterQueue == "api-team", nil
	})
	eventually(t, 60*time.Second, "GET /api/v1/queues shows the queue's use", func() (bool, error) {
		code, out := e.call(t, "GET", "/api/v1/queues", "alice", "", "")
		var l rest.QueueList
		if code != 200 || json.Unmarshal([]byte(out), &l) != nil || len(l.Items) != 1 {
			return false, nil
		}
		q := l.Items[0]
		return q.Name == "small" && q.ClusterQueue == "api-team" && q.Nominal == 4 && q.Used == 4 && q.RunningJobs == 1, nil
	})
	// The server that reads the controller's caches lists the same.
	_, sa := e.serviceAccount(t, "queues-reader")
	eventually(t, 60*time.Second, "the cached server's queues show the queue's use", func() (bool, error) {
		qs, err := sa.Queues(ctx)
		if err != nil || len(qs) != 1 {
			return false, err
		}
		q := qs[0]
		return q.Name == "small" && q.ClusterQueue == "api-team" && q.Nominal == 4 && q.Used == 4 && q.RunningJobs == 1, nil
	})
	// The dashboard's teams page shows the queue's use against its quota.
	c := browserSession(t)
	login(t, c, e.url, "alice")
	code, html, _ := page(t, c, "GET", e.url+"/ui/teams", nil)
	if code != 200 || !strings.Contains(html, `data-queue="small" data-cluster-queue="api-team"`) ||
		!strings.Contains(html, `data-gpu-type="`+testGPUType+`" data-nominal="4" data-used="4"`) {
		t.Errorf("teams page: %d\n%s", code, html)
	}
	code, out := e.voda(t, "alice", "get", "queues")
	if code != 0 || !strings.Contains(out, "small") || !strings.Contains(out, "api-team") {
		t.Errorf("voda get queues: %d\n%s", code, out)
	}
	code, out = e.voda(t, "alice", "describe", "queue", "small")
	if code != 0 || !strings.Contains(out, testGPUType) {
		t.Errorf("voda describe queue small: %d\n%s", code, out)
	}
}
