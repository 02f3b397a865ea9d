package placement_test

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/placement"
)

func TestWorkersOfSeveralGPUsStayWholeOnANode(t *testing.T) {
	cases := map[string]struct {
		in   placement.Input
		want api.Placement
	}{
		"two 4-GPU workers take two nodes": {
			in:   makeInput().node("a", 4).node("b", 4).alloc("j", 2).perWorker("j", 4).obj(),
			want: api.Placement{"j": names("a", "b")},
		},
		"a 2-GPU job next to 1-GPU jobs keeps each worker on one node": {
			in: makeInput().node("a", 4).node("b", 4).
				alloc("one", 3).at("one", "a", "a", "a").
				alloc("two", 2).perWorker("two", 2).obj(),
			want: api.Placement{"one": names("a", "a", "a"), "two": names("b", "b")},
		},
		"a small job moves so a large worker finds a whole node": {
			in: makeInput().node("a", 4).node("b", 4).
				alloc("small", 2).at("small", "a", "b").
				alloc("big", 1).perWorker("big", 4).obj(),
			want: api.Placement{"small": names("a", "a"), "big": names("b")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, err := placement.Place(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if err := checkInvariants(tc.in, out); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, out.Placement); diff != "" {
				t.Errorf("placement (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestWorkersThatFitNoNodeAreNamed(t *testing.T) {
	in := makeInput().node("a", 3).node("b", 3).alloc("big", 1).perWorker("big", 4).obj()
	_, err := placement.Place(in)
	nf, ok := errors.AsType[*placement.NoFitError](err)
	if !ok {
		t.Fatalf("Place error = %v, want a NoFitError", err)
	}
	if want := (placement.NoFitError{Job: "big", PerWorker: 4, Left: 1}); *nf != want {
		t.Errorf("got %+v, want %+v", *nf, want)
	}
}

// multiGPUScenario runs rounds of a busy cluster whose jobs have workers of
// sizes, each allocation fitting the total GPUs. It checks every round and
// returns how many rounds found no fit.
func multiGPUScenario(t *testing.T, r *rand.Rand, nodeSizes, workerSizes []int, rounds int, rate func(api.JobID, []int) float64) (noFit int) {
	t.Helper()
	in := placement.Input{Allocation: api.Allocation{}, Current: api.Placement{}, GPUsPerWorker: map[api.JobID]int{}, Throughput: rate}
	capacity := 0
	for i := range 2 + r.IntN(8) {
		g := nodeSizes[r.IntN(len(nodeSizes))]
		in.Nodes = append(in.Nodes, api.Node{Name: api.NodeName(fmt.Sprintf("n%02d", i)), GPUs: g})
		capacity += g
	}
	used := func() int {
		u := 0
		for id, w := range in.Allocation {
			u += w * gpusPerWorker(in, id)
		}
		return u
	}
	next := 0
	for round := range rounds {
		for _, id := range slices.Sorted(maps.Keys(in.Allocation)) {
			switch r.IntN(8) {
			case 0:
				delete(in.Allocation, id)
			case 1:
				in.Allocation[id] = max(1, in.Allocation[id]/2)
			case 2:
				in.Allocation[id]++
			}
		}
		for range 20 {
			id := api.JobID(fmt.Sprintf("j%03d", next))
			k := workerSizes[r.IntN(len(workerSizes))]
			in.Allocation[id], in.GPUsPerWorker[id] = 1+r.IntN(3), k
			next++
			if used() > capacity*9/10 {
				break
			}
		}
		for used() > capacity {
			ids := slices.Sorted(maps.Keys(in.Allocation))
			delete(in.Allocation, ids[len(ids)-1])
		}
		out, err := placement.Place(in)
		if _, ok := errors.AsType[*placement.NoFitError](err); ok {
			noFit++
			in.Allocation = api.Allocation{}
			for id, nodes := range in.Current {
				in.Allocation[id] = len(nodes)
			}
			continue
		}
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if err := checkInvariants(in, out); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		in.Current = out.Placement
	}
	return noFit
}

// Worker sizes that divide each other and the nodes (1, 2, 4, 8 GPUs on
// nodes of 8 or 16) always fit when the GPUs add up: repacked largest
// first, every hole is a multiple of the next worker's size.
func TestDivisibleWorkerSizesAlwaysFit(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	for range 200 {
		for _, rate := range []func(api.JobID, []int) float64{nil, hashedRate} {
			if n := multiGPUScenario(t, r, []int{8, 16}, []int{1, 1, 2, 4, 8}, 10, rate); n > 0 {
				t.Fatalf("%d rounds found no fit for an allocation that fits (rate %v)", n, rate != nil)
			}
		}
	}
}

// Other sizes may not fit; Place then says which job, and otherwise keeps
// every promise.
func TestUnevenWorkerSizesKeepThePromises(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 34))
	for range 200 {
		multiGPUScenario(t, r, []int{3, 4, 6, 8}, []int{1, 2, 3, 4}, 10, nil)
		multiGPUScenario(t, r, []int{3, 4, 6, 8}, []int{1, 2, 3, 4}, 10, hashedRate)
	}
}
