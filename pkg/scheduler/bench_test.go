package scheduler_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/quota"
	"github.com/vodascheduler/voda/pkg/scheduler"
)

var sizes = []int{1, 1, 1, 1, 2, 2, 4, 4, 8, 16, 32}

// dip slows a job down when it first spans two 8-GPU nodes: the
// non-concave shape measured profiles show.
func dip(n int) float64 {
	switch {
	case n <= 8:
		return float64(n) * 0.95
	case n <= 12:
		return 6 + float64(n-8)*0.3
	}
	return 7.2 + float64(n-12)*0.6
}

// benchJob draws a job with a Philly-like size, maximum twice the request,
// and a speedup curve: Amdahl for three in four, a node-crossing dip for
// the rest.
func benchJob(r *rand.Rand, i int) scheduler.JobSubmitted {
	req := sizes[r.IntN(len(sizes))]
	ev := scheduler.JobSubmitted{
		ID:        api.JobID(fmt.Sprintf("job-%06d", i)),
		Spec:      api.JobSpec{MinWorkers: 1, MaxWorkers: min(2*req, 64), RequestedWorkers: req},
		Remaining: float64(600 + r.IntN(100000)),
		Speedup:   dip,
	}
	if r.IntN(4) > 0 {
		f := 0.02 + r.Float64()*0.1
		ev.Speedup = func(n int) float64 { return float64(n) / (1 + f*float64(n-1)) }
	}
	return ev
}

// busyEngine returns an engine with nodes × 8 GPUs and jobs submitted and
// scheduled once.
func busyEngine(b *testing.B, policy string, nodes, jobs int) (*scheduler.Engine, *fakeClock, *rand.Rand) {
	c := &fakeClock{t: t0}
	cfg := scheduler.DefaultConfig("gpu", c)
	cfg.Policy, cfg.RateLimit = policy, 0
	e, err := scheduler.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	for i := range nodes {
		if err := e.Step(scheduler.NodeSet{Node: api.Node{Name: api.NodeName(fmt.Sprintf("node-%04d", i)), GPUs: 8}}); err != nil {
			b.Fatal(err)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range jobs {
		if err := e.Step(benchJob(r, i)); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := e.Tick(); err != nil {
		b.Fatal(err)
	}
	return e, c, r
}

// BenchmarkRound measures one full rescheduling (snapshot, policy,
// placement, diff, assume) after a completion and an arrival, on 512 nodes
// × 8 GPUs with 1 000 jobs.
func BenchmarkRound(b *testing.B) {
	for _, policy := range algorithm.Names() {
		b.Run(policy, func(b *testing.B) {
			e, c, r := busyEngine(b, policy, 512, 1000)
			rounds(b, e, c, 1000, submitter(b, e, r))
		})
	}
}

// rounds times rounds of an engine holding jobs: each retires the oldest
// job, submits a new one (number i, with submit) and reschedules, a minute
// after the last.
func rounds(b *testing.B, e *scheduler.Engine, c *fakeClock, jobs int, submit func(i int)) {
	next, oldest := jobs, 0
	b.ReportAllocs()
	for b.Loop() {
		c.t = c.t.Add(time.Minute)
		if err := e.Step(scheduler.JobDeleted{ID: api.JobID(fmt.Sprintf("job-%06d", oldest))}); err != nil {
			b.Fatal(err)
		}
		submit(next)
		next, oldest = next+1, oldest+1
		if _, err := e.Tick(); err != nil {
			b.Fatal(err)
		}
	}
}

// submitter submits bench jobs drawn from r.
func submitter(b *testing.B, e *scheduler.Engine, r *rand.Rand) func(i int) {
	return func(i int) {
		if err := e.Step(benchJob(r, i)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRoundLarge is BenchmarkRound at the size of the largest
// clusters: 100 000 jobs on 32 768 nodes × 8 GPUs (262 144 GPUs). It
// also reports the heap the engine holds (MiB-held). Slow to set up (the
// first round places every job): run it alone, with -benchtime=Nx.
func BenchmarkRoundLarge(b *testing.B) {
	for _, policy := range algorithm.Names() {
		b.Run(policy, func(b *testing.B) {
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			const jobs = 100_000
			e, c, r := busyEngine(b, policy, 32_768, jobs)
			runtime.GC()
			runtime.ReadMemStats(&after)
			held := float64(after.HeapAlloc-before.HeapAlloc) / (1 << 20)
			rounds(b, e, c, jobs, submitter(b, e, r))
			b.ReportMetric(held, "MiB-held")
		})
	}
}

// BenchmarkMemoryPer10000Jobs reports the heap an engine holds for 10 000
// jobs (half running) on 512 nodes.
func BenchmarkMemoryPer10000Jobs(b *testing.B) {
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		e, _, _ := busyEngine(b, algorithm.NameElasticFIFO, 512, 10000)
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MiB/10k-jobs")
		runtime.KeepAlive(e)
	}
}

// BenchmarkRoundQueues measures one rescheduling with 10 000 jobs on 512
// nodes × 8 GPUs, without queues and with the jobs spread over 100 queues
// of equal nominal quota in one cohort (the queues add the split, a policy
// run per queue and the reclaims to the round).
func BenchmarkRoundQueues(b *testing.B) {
	const jobs, queues = 10000, 100
	for _, policy := range []string{algorithm.NameHeSRPT, algorithm.NameElasticFIFO} {
		for _, withQueues := range []bool{false, true} {
			name := policy + "/no-queues"
			if withQueues {
				name = fmt.Sprintf("%s/%d-queues", policy, queues)
			}
			b.Run(name, func(b *testing.B) {
				e, c, r := busyEngine(b, policy, 512, 0)
				var qs []quota.Queue
				if withQueues {
					for i := range queues {
						qs = append(qs, quota.Queue{Name: fmt.Sprintf("team-%03d", i), Cohort: "all", Nominal: 4096 / queues,
							BorrowingLimit: quota.Unlimited, LendingLimit: quota.Unlimited, Weight: 1})
					}
					if err := e.Step(scheduler.SetQueues{Queues: qs}); err != nil {
						b.Fatal(err)
					}
				}
				submit := func(i int) {
					ev := benchJob(r, i)
					if withQueues {
						// Skewed: the first queues get more of the jobs.
						ev.Spec.ClusterQueue = qs[min(r.IntN(queues), r.IntN(queues))].Name
					}
					if err := e.Step(ev); err != nil {
						b.Fatal(err)
					}
				}
				for i := range jobs {
					submit(i)
				}
				if _, err := e.Tick(); err != nil {
					b.Fatal(err)
				}
				rounds(b, e, c, jobs, submit)
			})
		}
	}
}
