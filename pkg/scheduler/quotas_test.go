package scheduler_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/quota"
	"github.com/vodascheduler/voda/pkg/scheduler"
)

func teamQueue(name string, nominal int) quota.Queue {
	return quota.Queue{Name: name, Cohort: "all", Nominal: nominal, BorrowingLimit: quota.Unlimited, LendingLimit: quota.Unlimited, Weight: 1}
}

// queuedEngine is an engine of policy on nodes×4 GPUs with the given queues.
func queuedEngine(t *testing.T, policy string, nodes int, qs ...quota.Queue) (*scheduler.Engine, *fakeClock) {
	t.Helper()
	c := &fakeClock{t: t0}
	cfg := scheduler.DefaultConfig("gpu", c)
	cfg.Policy, cfg.RateLimit = policy, 0
	e, err := scheduler.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range nodes {
		must(t, e.Step(scheduler.NodeSet{Node: api.Node{Name: api.NodeName(fmt.Sprintf("n%d", i)), GPUs: 4}}))
	}
	must(t, e.Step(scheduler.SetQueues{Queues: qs}))
	return e, c
}

func submitTo(t *testing.T, e *scheduler.Engine, id, queue string, lo, hi int) {
	t.Helper()
	spec := api.JobSpec{MinWorkers: lo, MaxWorkers: hi, ClusterQueue: queue}
	must(t, e.Step(scheduler.JobSubmitted{ID: api.JobID(id), Spec: spec, Remaining: 1e5, Speedup: func(n int) float64 { return float64(n) }}))
}

func tickPlan(t *testing.T, e *scheduler.Engine) api.Plan {
	t.Helper()
	p, err := e.Tick()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func workersOf(e *scheduler.Engine, id string) int {
	j, _ := e.Job(api.JobID(id))
	return j.Workers
}

// Team a's elastic jobs borrow team b's idle quota; when b submits, a's
// jobs shrink (none stops) and b's job starts at once, in the same round.
func TestQueueTakesItsQuotaBackByShrinking(t *testing.T) {
	for _, policy := range algorithm.Names() {
		if algorithm.Rigid(policy) {
			continue
		}
		t.Run(policy, func(t *testing.T) {
			e, c := queuedEngine(t, policy, 4, teamQueue("a", 8), teamQueue("b", 8))
			submitTo(t, e, "a1", "a", 1, 8)
			submitTo(t, e, "a2", "a", 1, 8)
			tickPlan(t, e)
			if got := workersOf(e, "a1") + workersOf(e, "a2"); got != 16 {
				t.Fatalf("team a holds %d GPUs, want all 16 while b is idle", got)
			}
			c.t = c.t.Add(time.Minute)
			submitTo(t, e, "b1", "b", 2, 8)
			p := tickPlan(t, e)
			for _, a := range p.Actions {
				if a.Kind == api.ActionHalt {
					t.Errorf("%s: a job stopped where shrinking was enough", a)
				}
			}
			if got := workersOf(e, "b1"); got != 8 {
				t.Errorf("b1 runs on %d GPUs, want team b's 8 at once", got)
			}
			if got := workersOf(e, "a1") + workersOf(e, "a2"); got != 8 {
				t.Errorf("team a holds %d GPUs, want its 8", got)
			}
			if s := e.QuotaStats(); s.Reclaims != 1 || s.ByShrinking != 1 {
				t.Errorf("quota stats %+v, want one reclaim, by shrinking", s)
			}
			qs := e.Queues()
			if qs[0].Used != 8 || qs[1].Used != 8 || qs[0].Borrowed != 0 {
				t.Errorf("queue status %+v", qs)
			}
		})
	}
}

// Rigid jobs cannot shrink: the borrowing queue's last-started job stops,
// never one its nominal quota covers.
func TestReclaimStopsTheLastStartedBorrowedJob(t *testing.T) {
	e, c := queuedEngine(t, algorithm.NameFIFO, 4, teamQueue("a", 8), teamQueue("b", 8))
	for i := range 4 {
		submitTo(t, e, fmt.Sprintf("a%d", i), "a", 4, 4)
		c.t = c.t.Add(time.Second)
	}
	tickPlan(t, e)
	c.t = c.t.Add(time.Minute)
	submitTo(t, e, "b1", "b", 4, 4)
	p := tickPlan(t, e)
	var halted []string
	for _, a := range p.Actions {
		if a.Kind == api.ActionHalt {
			halted = append(halted, string(a.Job))
			if !strings.HasPrefix(a.Reason, "quota: ") {
				t.Errorf("halt reason %q does not say it is a reclaim", a.Reason)
			}
		}
	}
	if strings.Join(halted, ",") != "a3" || workersOf(e, "b1") != 4 {
		t.Errorf("halted %v, b1 on %d: want a3 stopped and b1 on 4", halted, workersOf(e, "b1"))
	}
	if s := e.QuotaStats(); s.Reclaims != 1 || s.ByShrinking != 0 || s.Stopped != 1 {
		t.Errorf("quota stats %+v", s)
	}
}

// A job's message says when its queue, not the cluster, holds it back; a
// job naming no queue, or one that does not exist, or whose minimum no
// quota allows, waits and says why.
func TestQueueMessages(t *testing.T) {
	q := teamQueue("a", 4)
	q.Cohort, q.BorrowingLimit, q.LendingLimit = "", quota.Unlimited, quota.Unlimited
	e, _ := queuedEngine(t, algorithm.NameElasticFIFO, 4, q)
	submitTo(t, e, "a1", "a", 4, 4)
	submitTo(t, e, "a2", "a", 2, 2)
	submitTo(t, e, "big", "a", 8, 8)
	submitTo(t, e, "lost", "nope", 1, 1)
	submitTo(t, e, "none", "", 1, 1)
	tickPlan(t, e)
	want := map[string]string{
		"a2":   "queue a is at its quota",
		"big":  "exceeds the 4 GPUs queue a may ever hold",
		"lost": "queue nope does not exist",
		"none": "set spec.queueName",
	}
	for id, w := range want {
		j, _ := e.Job(api.JobID(id))
		if j.Workers != 0 || !strings.Contains(j.Message, w) {
			t.Errorf("%s: %d workers, message %q; want waiting with %q", id, j.Workers, j.Message, w)
		}
	}
}

// Deleting a queue keeps its running jobs at their size; its waiting jobs
// wait until it is back.
func TestDeletedQueueKeepsRunningJobs(t *testing.T) {
	e, c := queuedEngine(t, algorithm.NameElasticFIFO, 4, teamQueue("a", 8), teamQueue("b", 8))
	submitTo(t, e, "a1", "a", 2, 16)
	tickPlan(t, e)
	c.t = c.t.Add(time.Minute)
	must(t, e.Step(scheduler.SetQueues{Queues: []quota.Queue{teamQueue("b", 8)}}))
	submitTo(t, e, "a2", "a", 1, 1)
	submitTo(t, e, "b1", "b", 1, 16)
	tickPlan(t, e)
	if got := workersOf(e, "a1"); got != 16 {
		t.Errorf("a1 holds %d workers after its queue went, want its 16 kept", got)
	}
	if got := workersOf(e, "a2"); got != 0 {
		t.Errorf("a2 of a deleted queue runs on %d", got)
	}
	if got := workersOf(e, "b1"); got != 0 {
		t.Errorf("b1 got %d workers; the GPUs a1 keeps are not free", got)
	}
}

func TestSetQueuesRefusesBadSettings(t *testing.T) {
	e, _ := queuedEngine(t, algorithm.NameElasticFIFO, 1)
	bad := teamQueue("a", -2)
	if err := e.Step(scheduler.SetQueues{Queues: []quota.Queue{bad}}); err == nil || !strings.Contains(err.Error(), "nominalQuota") {
		t.Errorf("negative quota: %v", err)
	}
	if err := e.Step(scheduler.SetQueues{Queues: []quota.Queue{teamQueue("a", 1), teamQueue("a", 2)}}); err == nil {
		t.Error("a queue given twice was accepted")
	}
	if len(e.Queues()) != 0 {
		t.Errorf("queues after refusals: %+v", e.Queues())
	}
}

// TestQueuesDoNotTakeGPUsBackAndForth runs random workloads of teams
// through the engine, jobs arriving and finishing, and checks after every
// round that no queue holds more than the GPUs, that a queue with demand
// holds its quota within one round (when the quotas fit the GPUs), and that no queue takes GPUs back
// from another that took GPUs back from it in the previous round while no
// job arrived or ended in between.
func TestQueuesDoNotTakeGPUsBackAndForth(t *testing.T) {
	for seed := range uint64(60) {
		r := rand.New(rand.NewPCG(seed, 7))
		policy := algorithm.Names()[r.IntN(len(algorithm.Names()))]
		var qs []quota.Queue
		nq := 2 + r.IntN(3)
		for i := range nq {
			q := teamQueue(fmt.Sprintf("q%d", i), 2+r.IntN(6))
			q.Weight = float64(1 + r.IntN(3))
			if r.IntN(3) == 0 {
				q.MinRunTime = time.Duration(r.IntN(600)) * time.Second
			}
			qs = append(qs, q)
		}
		e, c := queuedEngine(t, policy, 6, qs...)
		nominal := 0
		for _, q := range qs {
			nominal += q.Nominal
		}
		prevTook := map[[2]string]bool{}
		jobs := 0
		for round := range 60 {
			changed := false
			if r.IntN(2) == 0 {
				q := qs[r.IntN(nq)]
				lo := 1 + r.IntN(2)
				submitTo(t, e, fmt.Sprintf("j%d", jobs), q.Name, lo, lo+r.IntN(6))
				jobs++
				changed = true
			}
			if r.IntN(4) == 0 {
				for _, j := range e.Jobs() {
					if j.Phase == api.PhaseRunning {
						must(t, e.Step(scheduler.JobCompleted{ID: j.ID}))
						changed = true
						break
					}
				}
			}
			c.t = c.t.Add(time.Duration(30+r.IntN(300)) * time.Second)
			before := map[string]int{}
			for _, s := range e.Queues() {
				before[s.Name] = s.Used
			}
			p := tickPlan(t, e)
			after := e.Queues()
			total := 0
			var lost, gained []string
			for _, s := range after {
				total += s.Used
				if s.Used < before[s.Name] && hasReclaim(p, e, s.Name) {
					lost = append(lost, s.Name)
				}
				if s.Used > before[s.Name] {
					gained = append(gained, s.Name)
				}
				if nominal <= e.GPUs() && s.Pending > 0 && s.Used+s.Pending <= s.Nominal && policy != algorithm.NameFIFO && policy != algorithm.NameSRJF && policy != algorithm.NameTiresias {
					t.Errorf("seed %d round %d (%s): queue %s holds %d of %d with %d GPUs of jobs waiting", seed, round, policy, s.Name, s.Used, s.Nominal, s.Pending)
				}
			}
			if total > e.GPUs() {
				t.Fatalf("seed %d round %d: queues hold %d of %d GPUs", seed, round, total, e.GPUs())
			}
			took := map[[2]string]bool{}
			for _, g := range gained {
				for _, l := range lost {
					took[[2]string{g, l}] = true
					if prevTook[[2]string{l, g}] && !changed {
						t.Errorf("seed %d round %d (%s): %s took GPUs back from %s, which had taken them from it the round before", seed, round, policy, g, l)
					}
				}
			}
			prevTook = took
		}
		t.Logf("seed %d %s: %+v", seed, policy, e.QuotaStats())
	}
}

// hasReclaim reports whether the plan took GPUs from queue's jobs by
// reclaim.
func hasReclaim(p api.Plan, e *scheduler.Engine, queue string) bool {
	for _, a := range p.Actions {
		j, _ := e.Job(a.Job)
		if j.Spec.ClusterQueue == queue && strings.HasPrefix(a.Reason, "quota: ") {
			return true
		}
	}
	return false
}

// In a queue whose running jobs are never stopped for its others, a job
// SRJF would preempt for a shorter one keeps running at its minimum.
func TestKeepRunningWithinQueue(t *testing.T) {
	for _, keep := range []bool{false, true} {
		q := teamQueue("a", 4)
		q.KeepRunning = keep
		e, c := queuedEngine(t, algorithm.NameSRJF, 1, q)
		spec := api.JobSpec{MinWorkers: 4, MaxWorkers: 4, ClusterQueue: "a"}
		must(t, e.Step(scheduler.JobSubmitted{ID: "long", Spec: spec, Remaining: 1e6}))
		tickPlan(t, e)
		c.t = c.t.Add(time.Minute)
		must(t, e.Step(scheduler.JobSubmitted{ID: "short", Spec: spec, Remaining: 10}))
		tickPlan(t, e)
		long, short := workersOf(e, "long"), workersOf(e, "short")
		if keep && (long != 4 || short != 0) || !keep && (long != 0 || short != 4) {
			t.Errorf("keepRunning %v: long on %d, short on %d", keep, long, short)
		}
	}
}

// On a cluster without queues, a job whose queue cannot be known waits
// (a running one keeps its size) and the others are scheduled as if it
// were not there.
func TestQueueProblemWithoutQueuesHoldsOnlyThatJob(t *testing.T) {
	e, c := queuedEngine(t, algorithm.NameElasticFIFO, 2)
	submitTo(t, e, "lost", "", 2, 2)
	tickPlan(t, e)
	c.t = c.t.Add(time.Minute)
	must(t, e.Step(scheduler.JobQueue{ID: "lost", Problem: "LocalQueue nope does not exist in namespace ml"}))
	submitTo(t, e, "other", "", 1, 8)
	submitTo(t, e, "late", "", 1, 1)
	must(t, e.Step(scheduler.JobQueue{ID: "late", Problem: "LocalQueue nope does not exist in namespace ml"}))
	tickPlan(t, e)
	if got := workersOf(e, "lost"); got != 2 {
		t.Errorf("the running job of an unknown queue holds %d workers, want its 2 kept", got)
	}
	if got := workersOf(e, "other"); got != 6 {
		t.Errorf("the job without a queue got %d workers, want the 6 free", got)
	}
	j, _ := e.Job("late")
	if j.Workers != 0 || !strings.Contains(j.Message, "LocalQueue nope does not exist") {
		t.Errorf("late: %d workers, %q", j.Workers, j.Message)
	}
}

// Borrowed workers protected by their queue's minimum run time keep their
// GPUs against fair sharing until it ends; then, with no other event, a
// round gives the other borrower its share.
func TestMinRunTimeEndsWithoutAnEvent(t *testing.T) {
	a, b, idle := teamQueue("a", 4), teamQueue("b", 4), teamQueue("idle", 8)
	a.MinRunTime = 10 * time.Minute
	e, c := queuedEngine(t, algorithm.NameElasticFIFO, 4, a, b, idle)
	submitTo(t, e, "a1", "a", 1, 16)
	tickPlan(t, e)
	if got := workersOf(e, "a1"); got != 16 {
		t.Fatalf("a1 on %d GPUs, want all 16", got)
	}
	c.t = c.t.Add(time.Minute)
	submitTo(t, e, "b1", "b", 1, 16)
	tickPlan(t, e)
	if got := workersOf(e, "b1"); got != 4 {
		t.Fatalf("b1 on %d GPUs, want its quota of 4 only while a's borrowed workers are protected", got)
	}
	// The round after the reclaim changes nothing; the next is due when
	// a's protection ends.
	tickPlan(t, e)
	at, ok := e.Due()
	if want := t0.Add(10 * time.Minute); !ok || !at.Equal(want) {
		t.Fatalf("next round at %v (%v), want %v, the end of a's protection", at, ok, want)
	}
	c.t = at
	tickPlan(t, e)
	if a1, b1 := workersOf(e, "a1"), workersOf(e, "b1"); a1 != 8 || b1 != 8 {
		t.Errorf("after the protection: a1 on %d, b1 on %d, want the 8 lent split 4 and 4", a1, b1)
	}
}
