package simulator

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/quota"
)

const twoTeams = `# two teams of 4 GPUs
apiVersion: vodascheduler.io/v1alpha1
kind: ClusterQueue
metadata:
  name: team-a
spec:
  cohort: research
  quotas:
  - gpuType: v100
    nominalQuota: 4
---
apiVersion: vodascheduler.io/v1alpha1
kind: ClusterQueue
metadata:
  name: team-b
spec:
  cohort: research
  quotas:
  - gpuType: v100
    nominalQuota: 4
    borrowingLimit: 2
  fairSharing:
    weight: "2"
  preemption:
    reclaimWithinCohort: Never
    reclaimMinRunTime: 10m
`

func TestParseQueues(t *testing.T) {
	qs, err := ParseQueues([]byte(twoTeams))
	if err != nil {
		t.Fatal(err)
	}
	want := []quota.Queue{
		{Name: "team-a", Cohort: "research", Nominal: 4, BorrowingLimit: quota.Unlimited, LendingLimit: quota.Unlimited, Weight: 1, Reclaim: quota.ReclaimAny},
		{Name: "team-b", Cohort: "research", Nominal: 4, BorrowingLimit: 2, LendingLimit: quota.Unlimited, Weight: 2, Reclaim: quota.ReclaimNever, MinRunTime: 10 * time.Minute},
	}
	if len(qs) != 2 || qs[0] != want[0] || qs[1] != want[1] {
		t.Errorf("got %+v\nwant %+v", qs, want)
	}
}

func TestParseQueuesErrors(t *testing.T) {
	head := "apiVersion: vodascheduler.io/v1alpha1\nkind: ClusterQueue\nmetadata:\n  name: q\nspec:\n"
	cases := map[string]string{
		"fractional quota":     head + "  quotas:\n  - gpuType: v100\n    nominalQuota: 2.5\n",
		"negative quota":       head + "  quotas:\n  - gpuType: v100\n    nominalQuota: -1\n",
		"limit without cohort": head + "  quotas:\n  - gpuType: v100\n    nominalQuota: 2\n    borrowingLimit: 1\n",
		"lends beyond quota":   head + "  cohort: c\n  quotas:\n  - gpuType: v100\n    nominalQuota: 2\n    lendingLimit: 3\n",
		"unknown field":        head + "  cohort: c\n  quotaz: []\n",
		"two GPU types":        head + "  quotas:\n  - gpuType: v100\n    nominalQuota: 2\n  - gpuType: k80\n    nominalQuota: 2\n",
		"other kind":           "apiVersion: vodascheduler.io/v1alpha1\nkind: LocalQueue\nmetadata:\n  name: q\nspec:\n  clusterQueue: x\n",
		"priority reclaim":     head + "  preemption:\n    reclaimWithinCohort: LowerPriority\n",
		"twice":                head + "---\n" + head,
		"empty":                "# nothing\n",
		"negative weight":      head + "  fairSharing:\n    weight: \"-1\"\n",
	}
	want := map[string]string{
		"fractional quota": "nominalQuota", "negative quota": "nominalQuota -1 is negative", "limit without cohort": "need spec.cohort",
		"lends beyond quota": "exceeds nominalQuota", "unknown field": "quotaz", "two GPU types": "quotas for 2 GPU types",
		"other kind": "want kind ClusterQueue", "priority reclaim": "want Any or Never", "twice": "appears twice",
		"empty": "no ClusterQueue", "negative weight": "fairSharing.weight",
	}
	for name, text := range cases {
		_, err := ParseQueues([]byte(text))
		if err == nil || !strings.Contains(err.Error(), want[name]) {
			t.Errorf("%s: error %v, want one containing %q", name, err, want[name])
		}
	}
}

func TestSpreadQueues(t *testing.T) {
	w := mixedWorkload(400)
	count := func(w Workload) map[string]int {
		m := map[string]int{}
		for _, j := range w.Jobs {
			m[j.QueueName]++
		}
		return m
	}
	names := []string{"a", "b", "c", "d"}
	even, err := SpreadQueues(w, names, SpreadEven)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if c := count(even)[n]; c < 70 || c > 130 {
			t.Errorf("even: queue %s got %d of 400 jobs", n, c)
		}
	}
	half, _ := SpreadQueues(w, names, SpreadHalf)
	if c := count(half); c["a"] < 170 || c["a"] > 230 || c["b"] < 40 || c["c"] < 40 || c["d"] < 40 {
		t.Errorf("half: %v, want about 200 for a and 67 for the others", c)
	}
	again, _ := SpreadQueues(w, names, SpreadHalf)
	for i := range half.Jobs {
		if half.Jobs[i].QueueName != again.Jobs[i].QueueName {
			t.Fatalf("job %s went to %s, then %s", half.Jobs[i].Name, half.Jobs[i].QueueName, again.Jobs[i].QueueName)
		}
	}
	if _, err := SpreadQueues(half, names, SpreadEven); err == nil {
		t.Error("spreading a workload whose jobs name queues was accepted")
	}
}

// Two teams of 4 GPUs: team a submits a burst of long jobs, team b a few
// short ones later. With queues, team b's jobs start at once (a's borrowed
// GPUs come back by shrinking) and its sharing incentive is at most 1;
// every measure is reported.
func TestRunWithQueues(t *testing.T) {
	var jobs []Job
	for i := range 6 {
		jobs = append(jobs, Job{Name: "a" + string(rune('0'+i)), Model: "big", GPUs: 2, Batch: 1, QueueName: "team-a"})
	}
	for i := range 3 {
		jobs = append(jobs, Job{Name: "b" + string(rune('0'+i)), Model: "toy", GPUs: 1, Batch: 1, Submit: time.Hour, QueueName: "team-b"})
	}
	w := workload(jobs...)
	for _, policy := range []string{algorithm.NameHeSRPT, algorithm.NameElasticFIFO, algorithm.NameFIFO} {
		cfg := config(policy)
		cfg.Queues, _ = TeamQueues(2, 8)
		cfg.Queues[0].Name, cfg.Queues[1].Name = "team-a", "team-b"
		res, err := Run(cfg, w, cat)
		if err != nil {
			t.Fatalf("%s: %v", policy, err)
		}
		if len(res.Queues) != 2 {
			t.Fatalf("%s: %d queue results", policy, len(res.Queues))
		}
		// Team b's jobs start as they arrive. Its sharing incentive can
		// exceed 1 a little: the GPUs team a gives back may lie on two
		// nodes, which the test model makes a fifth slower.
		b := res.Queues[1]
		if b.Jobs != 3 || math.IsNaN(b.AloneJCT) || b.SharingIncentive() > 1.25 {
			t.Errorf("%s: team b %+v, sharing incentive %v, want at most 1.25", policy, b, b.SharingIncentive())
		}
		for _, j := range res.Jobs {
			if j.QueueName == "team-b" && policy != algorithm.NameHeSRPT && j.Queue > 0 {
				t.Errorf("%s: team b's job %s waited %vs to start", policy, j.Name, j.Queue)
			}
		}
		for _, q := range res.Queues {
			if q.BelowNominal > 0 {
				t.Errorf("%s: queue %s spent %vs below its quota with work waiting", policy, q.Name, q.BelowNominal)
			}
		}
		if res.Quota.Reclaims == 0 {
			t.Errorf("%s: team b got its quota back without a reclaim", policy)
		}
		// HeSRPT runs team a's jobs large: shrinking them frees enough.
		// ElasticFIFO runs four of them at their minimum: two stop.
		if policy == algorithm.NameHeSRPT && res.Quota.ByShrinking != res.Quota.Reclaims {
			t.Errorf("%s: %+v, want every reclaim done by shrinking", policy, res.Quota)
		}
		s := Summarise(res)
		if len(s.Queues) != 2 || s.Queues[1].SharingIncentive == nil || s.ReclaimsByShrinkShare == nil || s.WorstRho <= 0 {
			t.Errorf("%s: summary %+v", policy, s)
		}
	}
}

func TestRunRefusesJobsOfUnknownQueues(t *testing.T) {
	cfg := config(algorithm.NameHeSRPT)
	cfg.Queues, _ = TeamQueues(2, 8)
	w := workload(Job{Name: "x", Model: "toy", GPUs: 1, Batch: 1, QueueName: "nope"})
	if _, err := Run(cfg, w, cat); err == nil || !strings.Contains(err.Error(), "not among the queues") {
		t.Errorf("unknown queue: %v", err)
	}
	w = workload(Job{Name: "x", Model: "toy", GPUs: 1, Batch: 1})
	if _, err := Run(cfg, w, cat); err == nil || !strings.Contains(err.Error(), "names no queue") {
		t.Errorf("no queue: %v", err)
	}
	if _, err := Run(config(algorithm.NameHeSRPT), workload(Job{Name: "x", Model: "toy", GPUs: 1, Batch: 1, QueueName: "q"}), cat); err == nil {
		t.Error("a job naming a queue ran without queues")
	}
}

func TestFinishTimeFairnessOfAJobAlone(t *testing.T) {
	res, err := Run(config(algorithm.NameFIFO), workload(Job{Name: "x", Model: "toy", GPUs: 2, Batch: 1}), cat)
	if err != nil {
		t.Fatal(err)
	}
	// Alone at its size: its JCT is its time alone plus the restart delay.
	alone := 1000.0 / 2
	if got, want := res.Jobs[0].Rho, (alone+30)/alone; math.Abs(got-want) > 1e-6 {
		t.Errorf("rho %v, want %v", got, want)
	}
}

func TestSingleTypeGavelTrace(t *testing.T) {
	table, err := ReadGavelThroughputs("../../../shared/traces/shockwave/tacc_throughputs.json")
	if err != nil {
		t.Skip("Shockwave's data is not beside the repository:", err)
	}
	hw, err := ReadGavelTrace("../../../shared/traces/shockwave/traces/jobs120_100_40.trace", table)
	if err != nil {
		t.Fatal(err)
	}
	w, c, err := SingleType(hw, table, "v100")
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Jobs) != 120 {
		t.Fatalf("%d jobs, want 120", len(w.Jobs))
	}
	cfg := Config{Policy: algorithm.NameHeSRPT, Nodes: 8, GPUsPerNode: 4, RestartDelay: 30 * time.Second, RateLimit: 30 * time.Second, Tiresias: algorithm.DefaultTiresias()}
	res, err := Run(cfg, w, c)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Jobs) != 120 || res.Makespan <= 0 {
		t.Errorf("%d jobs, makespan %v", len(res.Jobs), res.Makespan)
	}
	if _, _, err := SingleType(hw, table, "h100"); err == nil {
		t.Error("a GPU type the table lacks was accepted")
	}
}
