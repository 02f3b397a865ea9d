package main

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/simulator"
)

// gpuTypesCluster is Gavel's physical cluster: 8 V100, 16 P100, 24 K80.
var gpuTypesCluster = []simulator.TypeNodes{{Name: "v100", Nodes: 2, GPUsPerNode: 4},
	{Name: "p100", Nodes: 4, GPUsPerNode: 4}, {Name: "k80", Nodes: 6, GPUsPerNode: 4}}

// gpuTypesSection is one workload's runs: every policy with every choice.
type gpuTypesSection struct {
	title string
	runs  map[[2]string]simulator.HeteroResult // policy, choice
}

// runGPUTypes simulates Gavel's generated workloads at three rates and its
// physical-cluster trace, every policy with every way of choosing a type.
func runGPUTypes(gavel string) ([]gpuTypesSection, error) {
	table, err := simulator.ReadGavelThroughputs(filepath.Join(gavel, "simulation_throughputs.json"))
	if err != nil {
		return nil, err
	}
	type wl struct {
		title string
		w     simulator.HeteroWorkload
	}
	var wls []wl
	for _, rate := range []struct {
		perHour float64
		title   string
	}{{0.5, "300 jobs at 0.5 jobs/hour"}, {1, "300 jobs at 1 job/hour"}, {1.5, "300 jobs at 1.5 jobs/hour"}} {
		w, err := simulator.GenerateGavel(table, 300, rate.perHour, 1)
		if err != nil {
			return nil, err
		}
		wls = append(wls, wl{rate.title, w})
	}
	trace, err := simulator.ReadGavelTrace(filepath.Join(gavel, "traces", "physical_cluster", "max_min_fairness.trace"), table)
	if err != nil {
		return nil, err
	}
	wls = append(wls, wl{fmt.Sprintf("max_min_fairness.trace (%d jobs)", len(trace.Jobs)), trace})
	var out []gpuTypesSection
	for _, w := range wls {
		sec := gpuTypesSection{title: w.title, runs: map[[2]string]simulator.HeteroResult{}}
		for _, p := range algorithm.Names() {
			for _, c := range simulator.Choices {
				cfg := simulator.HeteroConfig{Policy: p, Types: gpuTypesCluster, RestartDelay: 30 * time.Second,
					RateLimit: 30 * time.Second, Tiresias: algorithm.DefaultTiresias(), Choice: c, Seed: 1}
				r, err := simulator.RunHetero(cfg, w.w, table)
				if err != nil {
					return nil, fmt.Errorf("%s, %s, %s: %w", w.title, p, c, err)
				}
				sec.runs[[2]string{p, c}] = r
			}
		}
		out = append(out, sec)
	}
	return out, nil
}

// writeGPUTypes writes the section on several GPU types.
func writeGPUTypes(w io.Writer, secs []gpuTypesSection) {
	fmt.Fprint(w, `## Several GPU types (Gavel throughputs)

A cluster like Gavel's physical one (8 V100, 16 P100, 24 K80; here
`+"`v100=2x4,p100=4x4,k80=6x4`"+`), each job running at Gavel's measured steps/s
for its model on each type (`+"`simulation_throughputs.json`"+`, made monotone in
GPUs and filled in between the measured 1, 2, 4, 8), one engine per type
with the same policy, 30 s restart delay, 30 s rate limit, oracle
information. Three ways of giving jobs a type (`+"`--type-choice`"+`): **random**
(each job pinned to a type drawn among those it runs on, as users guessing
would), **fastest** (pinned to the type where its scale factor runs fastest)
and **Voda** (`+"`pkg/typechoice`"+`, as the controller runs it: for each type,
when the job would be done there if the type ran its jobs as a list in its
policy's order, each on the GPUs it asks for (grown into free GPUs under
elastic policies), plus what it would hold back the jobs there (those it goes ahead of, running or waiting, or under arrival order those waiting); a new job goes where it runs fastest unless another
type comes out a fifth lower (three tenths under the Tiresias policies),
and a waiting job moves when another type
comes out a fifth lower, at most once per 10 minutes; a job holding GPUs
keeps its type; see docs/simulator.md). Workloads: Gavel's
generator (uniform job types, Philly-like scale factors, 80% of durations
between 32 minutes and 17 hours on a V100, the rest up to 167 hours) with 300
jobs at 0.5, 1 and 1.5 jobs per hour (seed 1), and Gavel's physical-cluster
trace `+"`max_min_fairness.trace`"+`. The bound is a lower bound on the
mean JCT of the policy's class (rigid: each job at its scale factor)
whatever the choice of types: every job alone on its fastest type at its
best allowed size plus one restart delay, and SRPT on one server of all 48
GPUs processing each job's least GPU-seconds over the types, combined
over subsets of the jobs as on the Pollux workloads, or the fluid bound
with a capacity per type (each type's GPUs shared by the jobs on it, each
job on one type at a time), whichever is larger.
Reproduce one with

`+"```sh"+`
voda simulate --gpu-types v100=2x4,p100=4x4,k80=6x4 --gavel ../shared/traces/gavel --jobs 300 --jobs-per-hour 1
voda simulate --gpu-types v100=2x4,p100=4x4,k80=6x4 --gavel ../shared/traces/gavel \
    --workload ../shared/traces/gavel/traces/physical_cluster/max_min_fairness.trace
`+"```"+`

`)
	var lines []string
	for _, sec := range secs {
		fmt.Fprintf(w, "### %s\n\n", sec.title)
		fmt.Fprintln(w, "| Policy | avg JCT random | fastest | Voda | Voda vs better pinned | p99 JCT random / fastest / Voda | makespan random / fastest / Voda | moves per job (Voda) | bound | Voda / bound |")
		fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
		var gains []float64
		var worseTail []string
		for _, p := range algorithm.Names() {
			r, f, v := sec.runs[[2]string{p, simulator.ChoiceRandom}], sec.runs[[2]string{p, simulator.ChoiceFastest}], sec.runs[[2]string{p, simulator.ChoiceVoda}]
			pinned := min(r.MeanJCT(), f.MeanJCT())
			gain := 100 * (v.MeanJCT()/pinned - 1)
			gains = append(gains, gain)
			if v.P99JCT() > min(r.P99JCT(), f.P99JCT()) {
				worseTail = append(worseTail, p)
			}
			fmt.Fprintf(w, "| %s | %s | %s | **%s** | %+.1f%% | %s / %s / %s | %s / %s / %s | %.2f | %s | %.2f |\n", p,
				hours(r.MeanJCT()), hours(f.MeanJCT()), hours(v.MeanJCT()), gain,
				hours(r.P99JCT()), hours(f.P99JCT()), hours(v.P99JCT()),
				hours(r.Makespan), hours(f.Makespan), hours(v.Makespan), v.MovesPerJob(),
				hours(v.LowerBound), v.MeanJCT()/v.LowerBound)
		}
		fmt.Fprintln(w)
		slices.Sort(gains)
		line := fmt.Sprintf("%s: Voda's choice against the better pinned choice, average JCT %+.1f%% to %+.1f%%", sec.title, gains[0], gains[len(gains)-1])
		if len(worseTail) > 0 {
			line += "; p99 JCT worse than the better pinned choice's for " + strings.Join(worseTail, ", ")
		} else {
			line += "; p99 JCT never worse than the better pinned choice's"
		}
		lines = append(lines, line+".")
	}
	fmt.Fprintln(w, "Computed from the tables:")
	fmt.Fprintln(w)
	for _, l := range lines {
		fmt.Fprintln(w, "- "+l)
	}
	fmt.Fprintln(w)
}

// seedRates are the generated workloads' arrival rates, jobs per hour.
var seedRates = []float64{0.5, 1, 1.5}

// gpuTypeSeeds is every policy's average JCT with Voda's choice of type on
// the generated workloads of seeds 1 to seeds, indexed [rate][seed-1].
type gpuTypeSeeds struct {
	seeds int
	jct   map[string][][]float64 // policy → rate → seed
}

// runGPUTypeSeeds runs every policy with Voda's choice of type on the
// generated workloads of several seeds, so that what one draw of
// arrivals and durations decides is told apart from what a policy does.
func runGPUTypeSeeds(gavel string, seeds int) (gpuTypeSeeds, error) {
	table, err := simulator.ReadGavelThroughputs(filepath.Join(gavel, "simulation_throughputs.json"))
	if err != nil {
		return gpuTypeSeeds{}, err
	}
	out := gpuTypeSeeds{seeds: seeds, jct: map[string][][]float64{}}
	type task struct {
		policy     string
		rate, seed int
		w          *simulator.HeteroWorkload
	}
	var tasks []task
	for ri, rate := range seedRates {
		for s := 1; s <= seeds; s++ {
			w, err := simulator.GenerateGavel(table, 300, rate, uint64(s))
			if err != nil {
				return gpuTypeSeeds{}, err
			}
			for _, p := range algorithm.Names() {
				tasks = append(tasks, task{p, ri, s, &w})
			}
		}
	}
	for _, p := range algorithm.Names() {
		out.jct[p] = make([][]float64, len(seedRates))
		for ri := range seedRates {
			out.jct[p][ri] = make([]float64, seeds)
		}
	}
	errs := make([]error, len(tasks))
	forEach(len(tasks), func(i int) {
		t := tasks[i]
		cfg := simulator.HeteroConfig{Policy: t.policy, Types: gpuTypesCluster, RestartDelay: 30 * time.Second,
			RateLimit: 30 * time.Second, Tiresias: algorithm.DefaultTiresias(), Choice: simulator.ChoiceVoda, Seed: uint64(t.seed)}
		r, err := simulator.RunHetero(cfg, *t.w, table)
		if err != nil {
			errs[i] = fmt.Errorf("seed %d, %s, %s: %w", t.seed, perHour(seedRates[t.rate]), t.policy, err)
			return
		}
		out.jct[t.policy][t.rate][t.seed-1] = r.MeanJCT()
	})
	for _, err := range errs {
		if err != nil {
			return gpuTypeSeeds{}, err
		}
	}
	return out, nil
}

// writeGPUTypeSeeds writes the comparison over seeds: each policy's mean
// of average JCT, and HeSRPT against the best of the other eight seed by
// seed.
func writeGPUTypeSeeds(w io.Writer, s gpuTypeSeeds) {
	fmt.Fprintf(w, `### The generated workloads over %d seeds

One seed is one draw of arrivals, job types and durations, and the order
of the policies can change from one draw to the next. Every policy with
Voda's choice of type on the workloads of seeds 1 to %d (the tables above
are seed 1), 300 jobs each: the mean over the seeds of the average JCT,
and how HeSRPT's average JCT compares with the best of the other eight
policies on the same seed (below 1: HeSRPT is ahead).

`, s.seeds, s.seeds)
	fmt.Fprint(w, "| Policy |")
	for _, r := range seedRates {
		fmt.Fprintf(w, " %s |", perHour(r))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "|---|"+strings.Repeat("---:|", len(seedRates)))
	mean := func(xs []float64) float64 {
		sum := 0.0
		for _, x := range xs {
			sum += x
		}
		return sum / float64(len(xs))
	}
	for _, p := range algorithm.Names() {
		fmt.Fprintf(w, "| %s |", p)
		for ri := range seedRates {
			fmt.Fprintf(w, " %s |", hours(mean(s.jct[p][ri])))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	for ri, r := range seedRates {
		var ratios []string
		ahead, lo, hi := 0, 0.0, 0.0
		for i := range s.seeds {
			best, bestP := 0.0, ""
			for _, p := range algorithm.Names() {
				if v := s.jct[p][ri][i]; p != algorithm.NameHeSRPT && (bestP == "" || v < best) {
					best, bestP = v, p
				}
			}
			q := s.jct[algorithm.NameHeSRPT][ri][i] / best
			if q < 1 {
				ahead++
			}
			if i == 0 || q < lo {
				lo = q
			}
			if i == 0 || q > hi {
				hi = q
			}
			ratios = append(ratios, fmt.Sprintf("%.3f (%s)", q, bestP))
		}
		fmt.Fprintf(w, "- %s: HeSRPT ahead of the best of the eight on %d of %d seeds, ratio %.3f to %.3f; by seed: %s.\n",
			perHour(r), ahead, s.seeds, lo, hi, strings.Join(ratios, ", "))
	}
	fmt.Fprintln(w)
}

// perHour writes an arrival rate: "1 job/hour", "0.5 jobs/hour".
func perHour(r float64) string {
	if r == 1 {
		return "1 job/hour"
	}
	return fmt.Sprintf("%v jobs/hour", r)
}
