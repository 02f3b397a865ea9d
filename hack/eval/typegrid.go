package main

import (
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/simulator"
)

// gridShape is one cluster shape of the type-choice grid.
type gridShape struct {
	name, spec string
	types      []simulator.TypeNodes
	// set: which of gridSets the shape is in.
	set int
}

// gridSets name the grid's sets of shapes, in report order.
var gridSets = []string{
	"The shapes that chose the parameters",
	"The held-out shapes",
	"The shapes added with the count of the jobs held back",
	"The shapes held out from the larger saving under Tiresias",
}

// Sets of gridShape.set: indexes into gridSets, in its order.
const (
	tuningSet = iota
	heldOutSet
	addedSet
	serviceHeldOutSet
)

// gridShapes: the first six chose the rule's parameters (the first three
// at first; the next three were held out until the rule's model of
// elastic growth was chosen on all six); the next six are held out; the
// last twelve were added when the rule came to count the running jobs it
// holds back: six it had been checked on outside the grid (one of them,
// v100=3x8,p100=1x8, prompted that change), then six new ones, and that
// change was chosen looking at all twelve. The last six were chosen, and
// first run, once the larger saving under least attained service
// (typechoice.Config.PreferService) had been chosen on the first 24.
var gridShapes = []gridShape{
	{name: "fast-heavy, three types, 32 GPUs", spec: "v100=4x4,p100=2x4,k80=2x4", set: tuningSet},
	{name: "slow-heavy, three types, 48 GPUs (Gavel's)", spec: "v100=2x4,p100=4x4,k80=6x4", set: tuningSet},
	{name: "balanced, two types, 128 GPUs", spec: "v100=8x8,k80=8x8", set: tuningSet},
	{name: "balanced, three types, 36 GPUs", spec: "v100=3x4,p100=3x4,k80=3x4", set: tuningSet},
	{name: "fast-heavy, two types, 32 GPUs", spec: "v100=6x4,k80=2x4", set: tuningSet},
	{name: "slow-heavy, three types, 224 GPUs", spec: "v100=4x8,p100=8x8,k80=16x8", set: tuningSet},
	{name: "fast-heavy, three types, 64 GPUs", spec: "v100=8x4,p100=4x4,k80=4x4", set: heldOutSet},
	{name: "slow-heavy, two types, 32 GPUs", spec: "p100=2x4,k80=6x4", set: heldOutSet},
	{name: "fast-heavy, two types, 160 GPUs", spec: "v100=16x8,k80=4x8", set: heldOutSet},
	{name: "balanced, two fast types, 32 GPUs", spec: "v100=2x8,p100=2x8", set: heldOutSet},
	{name: "slow-heavy, three types, 44 GPUs", spec: "v100=1x4,p100=2x4,k80=8x4", set: heldOutSet},
	{name: "fast-heavy, three types, 72 GPUs", spec: "v100=12x4,p100=4x4,k80=2x4", set: heldOutSet},
	{name: "fast-heavy, two types, 36 GPUs", spec: "v100=8x4,k80=1x4", set: addedSet},
	{name: "fast-heavy, two fast types, 44 GPUs", spec: "v100=10x4,p100=1x4", set: addedSet},
	{name: "fast-heavy, three types, 72 GPUs on 8-GPU nodes", spec: "v100=6x8,p100=2x8,k80=1x8", set: addedSet},
	{name: "fast-heavy, two types without V100, 40 GPUs", spec: "p100=8x4,k80=2x4", set: addedSet},
	{name: "slow-heavy, two types, 56 GPUs", spec: "v100=2x4,k80=12x4", set: addedSet},
	{name: "fast-heavy, two fast types, one P100 node", spec: "v100=3x8,p100=1x8", set: addedSet},
	{name: "fast-heavy, three types, 32 GPUs on 8-GPU nodes", spec: "v100=2x8,p100=1x8,k80=1x8", set: addedSet},
	{name: "balanced, two fast types, 32 GPUs", spec: "v100=5x4,p100=3x4", set: addedSet},
	{name: "fast-heavy, two types, 48 GPUs", spec: "v100=4x8,k80=2x8", set: addedSet},
	{name: "balanced, two slow types, 32 GPUs", spec: "p100=4x4,k80=4x4", set: addedSet},
	{name: "slow-heavy, two types, 40 GPUs", spec: "v100=1x8,k80=4x8", set: addedSet},
	{name: "balanced, three types, 52 GPUs", spec: "v100=6x4,p100=6x4,k80=1x4", set: addedSet},
	{name: "balanced, three types, 48 GPUs on 8-GPU nodes", spec: "v100=2x8,p100=2x8,k80=2x8", set: serviceHeldOutSet},
	{name: "fast-heavy, two types, 96 GPUs", spec: "v100=20x4,k80=4x4", set: serviceHeldOutSet},
	{name: "fast-heavy, two types without V100, 32 GPUs on 8-GPU nodes", spec: "p100=3x8,k80=1x8", set: serviceHeldOutSet},
	{name: "slow-heavy, three types, 24 GPUs", spec: "v100=1x4,p100=1x4,k80=4x4", set: serviceHeldOutSet},
	{name: "two fast types, P100-heavy, 48 GPUs", spec: "v100=4x4,p100=8x4", set: serviceHeldOutSet},
	{name: "balanced, two types, 96 GPUs on 8-GPU nodes", spec: "v100=6x8,k80=6x8", set: serviceHeldOutSet},
}

// gridLoads are the generated workloads' arrival rates, in jobs per hour
// per 24 V100-equivalent GPUs; gridSeeds how many draws each.
var gridLoads = []float64{0.5, 1, 1.5}

const gridSeeds = 3

// gridCell is one policy on one workload of one shape: every choice's
// results, one per seed (one for the trace).
type gridCell struct {
	shape, workload int // workload: index in gridLoads, or len(gridLoads) for the trace
	policy          string
	runs            map[string][]simulator.HeteroResult
}

// typeGrid is the grid's runs and what the report needs of the table.
type typeGrid struct {
	cells    []*gridCell
	speed    map[string]float64 // each type's mean speed per GPU over V100's
	rates    [][]float64        // [shape][load] jobs per hour
	traceLen int
	runs     int
	seconds  float64
}

// meanSpeeds is each type's one-GPU throughput over V100's, averaged over
// Gavel's job types measured on both.
func meanSpeeds(table *simulator.GavelTable) map[string]float64 {
	out := map[string]float64{}
	for _, t := range table.GPUTypes() {
		sum, n := 0.0, 0
		for _, jt := range table.JobTypes() {
			a, ok1 := table.StepsPerSecond(t, jt, 1)
			b, ok2 := table.StepsPerSecond("v100", jt, 1)
			if ok1 && ok2 && a > 0 && b > 0 {
				sum += a / b
				n++
			}
		}
		if n > 0 {
			out[t] = sum / float64(n)
		}
	}
	return out
}

// runTypeGrid runs every shape × workload × policy × choice.
func runTypeGrid(gavel string) (typeGrid, error) {
	table, err := simulator.ReadGavelThroughputs(filepath.Join(gavel, "simulation_throughputs.json"))
	if err != nil {
		return typeGrid{}, err
	}
	trace, err := simulator.ReadGavelTrace(filepath.Join(gavel, "traces", "physical_cluster", "max_min_fairness.trace"), table)
	if err != nil {
		return typeGrid{}, err
	}
	g := typeGrid{speed: meanSpeeds(table), traceLen: len(trace.Jobs)}
	type task struct {
		cell  *gridCell
		types []simulator.TypeNodes
		w     *simulator.HeteroWorkload
	}
	var tasks []task
	for si, sh := range gridShapes {
		types, err := simulator.ParseTypes(sh.spec)
		if err != nil {
			return typeGrid{}, err
		}
		capacity := 0.0
		for _, t := range types {
			capacity += float64(t.Nodes*t.GPUsPerNode) * g.speed[t.Name]
		}
		var rates []float64
		for li, load := range gridLoads {
			rate := load * capacity / 24
			rates = append(rates, rate)
			var ws []*simulator.HeteroWorkload
			for s := 1; s <= gridSeeds; s++ {
				w, err := simulator.GenerateGavel(table, 300, rate, uint64(s))
				if err != nil {
					return typeGrid{}, err
				}
				ws = append(ws, &w)
			}
			for _, p := range algorithm.Names() {
				c := &gridCell{shape: si, workload: li, policy: p, runs: map[string][]simulator.HeteroResult{}}
				g.cells = append(g.cells, c)
				for _, w := range ws {
					tasks = append(tasks, task{c, types, w})
				}
			}
		}
		g.rates = append(g.rates, rates)
		for _, p := range algorithm.Names() {
			c := &gridCell{shape: si, workload: len(gridLoads), policy: p, runs: map[string][]simulator.HeteroResult{}}
			g.cells = append(g.cells, c)
			tasks = append(tasks, task{c, types, &trace})
		}
	}
	type run struct {
		t      task
		choice string
	}
	var runs []run
	for _, t := range tasks {
		for _, c := range simulator.Choices {
			runs = append(runs, run{t, c})
		}
	}
	results := make([]simulator.HeteroResult, len(runs))
	errs := make([]error, len(runs))
	start := time.Now()
	forEach(len(runs), func(i int) {
		r := runs[i]
		cfg := simulator.HeteroConfig{Policy: r.t.cell.policy, Types: r.t.types, RestartDelay: 30 * time.Second,
			RateLimit: 30 * time.Second, Tiresias: algorithm.DefaultTiresias(), Choice: r.choice, Seed: 1}
		results[i], errs[i] = simulator.RunHetero(cfg, *r.t.w, table)
	})
	for i, err := range errs {
		if err != nil {
			return typeGrid{}, fmt.Errorf("type grid, %s, %s: %w", gridShapes[runs[i].t.cell.shape].spec, runs[i].choice, err)
		}
	}
	for i, r := range runs {
		r.t.cell.runs[r.choice] = append(r.t.cell.runs[r.choice], results[i])
	}
	g.runs, g.seconds = len(runs), time.Since(start).Seconds()
	return g, nil
}

// pooled is the choice's jobs over the cell's runs: their mean JCT, p99
// JCT and the mean makespan.
func (c *gridCell) pooled(choice string) (mean, p99, makespan float64) {
	var jcts []float64
	for _, r := range c.runs[choice] {
		for _, j := range r.Jobs {
			jcts = append(jcts, j.JCT)
		}
		makespan += r.Makespan / float64(len(c.runs[choice]))
	}
	sum := 0.0
	for _, x := range jcts {
		sum += x
	}
	slices.Sort(jcts)
	return sum / float64(len(jcts)), simulator.Percentile(jcts, 99), makespan
}

// versus is Voda's choice against the better pinned choice (the one of
// lower mean JCT): the change in mean JCT, p99 JCT and makespan, in %.
func (c *gridCell) versus() (mean, p99, makespan float64) {
	vm, vp, vs := c.pooled(simulator.ChoiceVoda)
	fm, fp, fs := c.pooled(simulator.ChoiceFastest)
	rm, rp, rs := c.pooled(simulator.ChoiceRandom)
	if rm < fm {
		fm, fp, fs = rm, rp, rs
	}
	return 100 * (vm/fm - 1), 100 * (vp/fp - 1), 100 * (vs/fs - 1)
}

func (g typeGrid) workloadName(shape, w int) string {
	if w == len(gridLoads) {
		return "trace"
	}
	return fmt.Sprintf("%.1f/h", g.rates[shape][w])
}

// writeTypeGrid writes the grid: per shape, every policy's change against
// the better pinned choice on every workload, then the summary of the
// shapes that chose the parameters and of those held out.
func writeTypeGrid(w io.Writer, g typeGrid) {
	fmt.Fprintf(w, `### Other cluster shapes

Voda's choice against the better pinned choice (random or fastest, the one
of lower mean JCT) on thirty cluster shapes, three loads and Gavel's
trace, every policy. The first six shapes chose the rule's parameters (the
fifth a new job must save to leave its fastest type, the fifth a move must
save, and the list model of the wait with its growth under elastic
policies: see pkg/typechoice) — the first three at first, the next three
once they had shown the first model of growth wrong; the next six were
held out. The next twelve came with the rule's count of the jobs a job
holds back, running ones included where the policy takes GPUs from them
for it: six shapes the rule had been checked on outside the grid (on one
of them, `+"`v100=3x8,p100=1x8`"+`, it lost more than 2%% in four cells), then
six new ones; that change was chosen looking at all twelve, so none of
them is held out from it. Under the Tiresias policies a new job leaves its
fastest type only for three tenths less, not a fifth: chosen on the first
twenty-four shapes, where the fifth lost 4.4%% in one cell (Tiresias on
`+"`v100=3x8,p100=1x8`"+` at 1.4/h) and 0.25, 0.3 and 0.35 lose none; the
last six shapes were chosen and first run after that, held out from
it. Loads are 0.5, 1 and 1.5
jobs per hour per 24 V100-equivalent GPUs, a type's GPUs counted at its
mean speed over V100 on Gavel's job types (P100 %.2f, K80 %.2f); each load
is %d draws of 300 jobs (seeds 1–%d), their jobs pooled, and the trace is
`+"`max_min_fairness.trace`"+` (%d jobs). A cell is the change in mean JCT,
then in p99 JCT and in makespan, against the better pinned choice's: below
zero Voda's choice is better. %d runs took %.0f s on this machine.
Reproduce one draw with
`+"`voda simulate --gpu-types SHAPE --gavel ../shared/traces/gavel --jobs 300 --jobs-per-hour RATE --seed N`"+`.

`, g.speed["p100"], g.speed["k80"], gridSeeds, gridSeeds, g.traceLen, g.runs, g.seconds)
	for si, sh := range gridShapes {
		tag := ""
		if sh.set == heldOutSet || sh.set == serviceHeldOutSet {
			tag = ", held out"
		}
		fmt.Fprintf(w, "#### %s (`%s`%s)\n\n", sh.name, sh.spec, tag)
		fmt.Fprint(w, "| Policy |")
		for wi := range len(gridLoads) + 1 {
			fmt.Fprintf(w, " %s: mean (p99, makespan) |", g.workloadName(si, wi))
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, "|---|"+strings.Repeat("---:|", len(gridLoads)+1))
		for _, p := range algorithm.Names() {
			fmt.Fprintf(w, "| %s |", p)
			for _, c := range g.cells {
				if c.shape != si || c.policy != p {
					continue
				}
				m, t, s := c.versus()
				cell := fmt.Sprintf("%+.1f%% (%+.0f%%, %+.0f%%)", m, t, s)
				if m > 2 {
					cell = "**" + cell + "**"
				}
				fmt.Fprintf(w, " %s |", cell)
			}
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "Computed from the tables (bold: more than 2% worse in mean JCT):")
	fmt.Fprintln(w)
	for set, name := range gridSets {
		var means []float64
		var over, tails []string
		for _, c := range g.cells {
			if gridShapes[c.shape].set != set {
				continue
			}
			m, t, _ := c.versus()
			means = append(means, m)
			where := fmt.Sprintf("%s on %s at %s (%+.1f%%)", c.policy, gridShapes[c.shape].spec, g.workloadName(c.shape, c.workload), m)
			if m > 2 {
				over = append(over, where)
			}
			if t > 2 {
				tails = append(tails, fmt.Sprintf("%s on %s at %s (%+.0f%%)", c.policy, gridShapes[c.shape].spec, g.workloadName(c.shape, c.workload), t))
			}
		}
		sum := 0.0
		for _, m := range means {
			sum += m
		}
		line := fmt.Sprintf("%s: %d cells, mean JCT %+.1f%% on average against the better pinned choice, from %+.1f%% to %+.1f%%; ",
			name, len(means), sum/float64(len(means)), slices.Min(means), slices.Max(means))
		if len(over) == 0 {
			line += "no cell more than 2% worse"
		} else {
			line += fmt.Sprintf("%d more than 2%% worse: %s", len(over), strings.Join(over, "; "))
		}
		if len(tails) == 0 {
			line += "; p99 JCT never more than 2% worse."
		} else {
			line += fmt.Sprintf("; p99 JCT more than 2%% worse in %d cells: %s.", len(tails), strings.Join(tails, "; "))
		}
		fmt.Fprintln(w, "- "+line)
	}
	fmt.Fprintln(w)
}

// typeTime is where the time goes on the shape and load of the report
// that showed Voda's choice losing to "fastest": every policy, fastest
// and Voda, and per job where each put it.
type typeTime struct {
	spec    string
	jobs    int
	perHour float64
	fastest map[string]simulator.HeteroResult
	voda    map[string]simulator.HeteroResult
}

func runTypeTime(gavel string) (typeTime, error) {
	table, err := simulator.ReadGavelThroughputs(filepath.Join(gavel, "simulation_throughputs.json"))
	if err != nil {
		return typeTime{}, err
	}
	tt := typeTime{spec: "v100=4x4,p100=2x4,k80=2x4", jobs: 400, perHour: 1,
		fastest: map[string]simulator.HeteroResult{}, voda: map[string]simulator.HeteroResult{}}
	types, err := simulator.ParseTypes(tt.spec)
	if err != nil {
		return typeTime{}, err
	}
	w, err := simulator.GenerateGavel(table, tt.jobs, tt.perHour, 1)
	if err != nil {
		return typeTime{}, err
	}
	names := algorithm.Names()
	results := make([]simulator.HeteroResult, 2*len(names))
	errs := make([]error, len(results))
	forEach(len(results), func(i int) {
		choice := simulator.ChoiceFastest
		if i%2 == 1 {
			choice = simulator.ChoiceVoda
		}
		cfg := simulator.HeteroConfig{Policy: names[i/2], Types: types, RestartDelay: 30 * time.Second,
			RateLimit: 30 * time.Second, Tiresias: algorithm.DefaultTiresias(), Choice: choice, Seed: 1}
		results[i], errs[i] = simulator.RunHetero(cfg, w, table)
	})
	for i, err := range errs {
		if err != nil {
			return typeTime{}, fmt.Errorf("where the time goes, %s: %w", names[i/2], err)
		}
	}
	for i, p := range names {
		tt.fastest[p], tt.voda[p] = results[2*i], results[2*i+1]
	}
	return tt, nil
}

func writeTypeTime(w io.Writer, tt typeTime) {
	fmt.Fprintf(w, `### Where the time goes

`+"`voda simulate --gpu-types %s --gavel ../shared/traces/gavel --jobs %d --jobs-per-hour %g`"+`:
a cluster with more fast GPUs than slow ones, where the earlier rule lost to
"fastest" for every policy (see the discussion). For each policy, the jobs
Voda's choice first put on another type than their fastest, and how long
they and the others took under each choice; and the rule's estimate of a
job's JCT when it gave the job its first type, against the JCT it had
(above 1: the estimate was longer).

| Policy | mean JCT fastest / Voda | jobs not on their fastest type | their mean JCT fastest / Voda | the other jobs' mean JCT fastest / Voda | estimate / JCT, mean over jobs (by first type) |
|---|---|---|---|---|---|
`, tt.spec, tt.jobs, tt.perHour)
	for _, p := range algorithm.Names() {
		f, v := tt.fastest[p], tt.voda[p]
		var moved, kept [2]float64
		nMoved := 0
		est, act := map[string]float64{}, map[string]float64{}
		for i := range v.Jobs {
			fj, vj := f.Jobs[i], v.Jobs[i]
			if vj.Types[0] != fj.Types[0] {
				moved[0] += fj.JCT
				moved[1] += vj.JCT
				nMoved++
			} else {
				kept[0] += fj.JCT
				kept[1] += vj.JCT
			}
			est[vj.Types[0]] += vj.Estimate
			act[vj.Types[0]] += vj.JCT
		}
		nKept := len(v.Jobs) - nMoved
		ratios := []string{}
		for _, t := range slices.Sorted(maps.Keys(est)) {
			ratios = append(ratios, fmt.Sprintf("%s %.2f", t, est[t]/act[t]))
		}
		movedCol := "–"
		if nMoved > 0 {
			movedCol = fmt.Sprintf("%s / %s", hours(moved[0]/float64(nMoved)), hours(moved[1]/float64(nMoved)))
		}
		fmt.Fprintf(w, "| %s | %s / %s | %d | %s | %s / %s | %s |\n", p, hours(f.MeanJCT()), hours(v.MeanJCT()), nMoved, movedCol,
			hours(kept[0]/float64(max(nKept, 1))), hours(kept[1]/float64(max(nKept, 1))), strings.Join(ratios, ", "))
	}
	fmt.Fprintln(w)
}
