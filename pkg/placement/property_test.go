package placement_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/placement"
)

// randomInput builds a valid input with the corners Place must survive:
// nodes without GPUs, lost nodes, finished, new, grown and shrunk jobs, and
// now and then a current placement that no longer fits (a node shrank) or
// is plain garbage.
func randomInput(r *rand.Rand, maxNodes, maxGPUs, maxJobs int) placement.Input {
	var live, before []api.Node
	for i := range r.IntN(maxNodes + 1) {
		n := api.Node{Name: api.NodeName(fmt.Sprintf("n%d", i)), GPUs: r.IntN(maxGPUs + 1)}
		live = append(live, n)
		before = append(before, n)
	}
	for i := range r.IntN(3) {
		before = append(before, api.Node{Name: api.NodeName(fmt.Sprintf("lost%d", i)), GPUs: 1 + r.IntN(maxGPUs)})
	}
	prev := randomAllocation(r, before, maxJobs, "")
	in := placement.Input{Nodes: live, Current: api.Placement{}}
	if out, err := placement.Place(placement.Input{Nodes: before, Allocation: prev}); err == nil {
		in.Current = out.Placement
	}
	if r.IntN(8) == 0 {
		in.Current = garbagePlacement(r, before, maxJobs)
	}
	in.Allocation = api.Allocation{}
	for _, id := range slices.Sorted(maps.Keys(prev)) {
		switch r.IntN(6) {
		case 0: // finished
		case 1:
			in.Allocation[id] = 1 + r.IntN(prev[id]+maxGPUs)
		case 2:
			in.Allocation[id] = 0
		default:
			in.Allocation[id] = prev[id]
		}
	}
	maps.Copy(in.Allocation, randomAllocation(r, live, 2, "new"))
	trim(r, in.Allocation, capacity(live))
	if r.IntN(8) == 0 && len(live) > 0 {
		in.Nodes[r.IntN(len(live))].GPUs /= 2
		trim(r, in.Allocation, capacity(in.Nodes))
	}
	r.Shuffle(len(in.Nodes), func(i, j int) { in.Nodes[i], in.Nodes[j] = in.Nodes[j], in.Nodes[i] })
	return in
}

func capacity(nodes []api.Node) int {
	c := 0
	for _, n := range nodes {
		c += n.GPUs
	}
	return c
}

// randomAllocation hands out up to the nodes' capacity to up to maxJobs jobs.
func randomAllocation(r *rand.Rand, nodes []api.Node, maxJobs int, prefix string) api.Allocation {
	a := api.Allocation{}
	free := capacity(nodes)
	for i := range r.IntN(maxJobs + 1) {
		if free == 0 {
			break
		}
		w := 1 + r.IntN(min(free, 1+r.IntN(12)))
		a[api.JobID(fmt.Sprintf("%sj%d", prefix, i))] = w
		free -= w
	}
	return a
}

// garbagePlacement scatters workers over nodes with no regard for capacity.
func garbagePlacement(r *rand.Rand, nodes []api.Node, maxJobs int) api.Placement {
	p := api.Placement{}
	for i := range r.IntN(maxJobs + 1) {
		var at []api.NodeName
		for range r.IntN(6) {
			if len(nodes) == 0 || r.IntN(5) == 0 {
				at = append(at, "nowhere")
				continue
			}
			at = append(at, nodes[r.IntN(len(nodes))].Name)
		}
		p[api.JobID(fmt.Sprintf("j%d", i))] = at
	}
	return p
}

// trim removes workers, from jobs picked at random, until the allocation fits.
func trim(r *rand.Rand, a api.Allocation, capacity int) {
	for a.Total() > capacity {
		ids := slices.Sorted(maps.Keys(a))
		id := ids[r.IntN(len(ids))]
		if a[id] > 0 {
			a[id]--
		}
	}
}

func TestPlaceKeepsItsPromisesOnRandomInputs(t *testing.T) {
	sizes := map[string]struct{ instances, nodes, gpus, jobs int }{
		"tiny":   {3000, 4, 4, 4},
		"small":  {2000, 12, 8, 10},
		"medium": {300, 64, 8, 60},
		"wide":   {100, 40, 64, 20},
	}
	for name, sz := range sizes {
		t.Run(name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, uint64(sz.nodes)))
			for i := range sz.instances {
				in := randomInput(r, sz.nodes, sz.gpus, sz.jobs)
				out, err := placement.Place(in)
				if err != nil {
					t.Fatalf("instance %d: Place(%+v): %v", i, in, err)
				}
				if err := checkInvariants(in, out); err != nil {
					t.Fatalf("instance %d: Place(%+v) = %+v breaks:\n%v", i, in, out, err)
				}
			}
		})
	}
}

func TestPlaceIsDeterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for i := range 500 {
		in := randomInput(r, 16, 8, 12)
		first, err := placement.Place(in)
		if err != nil {
			t.Fatalf("instance %d: %v", i, err)
		}
		again, _ := placement.Place(in)
		if diff := cmp.Diff(first, again); diff != "" {
			t.Fatalf("instance %d: a second run differs (-first,+second):\n%s", i, diff)
		}
		shuffled := in
		shuffled.Nodes = slices.Clone(in.Nodes)
		r.Shuffle(len(shuffled.Nodes), func(i, j int) {
			shuffled.Nodes[i], shuffled.Nodes[j] = shuffled.Nodes[j], shuffled.Nodes[i]
		})
		shuffled.Allocation = maps.Clone(in.Allocation)
		shuffled.Current = maps.Clone(in.Current)
		got, _ := placement.Place(shuffled)
		if diff := cmp.Diff(first, got); diff != "" {
			t.Fatalf("instance %d: shuffled nodes change the result (-ordered,+shuffled):\n%s", i, diff)
		}
	}
}

func TestPlaceOnLargeClusterKeepsItsPromises(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 512-node cluster over several rounds")
	}
	in := scenario(3, 512, 8, 3)
	out, err := placement.Place(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkInvariants(in, out); err != nil {
		t.Fatal(err)
	}
}

// TestWorkspaceDecidesAsAFreshPlacement places random inputs of every size,
// with workers of one to four GPUs, through one Workspace kept from call
// to call (growing, shrinking, forks of earlier calls lent again) and
// checks each result against a placement in storage of its own.
func TestWorkspaceDecidesAsAFreshPlacement(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	var w placement.Workspace
	for i := range 3000 {
		sz := []struct{ nodes, gpus, jobs int }{{4, 4, 4}, {12, 8, 10}, {64, 8, 60}, {40, 64, 20}, {200, 8, 300}}[r.IntN(5)]
		if sz.nodes == 200 && r.IntN(10) > 0 {
			continue
		}
		in := randomInput(r, sz.nodes, sz.gpus, sz.jobs)
		var jobs []placement.Job
		for _, id := range slices.Sorted(maps.Keys(in.Allocation)) {
			k := 1
			if r.IntN(3) == 0 {
				k = 1 + r.IntN(4)
			}
			jobs = append(jobs, placement.Job{ID: id, Workers: in.Allocation[id], GPUsPerWorker: k, Current: in.Current[id]})
		}
		nodes, err := placement.NewNodes(in.Nodes)
		if err != nil {
			t.Fatal(err)
		}
		var rate func(api.JobID, []int) float64
		if r.IntN(4) == 0 {
			rate = func(_ api.JobID, perNode []int) float64 { return 1 / float64(len(perNode)) }
		}
		get := func(i int) placement.Job { return jobs[i] }
		want, werr := placement.PlaceJobs(nodes, len(jobs), get, rate)
		got, gerr := w.PlaceJobs(nodes, len(jobs), get, rate)
		if fmt.Sprint(werr) != fmt.Sprint(gerr) {
			t.Fatalf("instance %d: error %v with a workspace kept, %v without", i, gerr, werr)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("instance %d: a kept workspace places otherwise (-fresh,+kept):\n%s", i, diff)
		}
	}
}
