package kube

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/quota"
	"github.com/vodascheduler/voda/pkg/scheduler"
)

func cq(name, cohort string, quotas ...v1alpha1.GPUQuota) *v1alpha1.ClusterQueue {
	return &v1alpha1.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.ClusterQueueSpec{Cohort: cohort, Quotas: quotas}}
}

// A job of several GPU types goes only to types where its queue may ever
// hold its minimum; to any of them when it may on none.
func TestTypesWithinQueue(t *testing.T) {
	zero := int32(0)
	a := cq("a", "c", v1alpha1.GPUQuota{GPUType: "v100", NominalQuota: 8, BorrowingLimit: &zero}, v1alpha1.GPUQuota{GPUType: "k80", NominalQuota: 2, BorrowingLimit: &zero})
	b := cq("b", "c", v1alpha1.GPUQuota{GPUType: "v100", NominalQuota: 8}, v1alpha1.GPUQuota{GPUType: "k80", NominalQuota: 8})
	all := map[string]*v1alpha1.ClusterQueue{"a": a, "b": b}
	gpus := map[string]int{"v100": 16, "k80": 16}
	for _, c := range []struct {
		need int
		want []string
	}{
		{2, []string{"k80", "v100"}},
		{4, []string{"v100"}},
		{12, []string{"k80", "v100"}}, // nowhere: the job waits, saying why
	} {
		if got := typesWithin(a, all, []string{"k80", "v100"}, gpus, c.need); !slices.Equal(got, c.want) {
			t.Errorf("need %d: %v, want %v", c.need, got, c.want)
		}
	}
	// b may borrow a's idle quota: 8 + at most 8 (a lends all of its
	// nominal quota) within 16 GPUs.
	if got := b.Reach(all, "v100", 16); got != 16 {
		t.Errorf("b may reach %d of v100, want 16", got)
	}
	if got := a.Reach(all, "v100", 16); got != 8 {
		t.Errorf("a, which may not borrow, reaches %d, want 8", got)
	}
}

// The status of a ClusterQueue adds up its types, warns of a type no node
// has and of an ignored spec.
func TestClusterQueueStatus(t *testing.T) {
	q := cq("a", "c", v1alpha1.GPUQuota{GPUType: "v100", NominalQuota: 8}, v1alpha1.GPUQuota{GPUType: "h100", NominalQuota: 4})
	q.Generation = 3
	use := TypedQueueStatus{GPUType: api.GPUType("v100"), GPUs: 16}
	use.QueueStatus = scheduler.QueueStatus{Queue: quota.Queue{Name: "a", Nominal: 8}, Used: 12, Pending: 2, Running: 3, Waiting: 1, WeightedShare: 0.5}
	use.Share = quota.Share{Budget: 12}
	s := clusterQueueStatus(q, []TypedQueueStatus{use}, "")
	if s.Nominal != 12 || s.Used != 12 || s.Borrowed != 4 || s.Pending != 2 || s.RunningJobs != 3 || s.WaitingJobs != 1 || s.ObservedGeneration != 3 {
		t.Errorf("status %+v", s)
	}
	if len(s.GPUTypes) != 1 || s.GPUTypes[0].WeightedShare != "0.500" || s.GPUTypes[0].Budget != 12 {
		t.Errorf("per type %+v", s.GPUTypes)
	}
	if len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "GPU type h100 has no nodes yet") {
		t.Errorf("warnings %v", s.Warnings)
	}
	s = clusterQueueStatus(q, nil, "ClusterQueue a: borrowingLimit and lendingLimit need spec.cohort")
	if len(s.Warnings) != 3 || !strings.HasPrefix(s.Warnings[0], "ignored: ") {
		t.Errorf("warnings of an ignored queue %v", s.Warnings)
	}
}
