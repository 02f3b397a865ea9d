package algorithm_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	. "github.com/vodascheduler/voda/internal/testutil"
	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/api"
)

func heSRPT() algorithm.Policy {
	return algorithm.HeSRPT{Config: algorithm.DefaultHeSRPT()}
}

func TestHeSRPT(t *testing.T) {
	runCases(t, heSRPT(), map[string]policyCase{
		// S(n) = n/(1+0.1(n−1)) for both; the short job's weight is
		// 10^0.3 ≈ 2 times the long one's: its 11th GPU (gain 0.237 ×
		// 1.995 = 0.473) beats the long job's 6th (0.429), not its 5th
		// (0.494).
		"the shorter job gets the larger share": {
			snap: Snapshot(16,
				MakeJob("short").Workers(1, 16).Remaining(h1).Amdahl(0.1),
				MakeJob("long").Workers(1, 16).Remaining(10*h1).Amdahl(0.1)),
			want: api.Allocation{"short": 11, "long": 5},
			wantReasons: map[api.JobID]string{
				"short": "running: 11 GPUs, more would speed it up but the other GPUs gain more on other jobs",
				"long":  "running: 5 GPUs, more would speed it up but the other GPUs gain more on other jobs",
			},
		},
		// YOLOv3-like: fastest on 4 GPUs in one node, slower across two.
		"a job never grows past its knee": {
			snap: NodeSnapshot([]int{4, 4, 4, 4},
				MakeJob("yolo").Workers(1, 16).Remaining(10*h1).
					SpeedupTable(1, 1.95, 2.31, 2.94, 1.2, 1.28, 1.4, 1.58, 1.7, 1.8, 1.9, 2.08, 2.1, 2.15, 2.2, 2.21)),
			want:        api.Allocation{"yolo": 4},
			wantReasons: map[api.JobID]string{"yolo": "running: 4 GPUs, its fastest size: its speedup curve gains nothing from more"},
		},
		// The curve of the AFS-L note: 7.6 at 8, 6.3 at 9, 9.6 at 16.
		// The hull goes from 8 straight to 16, so the dip is crossed.
		"a dip before a higher point is crossed": {
			snap: Snapshot(16,
				MakeJob("dip").Workers(1, 16).Remaining(10*h1).
					SpeedupTable(0.95, 1.9, 2.85, 3.8, 4.75, 5.7, 6.65, 7.6, 6.3, 6.8, 7.3, 7.8, 8.3, 8.8, 9.2, 9.6)),
			want:        api.Allocation{"dip": 16},
			wantReasons: map[api.JobID]string{"dip": "running: 16 GPUs"},
		},
		// On 4-GPU nodes a job takes 1, 2 or 4 GPUs or whole nodes: the
		// linear job that could use 6 takes 4 and leaves 2 to the other.
		"sizes that pack the nodes": {
			snap: NodeSnapshot([]int{4, 4},
				MakeJob("a").Workers(1, 6).Remaining(h1),
				MakeJob("b").Workers(1, 8).Remaining(100*h1).Amdahl(0.2)),
			want: api.Allocation{"a": 4, "b": 4},
			wantReasons: map[api.JobID]string{
				"a": "running: 4 GPUs, its fastest size that tiles the nodes; larger ones that do not are tried only once their speed is measured",
				"b": "running: 4 GPUs, more would speed it up but the other GPUs gain more on other jobs",
			},
		},
		// 50 s of work left at its size (under three 60 s restarts): it
		// keeps its two workers although it scales perfectly and 6 more
		// GPUs are free.
		// 150 s of work left at its size: nearly done under the policy's
		// 60 s restarts (under 180 s), not under its own 10 s ones (30 s),
		// and growing to 8 (37.5 s left there) repays a 10 s restart.
		"a job whose restarts cost little is not held as nearly finished": {
			snap: Snapshot(8,
				MakeJob("done-soon").Workers(1, 8).Running(2).Remaining(300*time.Second).RestartCost(10*time.Second)),
			want: api.Allocation{"done-soon": 8},
		},
		"… which the policy's restart cost holds": {
			snap: Snapshot(8,
				MakeJob("done-soon").Workers(1, 8).Running(2).Remaining(300*time.Second)),
			want: api.Allocation{"done-soon": 2},
		},
		"a nearly finished job is left alone": {
			snap: Snapshot(8,
				MakeJob("done-soon").Workers(1, 8).Running(2).Remaining(100*time.Second)),
			want:        api.Allocation{"done-soon": 2},
			wantReasons: map[api.JobID]string{"done-soon": "running: 2 GPUs, kept: nearly done (under 3m0s of work left), a resize would not pay"},
		},
		// From 4 to 8 workers buys 1.5 % more throughput: over the hour
		// it would hold, 0.05 × 3540 s = 177 units, less than the 60 s ×
		// 3.4 = 204 a restart loses.
		"a growth that does not pay for its restart is not made": {
			snap: Snapshot(8,
				MakeJob("flat").Workers(1, 8).Running(4).Remaining(40*h1).
					SpeedupTable(1, 1.9, 2.7, 3.4, 3.41, 3.42, 3.44, 3.45)),
			want:        api.Allocation{"flat": 4},
			wantReasons: map[api.JobID]string{"flat": "running: 4 GPUs, kept: growing to 8 GPUs would not repay the restart"},
		},
		// The same job on a runtime that restarts in 16 s (32 s with the
		// margin): 0.05 × 3568 s = 178 units repay 32 × 3.4 = 109.
		"the same growth is made for a job whose restarts cost less": {
			snap: Snapshot(8,
				MakeJob("flat").Workers(1, 8).Running(4).Remaining(40*h1).RestartCost(32*time.Second).
					SpeedupTable(1, 1.9, 2.7, 3.4, 3.41, 3.42, 3.44, 3.45)),
			want: api.Allocation{"flat": 8},
		},
		"the same growth for a job that just waits is made (no restart to pay)": {
			snap: Snapshot(8,
				MakeJob("flat").Workers(1, 8).Remaining(40*h1).
					SpeedupTable(1, 1.9, 2.7, 3.4, 3.41, 3.42, 3.44, 3.45)),
			want: api.Allocation{"flat": 8},
		},
		// Unknown remaining work counts as the mean of the known, 50.5 h:
		// ahead of the 100 h job, behind the 1 h one.
		"a job of unknown length weighs as a typical job": {
			snap: Snapshot(8,
				MakeJob("short").Workers(4, 4).Remaining(h1),
				MakeJob("long").Workers(4, 4).Remaining(100*h1),
				MakeJob("unknown").Workers(4, 4)),
			want: api.Allocation{"short": 4, "unknown": 4, "long": 0},
		},
		// b takes 3 GPUs of the first node; a's workers of 2 fit twice on
		// the second, and the GPU left on the first is no worker of a.
		"GPUs left over that make no larger size are named": {
			snap: NodeSnapshot([]int{4, 4},
				MakeJob("a").Workers(1, 4).PerWorker(2).Remaining(10*h1),
				MakeJob("b").Workers(3, 3).Remaining(h1)),
			want: api.Allocation{"a": 2, "b": 3},
			wantReasons: map[api.JobID]string{
				"a": "running: 4 GPUs (2 workers of 2), more would speed it up but the free GPUs are too few or too scattered for a larger size",
				"b": "running: 3 GPUs",
			},
		},
		// The greedy alone gives the first GPU to the 1-GPU job (worth 1
		// per GPU against the 8-GPU job's 4.71/8 × 1.2 = 0.71), after
		// which the 8-GPU job no longer fits and 7 GPUs sit idle.
		"a running rigid job is not preempted for a small one that would idle its GPUs": {
			snap: Snapshot(8,
				MakeJob("hog").Workers(8, 8).Running(8).Amdahl(0.1),
				MakeJob("late").Workers(1, 1).Amdahl(0.1)),
			want:        api.Allocation{"hog": 8, "late": 0},
			wantReasons: map[api.JobID]string{"late": "waiting: 1 GPUs needed, 0 free"},
		},
		"a waiting rigid job is not blocked by a small one worth less in all": {
			snap: Snapshot(8,
				MakeJob("big").Workers(8, 8).Amdahl(0.1),
				MakeJob("small").Workers(1, 1).Amdahl(0.1)),
			want: api.Allocation{"big": 8, "small": 0},
		},
		// 1000^0.3 ≈ 7.9 times the weight each: seven short jobs (7 × 7.9)
		// are worth more than the long 8-GPU job at 4.71.
		"smaller jobs worth more in all keep their GPUs, the rest idle": {
			snap: Snapshot(8,
				MakeJob("big").Workers(8, 8).Remaining(1000*h1).Amdahl(0.1),
				MakeJob("s1").Workers(1, 1).Remaining(h1), MakeJob("s2").Workers(1, 1).Remaining(h1),
				MakeJob("s3").Workers(1, 1).Remaining(h1), MakeJob("s4").Workers(1, 1).Remaining(h1),
				MakeJob("s5").Workers(1, 1).Remaining(h1), MakeJob("s6").Workers(1, 1).Remaining(h1),
				MakeJob("s7").Workers(1, 1).Remaining(h1)),
			want:        api.Allocation{"big": 0, "s1": 1, "s2": 1, "s3": 1, "s4": 1, "s5": 1, "s6": 1, "s7": 1},
			wantReasons: map[api.JobID]string{"big": "waiting: 8 GPUs needed, 1 free"},
		},
		"a job whose minimum does not fit waits with the reason": {
			snap: Snapshot(4,
				MakeJob("a").Workers(2, 4).Running(4).Remaining(h1),
				MakeJob("big").Workers(6, 8).Remaining(h1)),
			want:        api.Allocation{"a": 4, "big": 0},
			wantReasons: map[api.JobID]string{"big": "waiting: 6 GPUs needed, 0 free"},
		},
	})
}

// The starvation guarantee: a waiting job's weight grows with its waiting
// time without bound, so a long job that would never be served against a
// short one is served once it has waited long enough.
func TestHeSRPTAWaitingJobIsServedEventually(t *testing.T) {
	p := heSRPT()
	at := func(waited time.Duration) int {
		s := Snapshot(4,
			MakeJob("long").Workers(4, 4).Remaining(1000*h1).SubmittedAt(-waited),
			MakeJob("short").Workers(4, 4).Running(4).Remaining(h1))
		r, err := p.Allocate(s)
		if err != nil {
			t.Fatal(err)
		}
		return r.Allocation["long"]
	}
	if got := at(0); got != 0 {
		t.Fatalf("a long job that just arrived got %d workers ahead of a short running one", got)
	}
	// 1000^0.3 ≈ 7.94 times lighter, and the short one's current size
	// counts 1.2 times (9.53): with Aging = 1 day the long job weighs
	// more after about 8.5 days of waiting. Preempting the short one
	// must also pay for its restart: 60 s of its work over the 900 s it
	// has left at 4 workers, 1/15 of its throughput, so the long job
	// needs a weight 1.267 times the short one's, 10.06 times its own
	// at arrival: after 9.06 days.
	for _, c := range []struct {
		days float64
		want int
	}{{8, 0}, {9, 0}, {9.1, 4}, {10, 4}} {
		if got := at(time.Duration(c.days * 24 * float64(time.Hour))); got != c.want {
			t.Errorf("after %v days of waiting the long job got %d workers, want %d", c.days, got, c.want)
		}
	}
}

// On nodes of equal size every size HeSRPT grants packs: it divides a node
// or is whole nodes, or it is the job's minimum or its current size, or
// the job's speed there is known (measured or given).
func TestHeSRPTGrantsSizesThatPack(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	p := heSRPT()
	for iter := range 500 {
		node := []int{2, 4, 8}[r.IntN(3)]
		nodes := make([]int, 1+r.IntN(8))
		for i := range nodes {
			nodes[i] = node
		}
		var jobs []*JobWrapper
		for i := range 1 + r.IntN(12) {
			k := 1
			if r.IntN(3) == 0 {
				k = []int{1, 2}[r.IntN(2)]
			}
			lo := 1 + r.IntN(3)
			j := MakeJob(string(rune('a'+i))).Workers(lo, lo+r.IntN(20)).PerWorker(k).
				Remaining(time.Duration(1+r.IntN(100)) * 10 * time.Minute).Amdahl(r.Float64() / 4)
			if r.IntN(3) == 0 {
				j.Running(lo + r.IntN(j.Max-lo+1))
			}
			jobs = append(jobs, j)
		}
		s := NodeSnapshot(nodes, jobs...)
		// Curves measured everywhere (nil), nowhere, or at a few counts.
		for i := range s.Jobs {
			switch r.IntN(3) {
			case 0:
				s.Jobs[i].Measured = func(int) bool { return false }
			case 1:
				known := map[int]bool{}
				for range 1 + r.IntN(4) {
					known[1+r.IntN(s.Jobs[i].Max)] = true
				}
				s.Jobs[i].Measured = func(n int) bool { return known[n] }
			}
		}
		res, err := p.Allocate(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range s.Jobs {
			n := res.Allocation[j.ID]
			g := n * max(j.GPUsPerWorker, 1)
			if n == 0 || n == j.Min || n == j.Workers || (g <= node && node%g == 0) || g%node == 0 ||
				j.Measured == nil || j.Measured(n) {
				continue
			}
			t.Fatalf("iteration %d: job %s got %d workers of %d GPUs on nodes of %d: a size that does not pack", iter, j.ID, n, max(j.GPUsPerWorker, 1), node)
		}
	}
}

// The greedy's first phase grants at once the segments a heap would serve
// one by one before the first that does not fit whole; the allocation and
// every reason must be the heap's. The snapshots mix small awkward ones,
// nodes of several GPUs with workers of several GPUs, many jobs tied on
// curve and remaining time (so values tie and job IDs decide), and the
// benchmark's large clusters.
func TestHeSRPTLeadingSegments(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	p := algorithm.HeSRPT{Config: algorithm.DefaultHeSRPT()}
	tied := func(jobs, nodes, node int) algorithm.Snapshot {
		var ws []*JobWrapper
		for i := range jobs {
			lo := 1 + r.IntN(2)
			w := MakeJob(fmt.Sprintf("t%04d", jobs-i)).Workers(lo, lo+r.IntN(16)).
				PerWorker([]int{1, 1, 2, 4}[r.IntN(4)]).
				Remaining(time.Duration(1+r.IntN(3)) * time.Hour).Amdahl([]float64{0, 0.05, 0.2}[r.IntN(3)])
			if r.IntN(2) == 0 {
				w.Running(lo + r.IntN(w.Max-lo+1))
			}
			ws = append(ws, w)
		}
		sizes := make([]int, nodes)
		for i := range sizes {
			sizes[i] = node
		}
		return NodeSnapshot(sizes, ws...)
	}
	var snaps []algorithm.Snapshot
	for range 400 {
		snaps = append(snaps, randomSnapshot(r), randomMultiGPUSnapshot(r))
	}
	for range 40 {
		snaps = append(snaps, tied(10+r.IntN(300), 1+r.IntN(64), []int{1, 4, 8}[r.IntN(3)]))
	}
	big := benchSnapshot(1000, 4096)
	multi := benchSnapshot(1000, 4096)
	for i := range multi.Jobs {
		if i%4 == 0 {
			multi.Jobs[i].GPUsPerWorker = []int{2, 4, 8}[i%3]
		}
	}
	for range 4096 / 8 {
		multi.NodeGPUs = append(multi.NodeGPUs, 8)
	}
	snaps = append(snaps, big, multi)
	for i, s := range snaps {
		want, err := algorithm.HeSRPTByHeap(p, s)
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.Allocate(s)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("snapshot %d (%d jobs, %d GPUs): the two phases differ from the heap alone (-heap,+phases):\n%s", i, len(s.Jobs), s.GPUs, d)
		}
	}
}
