package placement_test

import (
	"hash/fnv"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/placement"
)

// byNodes rates a layout by how many nodes it spans, like the measured
// BERT profile at its smallest batch (steps per second on 8 GPUs: 0.40 on
// 4+4, 0.68 on 3+3+2, 0.71 on 2+2+2+2).
func byNodes(rates map[int]float64) func(api.JobID, []int) float64 {
	return func(_ api.JobID, layout []int) float64 { return rates[len(layout)] }
}

// perNode counts a job's workers per node, largest first.
func perNode(nodes []api.NodeName) []int {
	count := map[api.NodeName]int{}
	for _, n := range nodes {
		count[n]++
	}
	out := slices.Collect(maps.Values(count))
	slices.SortFunc(out, func(a, b int) int { return b - a })
	return out
}

func TestThroughputSpreadsAJobWhereItStepsFaster(t *testing.T) {
	in := makeInput().node("n0", 4).node("n1", 4).node("n2", 4).node("n3", 4).alloc("a", 8).obj()
	out, err := placement.Place(in)
	if err != nil {
		t.Fatal(err)
	}
	if got := perNode(out.Placement["a"]); !slices.Equal(got, []int{4, 4}) {
		t.Fatalf("without Throughput: layout %v, want the packed 4+4", got)
	}
	in.Throughput = byNodes(map[int]float64{1: 1, 2: 0.40, 3: 0.68, 4: 0.71})
	out, err = placement.Place(in)
	if err != nil {
		t.Fatal(err)
	}
	if got := perNode(out.Placement["a"]); len(got) != 4 {
		t.Fatalf("with Throughput: layout %v, want one on all 4 nodes", got)
	}
	if err := checkInvariants(in, out); err != nil {
		t.Fatal(err)
	}
}

func TestThroughputOnlyUsesFreeGPUs(t *testing.T) {
	// b keeps its 3 GPUs on n1 and c its 4 on n2; a (new, 4 workers) can
	// only spread over n0 (4 free) and n1 (1 free).
	in := makeInput().node("n0", 4).node("n1", 4).node("n2", 4).
		alloc("a", 4).alloc("b", 3).at("b", "n1", "n1", "n1").alloc("c", 4).at("c", "n2", "n2", "n2", "n2").obj()
	spread := byNodes(map[int]float64{1: 1, 2: 3, 3: 5})
	in.Throughput = func(id api.JobID, layout []int) float64 {
		if id != "a" {
			return 0 // b and c: nothing known, nothing moves
		}
		return spread(id, layout)
	}
	out, err := placement.Place(in)
	if err != nil {
		t.Fatal(err)
	}
	if got := perNode(out.Placement["a"]); !slices.Equal(got, []int{3, 1}) {
		t.Fatalf("a's layout %v, want 3+1 (n0 and the one GPU free on n1)", got)
	}
	for _, id := range []api.JobID{"b", "c"} {
		if !slices.Equal(out.Placement[id], in.Current[id]) {
			t.Errorf("unchanged job %s moved: %v → %v", id, in.Current[id], out.Placement[id])
		}
	}
	if err := checkInvariants(in, out); err != nil {
		t.Fatal(err)
	}
}

func TestThroughputMovesAnUnchangedJobOnlyForALargeGain(t *testing.T) {
	in := makeInput().node("n0", 4).node("n1", 4).node("n2", 4).node("n3", 4).
		alloc("a", 4).at("a", "n0", "n0", "n1", "n1").obj()
	for _, tc := range []struct {
		spread float64 // the rate on 4 nodes; 2 nodes rate 1
		want   []int
	}{
		{1.2, []int{2, 2}},
		{1.3, []int{1, 1, 1, 1}},
	} {
		in.Throughput = byNodes(map[int]float64{1: 0.9, 2: 1, 3: 1, 4: tc.spread})
		out, err := placement.Place(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := perNode(out.Placement["a"]); !slices.Equal(got, tc.want) {
			t.Errorf("4 nodes rated %v: a's layout %v, want %v", tc.spread, got, tc.want)
		}
		if err := checkInvariants(in, out); err != nil {
			t.Fatal(err)
		}
	}
}

func TestThroughputKeepsASpreadJobThatIsFasterSpread(t *testing.T) {
	// Without Throughput placement gathers a onto n2; rated faster on two
	// nodes than on one, it stays.
	in := makeInput().node("n0", 4).node("n1", 4).node("n2", 4).
		alloc("a", 4).at("a", "n0", "n0", "n1", "n1").
		alloc("b", 2).at("b", "n0", "n0").alloc("c", 2).at("c", "n1", "n1").obj()
	out, err := placement.Place(in)
	if err != nil {
		t.Fatal(err)
	}
	if !onOneNode(out.Placement["a"]) {
		t.Fatalf("without Throughput a stays spread: %v", out.Placement["a"])
	}
	in.Throughput = byNodes(map[int]float64{1: 1, 2: 1.1})
	out, err = placement.Place(in)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out.Placement["a"], in.Current["a"]) {
		t.Fatalf("a moved from %v to %v although it rates its layout faster", in.Current["a"], out.Placement["a"])
	}
}

func TestThroughputKeepsWorkersOfSeveralGPUsWhole(t *testing.T) {
	// 3 workers of 2 GPUs: the fastest layout is one worker per node.
	in := makeInput().node("n0", 4).node("n1", 4).node("n2", 4).alloc("a", 3).perWorker("a", 2).obj()
	in.Throughput = func(_ api.JobID, layout []int) float64 {
		for _, g := range layout {
			if g%2 != 0 {
				t.Errorf("layout %v splits a worker of 2 GPUs", layout)
			}
		}
		return float64(len(layout))
	}
	out, err := placement.Place(in)
	if err != nil {
		t.Fatal(err)
	}
	if got := perNode(out.Placement["a"]); !slices.Equal(got, []int{1, 1, 1}) {
		t.Fatalf("a's workers per node %v, want 1+1+1", got)
	}
}

func TestThroughputThatKnowsNothingChangesNothing(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 500 {
		in := randomInput(r, 12, 8, 10)
		want, err := placement.Place(in)
		if err != nil {
			t.Fatalf("instance %d: %v", i, err)
		}
		for name, rate := range map[string]func(api.JobID, []int) float64{
			"zero": func(api.JobID, []int) float64 { return 0 },
			"NaN":  func(api.JobID, []int) float64 { return math.NaN() },
		} {
			in.Throughput = rate
			got, err := placement.Place(in)
			if err != nil {
				t.Fatalf("instance %d, %s: %v", i, name, err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("instance %d: a rate of %s changes the placement (-nil,+%s):\n%s", i, name, name, diff)
			}
		}
		in.Throughput = nil
	}
}

// hashedRate is an arbitrary but deterministic rate of every layout.
func hashedRate(id api.JobID, layout []int) float64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	for _, g := range layout {
		h.Write([]byte{byte(g), byte(g >> 8)})
	}
	return 1 + float64(h.Sum64()%1000)/1000
}

func TestThroughputPlacementKeepsItsPromises(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for i := range 2000 {
		in := randomInput(r, 12, 8, 10)
		in.Throughput = hashedRate
		out, err := placement.Place(in)
		if err != nil {
			t.Fatalf("instance %d: Place(%+v): %v", i, in, err)
		}
		if err := checkInvariants(in, out); err != nil {
			t.Fatalf("instance %d: Place(%+v) = %+v breaks:\n%v", i, in, out, err)
		}
		shuffled := in
		shuffled.Nodes = slices.Clone(in.Nodes)
		r.Shuffle(len(shuffled.Nodes), func(i, j int) {
			shuffled.Nodes[i], shuffled.Nodes[j] = shuffled.Nodes[j], shuffled.Nodes[i]
		})
		got, _ := placement.Place(shuffled)
		if diff := cmp.Diff(out, got); diff != "" {
			t.Fatalf("instance %d: shuffled nodes change the result (-ordered,+shuffled):\n%s", i, diff)
		}
	}
}
