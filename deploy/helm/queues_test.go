package helm_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/quota"
)

const twoTeams = `
queues:
- name: team-a
  namespaces: [team-a]
  cohort: research
  quotas: [{gpuType: a100, nominalQuota: 8}]
- name: team-b
  namespaces: [team-b, team-b2]
  cohort: research
  localQueue: gpu
  quotas: [{gpuType: a100, nominalQuota: 8, borrowingLimit: 4}]
  fairSharing: {weight: 2}
  preemption: {reclaimWithinCohort: Any, reclaimMinRunTime: 10m}
`

// The queues of the values render as valid ClusterQueues that admit their
// namespaces only, and a LocalQueue in each namespace; no queues renders
// nothing; a queue without a name fails.
func TestChartRendersQueues(t *testing.T) {
	out, err := helm(t, "template", "voda", chartDir(t), "-n", "voda-system", "--show-only", "templates/queues.yaml", "-f", valuesFile(t, twoTeams))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	cqs := map[string]v1alpha1.ClusterQueue{}
	lqs := map[string]v1alpha1.LocalQueue{}
	for _, doc := range strings.Split(out, "\n---\n") {
		if !strings.Contains(doc, "kind:") {
			continue
		}
		if strings.Contains(doc, "kind: ClusterQueue") {
			var cq v1alpha1.ClusterQueue
			if err := yaml.UnmarshalStrict([]byte(doc), &cq); err != nil {
				t.Fatalf("%v\n%s", err, doc)
			}
			if err := cq.Validate(); err != nil {
				t.Error(err)
			}
			cqs[cq.Name] = cq
			continue
		}
		var lq v1alpha1.LocalQueue
		if err := yaml.UnmarshalStrict([]byte(doc), &lq); err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		lqs[lq.Namespace+"/"+lq.Name] = lq
	}
	teamB := cqs["team-b"]
	b := teamB.QuotaFor("a100")
	if len(cqs) != 2 || b.Nominal != 8 || b.BorrowingLimit != 4 || b.Weight != 2 || b.Reclaim != quota.ReclaimAny || b.MinRunTime.Minutes() != 10 {
		t.Errorf("cluster queues %+v, team-b on a100 %+v", cqs, b)
	}
	sel, err := metav1.LabelSelectorAsSelector(cqs["team-b"].Spec.NamespaceSelector)
	if err != nil {
		t.Fatal(err)
	}
	for ns, want := range map[string]bool{"team-b": true, "team-b2": true, "team-a": false} {
		if got := sel.Matches(labels.Set{"kubernetes.io/metadata.name": ns}); got != want {
			t.Errorf("team-b admits namespace %s: %v, want %v", ns, got, want)
		}
	}
	for _, key := range []string{"team-a/default", "team-b/gpu", "team-b2/gpu"} {
		if _, ok := lqs[key]; !ok {
			t.Errorf("no LocalQueue %s among %v", key, lqs)
		}
	}
	if out, err := helm(t, "template", "voda", chartDir(t), "--show-only", "templates/queues.yaml"); err == nil || !strings.Contains(out, "could not find template") {
		t.Errorf("no queues rendered something: %v\n%s", err, out)
	}
	if out, err := helm(t, "template", "voda", chartDir(t), "-f", valuesFile(t, "queues: [{cohort: x}]")); err == nil || !strings.Contains(out, "every queue needs a name") {
		t.Errorf("a queue without a name: %v\n%s", err, out)
	}
}
