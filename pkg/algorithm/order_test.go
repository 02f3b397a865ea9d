package algorithm_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/api"
)

// TestServiceOrderIsWhatPoliciesServe checks that ServiceOrder is the order
// each policy really serves jobs in: with one-GPU jobs of one worker and
// fewer GPUs than jobs, every policy runs exactly the first jobs of its
// order.
func TestServiceOrderIsWhatPoliciesServe(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for round := range 300 {
		n := 2 + r.IntN(30)
		s := algorithm.Snapshot{Now: now, GPUs: 1 + r.IntN(n-1)}
		for i := range n {
			j := algorithm.Job{
				ID:        api.JobID(fmt.Sprintf("ns/j%03d", r.IntN(1000)*100+i)),
				Submitted: now.Add(-time.Duration(r.IntN(20)) * time.Hour),
				Min:       1, Max: 1,
				Remaining: float64(1 + r.IntN(50000)),
				Queue:     r.IntN(2),
			}
			if r.IntN(5) == 0 {
				j.Remaining = math.Inf(1)
			}
			if r.IntN(2) == 0 { // preempted earlier
				j.FirstStarted = j.Submitted.Add(time.Duration(r.IntN(3600)) * time.Second)
				j.Executed = float64(r.IntN(3600))
				j.Attained = j.Executed * float64(1+r.IntN(8))
				j.AttainedSinceStart = j.Attained
			}
			s.Jobs = append(s.Jobs, j)
		}
		for _, p := range allPolicies(t) {
			idx := algorithm.ServiceOrder(p, &s)
			if len(idx) != n {
				t.Fatalf("%s: %d indices for %d jobs", p.Name(), len(idx), n)
			}
			res, err := p.Allocate(s)
			if err != nil {
				t.Fatal(err)
			}
			var want, got []api.JobID
			for _, i := range idx[:s.GPUs] {
				want = append(want, s.Jobs[i].ID)
			}
			for _, j := range s.Jobs {
				if res.Allocation[j.ID] > 0 {
					got = append(got, j.ID)
				}
			}
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(want, got) {
				t.Fatalf("round %d, %s on %d GPUs: runs %v, but its order starts %v", round, p.Name(), s.GPUs, got, want)
			}
		}
	}
}
