package algorithm

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/vodascheduler/voda/pkg/api"
)

// orderByKeys sorts exactly as the comparator it replaced, including ties
// on every key, zero times and times far outside UnixNano's range, for jobs
// in any order and in arrival order (the engine's), and with first keys of
// few values (grouped) and many (sorted whole).
func TestOrderByKeysMatchesComparators(t *testing.T) {
	times := []time.Time{{}, time.Unix(0, 0), time.Unix(0, 1), time.Unix(1700000000, 5), time.Unix(1700000000, 6),
		time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC)}
	rng := rand.New(rand.NewPCG(1, 2))
	cfg := DefaultTiresias()
	var buf orderBuf // lent to every other call, as a Decision lends its own
	for round := range 600 {
		b := &buf
		if round%3 == 0 {
			b = nil
		}
		jobs := make([]Job, 1+rng.IntN(40))
		for i := range jobs {
			jobs[i] = Job{ID: api.JobID(fmt.Sprintf("j%d", rng.IntN(60))), Submitted: times[rng.IntN(len(times))],
				FirstStarted: times[rng.IntN(len(times))], Queue: rng.IntN(3), Min: 1, Max: 1, Workers: rng.IntN(30)}
		}
		if round%2 == 1 {
			slices.SortStableFunc(jobs, func(a, b Job) int { return byArrival(&a, &b) })
		}
		byWorkers := func(j *Job, _ int) (int64, time.Time) { return int64(j.Workers), j.FirstStarted }
		if got, want := orderByKeys(jobs, byWorkers, b), order(jobs, func(x, y int) int {
			if c := cmp.Compare(jobs[x].Workers, jobs[y].Workers); c != 0 {
				return c
			}
			return jobs[x].FirstStarted.Compare(jobs[y].FirstStarted)
		}); !sameOrderBy(jobs, got, want, func(x, y int) bool { return jobs[x].Workers == jobs[y].Workers && jobs[x].Queue == jobs[y].Queue }) {
			t.Fatalf("round %d: order by workers %v, comparator %v", round, got, want)
		}
		if got, want := orderByKeys(jobs, noKey, b), order(jobs, nil); !sameOrder(jobs, got, want) {
			t.Fatalf("round %d: arrival order %v, comparator %v", round, got, want)
		}
		if got, want := arrivalOrder(jobs, b), order(jobs, nil); !sameOrder(jobs, got, want) {
			t.Fatalf("round %d: arrival order %v without keys, comparator %v", round, got, want)
		}
		s := Snapshot{Jobs: jobs}
		got, queues := tiresiasOrder(&s, cfg, b)
		want := order(jobs, func(x, y int) int {
			if c := cmp.Compare(queues[x], queues[y]); c != 0 {
				return c
			}
			a, b := &jobs[x], &jobs[y]
			switch {
			case a.FirstStarted.IsZero() && b.FirstStarted.IsZero():
				return 0
			case a.FirstStarted.IsZero():
				return 1
			case b.FirstStarted.IsZero():
				return -1
			}
			return a.FirstStarted.Compare(b.FirstStarted)
		})
		// Jobs in the same effective queue may differ in their raw one.
		if !sameOrderBy(jobs, got, want, func(x, y int) bool { return queues[x] == queues[y] }) {
			t.Fatalf("round %d: Tiresias order %v, comparator %v", round, got, want)
		}
	}
}

// sameOrder compares two orders up to jobs that are indistinguishable (equal
// in every field the orders look at), which may legitimately swap.
func sameOrder(jobs []Job, a, b []int) bool {
	return sameOrderBy(jobs, a, b, func(x, y int) bool { return jobs[x].Queue == jobs[y].Queue })
}

// sameOrderBy is sameOrder with the jobs' other keys compared by alike.
func sameOrderBy(jobs []Job, a, b []int, alike func(x, y int) bool) bool {
	return slices.EqualFunc(a, b, func(x, y int) bool {
		p, q := &jobs[x], &jobs[y]
		return x == y || (p.ID == q.ID && p.Submitted.Equal(q.Submitted) && p.FirstStarted.Equal(q.FirstStarted) && alike(x, y))
	})
}

// remainingOrder sorts exactly as the comparator it stands in for, with
// ties, unknown (negative, NaN, infinite) and signed-zero remaining times,
// for jobs in arrival order (the engine's, sorted on a dense copy) and in
// any order (the comparator itself).
func TestRemainingOrderMatchesComparator(t *testing.T) {
	rems := []float64{-1, math.NaN(), math.Inf(1), 0, math.Copysign(0, -1), 5, 5, 7.5, 1e9}
	times := []time.Time{{}, time.Unix(0, 0), time.Unix(1700000000, 5), time.Unix(1700000000, 6)}
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 600 {
		jobs := make([]Job, 1+rng.IntN(60))
		for i := range jobs {
			id := fmt.Sprintf("j%03d", i)
			if round%4 == 3 {
				id = fmt.Sprintf("j%d", rng.IntN(20)) // repeated IDs: not arrival order
			}
			jobs[i] = Job{ID: api.JobID(id), Submitted: times[rng.IntN(len(times))], Remaining: rems[rng.IntN(len(rems))], Min: 1, Max: 1}
		}
		if round%2 == 1 {
			slices.SortStableFunc(jobs, func(a, b Job) int { return byArrival(&a, &b) })
		}
		got, want := remainingOrder(jobs), order(jobs, byRemaining(jobs))
		if !sameOrderBy(jobs, got, want, func(x, y int) bool { return jobs[x].remaining() == jobs[y].remaining() }) {
			t.Fatalf("round %d: %v, comparator %v", round, got, want)
		}
	}
}
