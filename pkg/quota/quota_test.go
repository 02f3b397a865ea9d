package quota_test

import (
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vodascheduler/voda/pkg/quota"
)

func budgets(s []quota.Share) []int {
	out := make([]int, len(s))
	for i := range s {
		out[i] = s[i].Budget
	}
	return out
}

func TestSplit(t *testing.T) {
	team := func(name string, nominal int) quota.Queue {
		return quota.Queue{Name: name, Cohort: "all", Nominal: nominal, BorrowingLimit: quota.Unlimited, LendingLimit: quota.Unlimited, Weight: 1}
	}
	limited := func(q quota.Queue, borrow, lend int) quota.Queue {
		q.BorrowingLimit, q.LendingLimit = borrow, lend
		return q
	}
	alone := func(q quota.Queue) quota.Queue {
		q.Cohort, q.BorrowingLimit, q.LendingLimit = "", quota.Unlimited, quota.Unlimited
		return q
	}
	weighted := func(q quota.Queue, w float64) quota.Queue { q.Weight = w; return q }
	never := func(q quota.Queue) quota.Queue { q.Reclaim = quota.ReclaimNever; return q }
	cases := map[string]struct {
		gpus    int
		queues  []quota.Queue
		demands []quota.Demand
		want    []int
	}{
		"an idle team's quota is borrowed by the busy one": {
			gpus: 16, queues: []quota.Queue{team("a", 8), team("b", 8)},
			demands: []quota.Demand{{Want: 40}, {Want: 0}},
			want:    []int{16, 0},
		},
		"a team that submits gets its nominal quota back at once": {
			gpus: 16, queues: []quota.Queue{team("a", 8), team("b", 8)},
			demands: []quota.Demand{{Used: 16, Want: 40}, {Want: 4}},
			want:    []int{12, 4},
		},
		"the lent GPUs are split by weight": {
			gpus: 24, queues: []quota.Queue{team("a", 8), weighted(team("b", 8), 3), team("c", 8)},
			demands: []quota.Demand{{Want: 40}, {Want: 40}, {Want: 0}},
			want:    []int{10, 14, 0},
		},
		"an odd GPU stays with the queue that holds it": {
			gpus: 11, queues: []quota.Queue{team("a", 4), team("b", 4), team("c", 3)},
			demands: []quota.Demand{{Used: 6, Want: 40}, {Used: 5, Want: 40}, {Want: 0}},
			want:    []int{6, 5, 0},
		},
		"limits bound borrowing and lending": {
			gpus: 16, queues: []quota.Queue{limited(team("a", 8), 2, quota.Unlimited), limited(team("b", 8), quota.Unlimited, 3)},
			demands: []quota.Demand{{Want: 40}, {Want: 0}},
			want:    []int{10, 0},
		},
		"a queue outside any cohort neither lends nor borrows": {
			gpus: 16, queues: []quota.Queue{team("a", 8), alone(team("b", 8))},
			demands: []quota.Demand{{Want: 40}, {Want: 0}},
			want:    []int{8, 0},
		},
		"GPUs in no quota are lent to any cohort": {
			gpus: 20, queues: []quota.Queue{team("a", 8), alone(team("b", 8))},
			demands: []quota.Demand{{Want: 40}, {Want: 40}},
			want:    []int{12, 8},
		},
		"fewer GPUs than quotas: each keeps the same fraction": {
			gpus: 8, queues: []quota.Queue{team("a", 8), team("b", 8)},
			demands: []quota.Demand{{Used: 2, Want: 40}, {Used: 6, Want: 40}},
			want:    []int{4, 4},
		},
		"a queue that does not reclaim waits for GPUs to come free": {
			gpus: 16, queues: []quota.Queue{team("a", 8), never(team("b", 8))},
			demands: []quota.Demand{{Used: 14, Want: 40}, {Used: 2, Want: 8}},
			want:    []int{14, 2},
		},
		"protected borrowed workers keep their GPUs against fair sharing": {
			gpus: 24, queues: []quota.Queue{team("a", 8), team("b", 8), team("c", 8)},
			demands: []quota.Demand{{Used: 16, Want: 40, Protected: 8}, {Used: 8, Want: 40}, {Want: 0}},
			want:    []int{16, 8},
		},
		"without protection fair sharing splits what is lent": {
			gpus: 24, queues: []quota.Queue{team("a", 8), team("b", 8), team("c", 8)},
			demands: []quota.Demand{{Used: 16, Want: 40}, {Used: 8, Want: 40}, {Want: 0}},
			want:    []int{12, 12, 0},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := budgets(quota.Split(tc.gpus, tc.queues, tc.demands))
			want := tc.want
			if len(want) < len(got) {
				want = append(want, make([]int, len(got)-len(want))...)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("budgets (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestSplitLending(t *testing.T) {
	qs := []quota.Queue{
		{Name: "a", Cohort: "c", Nominal: 8, BorrowingLimit: quota.Unlimited, LendingLimit: quota.Unlimited, Weight: 1},
		{Name: "b", Cohort: "c", Nominal: 6, BorrowingLimit: quota.Unlimited, LendingLimit: quota.Unlimited, Weight: 1},
		{Name: "d", Cohort: "c", Nominal: 2, BorrowingLimit: quota.Unlimited, LendingLimit: quota.Unlimited, Weight: 1},
	}
	got := quota.Split(16, qs, []quota.Demand{{Want: 16}, {Want: 0}, {Want: 0}})
	want := []quota.Share{
		{Budget: 16, Guaranteed: 8, Borrowed: 8},
		{Lent: 6},
		{Lent: 2},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("shares (-want,+got):\n%s", diff)
	}
}

func TestQueueValidate(t *testing.T) {
	bad := map[string]quota.Queue{
		"negative quota":       {Name: "a", Nominal: -1, BorrowingLimit: quota.Unlimited, LendingLimit: quota.Unlimited, Weight: 1},
		"limit without cohort": {Name: "a", Nominal: 4, BorrowingLimit: 2, LendingLimit: quota.Unlimited, Weight: 1},
		"lends beyond quota":   {Name: "a", Cohort: "c", Nominal: 4, BorrowingLimit: quota.Unlimited, LendingLimit: 5, Weight: 1},
		"negative weight":      {Name: "a", Nominal: 4, BorrowingLimit: quota.Unlimited, LendingLimit: quota.Unlimited, Weight: -1},
		"unknown reclaim":      {Name: "a", Nominal: 4, BorrowingLimit: quota.Unlimited, LendingLimit: quota.Unlimited, Weight: 1, Reclaim: "LowerPriority"},
		"no name":              {Nominal: 4, BorrowingLimit: quota.Unlimited, LendingLimit: quota.Unlimited, Weight: 1},
	}
	for name, q := range bad {
		if err := q.Validate(); err == nil {
			t.Errorf("%s: Validate accepted %+v", name, q)
		}
	}
	good := quota.Queue{Name: "a", Cohort: "c", Nominal: 4, BorrowingLimit: 0, LendingLimit: 4, Weight: 0}
	if err := good.Validate(); err != nil {
		t.Errorf("Validate(%+v) = %v, want nil", good, err)
	}
}

// randomCase draws queues in up to two cohorts (and some outside any),
// with random limits, weights and demands, on a random number of GPUs.
func randomCase(r *rand.Rand) (int, []quota.Queue, []quota.Demand) {
	n := 1 + r.IntN(6)
	qs := make([]quota.Queue, n)
	ds := make([]quota.Demand, n)
	for i := range qs {
		q := quota.Queue{Name: string(rune('a' + i)), Nominal: r.IntN(10), BorrowingLimit: quota.Unlimited, LendingLimit: quota.Unlimited, Weight: float64(r.IntN(4))}
		switch r.IntN(4) {
		case 0:
		case 1:
			q.Cohort = "x"
		default:
			q.Cohort = "y"
		}
		if q.Cohort != "" && r.IntN(3) == 0 {
			q.BorrowingLimit = r.IntN(6)
		}
		if q.Cohort != "" && r.IntN(3) == 0 {
			q.LendingLimit = r.IntN(q.Nominal + 1)
		}
		if r.IntN(5) == 0 {
			q.Reclaim = quota.ReclaimNever
		}
		qs[i] = q
		ds[i] = quota.Demand{Want: r.IntN(20) * r.IntN(2)}
	}
	gpus := r.IntN(40)
	// Current holdings: any split of at most the GPUs.
	left := gpus
	for i := range ds {
		ds[i].Used = r.IntN(left + 1)
		left -= ds[i].Used
		if r.IntN(3) == 0 {
			ds[i].Protected = r.IntN(ds[i].Used + 1)
		}
	}
	return gpus, qs, ds
}

// TestSplitProperties checks, over random cases, what the split promises:
// no more GPUs than exist, limits kept, nominal quota to every queue that
// reclaims whenever the quotas fit, no GPU left idle that a queue may take,
// and a split that, once held, stays as it is.
func TestSplitProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for iter := range 20000 {
		gpus, qs, ds := randomCase(r)
		out := quota.Split(gpus, qs, ds)
		total, sumGuar, sumNominal := 0, 0, 0
		for i, q := range qs {
			s := out[i]
			total += s.Budget
			sumGuar += min(q.Nominal, ds[i].Want)
			sumNominal += q.Nominal
			if s.Budget != s.Guaranteed+s.Borrowed || s.Borrowed < 0 || s.Guaranteed < 0 {
				t.Fatalf("case %d: queue %s: share %+v does not add up", iter, q.Name, s)
			}
			if s.Budget > max(ds[i].Want, 0) {
				t.Fatalf("case %d: queue %s: budget %d above its demand %d", iter, q.Name, s.Budget, ds[i].Want)
			}
			if q.Cohort == "" && s.Borrowed > 0 {
				t.Fatalf("case %d: queue %s outside a cohort borrowed %d", iter, q.Name, s.Borrowed)
			}
			if q.BorrowingLimit != quota.Unlimited && s.Borrowed > q.BorrowingLimit {
				t.Fatalf("case %d: queue %s borrowed %d, limit %d", iter, q.Name, s.Borrowed, q.BorrowingLimit)
			}
			if q.LendingLimit != quota.Unlimited && s.Lent > q.LendingLimit {
				t.Fatalf("case %d: queue %s lent %d, limit %d", iter, q.Name, s.Lent, q.LendingLimit)
			}
		}
		if total > gpus {
			t.Fatalf("case %d: budgets add up to %d of %d GPUs: %+v", iter, total, gpus, out)
		}
		if sumGuar <= gpus {
			for i, q := range qs {
				if q.Reclaim != quota.ReclaimNever && out[i].Guaranteed < min(q.Nominal, ds[i].Want) {
					t.Fatalf("case %d: queue %s got %d of the %d of its quota it wants", iter, q.Name, out[i].Guaranteed, min(q.Nominal, ds[i].Want))
				}
			}
		}
		// Work conservation: while a queue that may borrow wants more, the
		// GPUs in no quota are all lent.
		borrowed := 0
		for i := range out {
			borrowed += out[i].Borrowed
		}
		if sumNominal <= gpus && borrowed < gpus-sumNominal {
			for i, q := range qs {
				if q.Cohort == "" || out[i].Budget >= ds[i].Want || q.BorrowingLimit != quota.Unlimited && out[i].Borrowed >= q.BorrowingLimit ||
					out[i].Guaranteed < min(q.Nominal, ds[i].Want) {
					continue
				}
				t.Fatalf("case %d: queue %s wants %d, got %d, while GPUs in no quota are free: %+v %+v", iter, q.Name, ds[i].Want, out[i].Budget, qs, ds)
			}
		}
		// Held, the split stays.
		held := append([]quota.Demand(nil), ds...)
		for i := range held {
			held[i].Used = out[i].Budget
			held[i].Protected = 0
		}
		again := quota.Split(gpus, qs, held)
		if diff := cmp.Diff(budgets(out), budgets(again)); diff != "" && !anyNever(qs) && !anyProtected(ds) {
			t.Fatalf("case %d: the split moves once held (-first,+again):\n%s\n%+v\n%+v", iter, diff, qs, ds)
		}
	}
}

func anyNever(qs []quota.Queue) bool {
	for _, q := range qs {
		if q.Reclaim == quota.ReclaimNever {
			return true
		}
	}
	return false
}

func anyProtected(ds []quota.Demand) bool {
	for _, d := range ds {
		if d.Protected > 0 {
			return true
		}
	}
	return false
}

func TestReach(t *testing.T) {
	qs := []quota.Queue{
		{Name: "a", Cohort: "c", Nominal: 4, BorrowingLimit: 2, LendingLimit: quota.Unlimited, Weight: 1},
		{Name: "b", Cohort: "c", Nominal: 4, BorrowingLimit: quota.Unlimited, LendingLimit: 1, Weight: 1},
		{Name: "alone", Nominal: 2, BorrowingLimit: quota.Unlimited, LendingLimit: quota.Unlimited, Weight: 1},
	}
	// 16 GPUs: 6 in no quota. a: 4 + min(2, b's 1 + 6) = 6; b: 4 + a's 4
	// + 6 = 14; alone: its 2.
	for i, want := range []int{6, 14, 2} {
		if got := quota.Reach(qs, i, 16); got != want {
			t.Errorf("%s reaches %d, want %d", qs[i].Name, got, want)
		}
	}
	if got := quota.Reach(qs, 1, 6); got != 6 {
		t.Errorf("b on 6 GPUs reaches %d, want all 6", got)
	}
}
