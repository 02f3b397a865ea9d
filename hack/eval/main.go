// Command eval regenerates docs/evaluation.md: every policy on the Pollux
// OSDI'21 artifact's workloads at four loads, next to the published results
// and the lower bounds. It reads the data from the shared traces directory
// and never copies it. Run it with `make eval`.
package main

import (
	"bytes"
	"cmp"
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/vodascheduler/voda/internal/parallel"
	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/model"
	"github.com/vodascheduler/voda/pkg/simulator"
)

//go:embed discussion.md
var discussion string

var loads = []string{"0.5", "1.0", "1.5", "2.0"}

func main() {
	traces := flag.String("traces", "../shared/traces/pollux-adaptdl", "the Pollux artifact data directory")
	out := flag.String("out", "docs/evaluation.md", "the report to write")
	plots := flag.String("plots", "docs/eval", "directory for the SVG plots")
	gavel := flag.String("gavel", "../shared/traces/gavel", "Gavel's data directory, for the runs on several GPU types")
	shockwave := flag.String("shockwave", "../shared/traces/shockwave", "Shockwave's data directory, for the runs with teams")
	flag.Parse()
	if err := run(*traces, *gavel, *shockwave, *out, *plots); err != nil {
		fmt.Fprintln(os.Stderr, "eval:", err)
		os.Exit(1)
	}
}

func workloadDir(traces, load string) string {
	if load == "1.0" {
		return filepath.Join(traces, "workloads")
	}
	return filepath.Join(traces, "workloads-"+load)
}

// artifactConfig returns the Pollux artifact's conditions for a policy.
func artifactConfig(policy string) simulator.Config {
	return simulator.Config{Policy: policy, Nodes: 16, GPUsPerNode: 4, RestartDelay: 30 * time.Second,
		Interval: time.Minute, Tiresias: algorithm.PolluxArtifactTiresias()}
}

// vodaConfig returns Voda's own defaults: event-driven with a 30 s rate
// limit and the original's Tiresias settings.
func vodaConfig(policy string) simulator.Config {
	return simulator.Config{Policy: policy, Nodes: 16, GPUsPerNode: 4, RestartDelay: 30 * time.Second,
		RateLimit: 30 * time.Second, Tiresias: algorithm.DefaultTiresias()}
}

type runKey struct{ table, load, policy string }

// evalJob is one simulation of the report.
type evalJob struct {
	key runKey
	cfg simulator.Config
	w   simulator.Workload
}

func run(traces, gavel, shockwave, out, plots string) error {
	cat, err := model.LoadProfiles(filepath.Join(traces, "profiles"))
	if err != nil {
		return err
	}
	sc := simulator.ModelCatalog(cat)
	workloads := map[string][]simulator.Workload{}
	for _, l := range loads {
		if workloads[l], err = simulator.ReadWorkloads(workloadDir(traces, l), sc); err != nil {
			return err
		}
	}
	realistic, err := simulator.ReadWorkloads(filepath.Join(traces, "workloads-realistic"), sc)
	if err != nil {
		return err
	}
	type job = evalJob
	var jobs []job
	for _, l := range loads {
		for _, p := range algorithm.Names() {
			for _, w := range workloads[l] {
				jobs = append(jobs, job{runKey{"artifact", l, p}, artifactConfig(p), w})
			}
		}
	}
	for _, l := range loads {
		for _, p := range algorithm.Names() {
			for _, w := range workloads[l] {
				cfg := artifactConfig(p)
				cfg.Runtime, cfg.RestartDelay = simulator.RuntimePyTorch, api.PyTorchRestart
				jobs = append(jobs, job{runKey{"pytorch", l, p}, cfg, w})
			}
		}
	}
	for _, p := range algorithm.Names() {
		for _, w := range workloads["1.0"] {
			jobs = append(jobs, job{runKey{"voda", "1.0", p}, vodaConfig(p), w})
			est := artifactConfig(p)
			est.Information = simulator.InfoEstimated
			jobs = append(jobs, job{runKey{"estimated", "1.0", p}, est, w})
		}
	}
	adaptive, err := adaptiveJobs(workloads, realistic)
	if err != nil {
		return err
	}
	jobs = append(jobs, adaptive...)
	results := make([]simulator.Result, len(jobs))
	errs := make([]error, len(jobs))
	start := time.Now()
	forEach(len(jobs), func(i int) {
		results[i], errs[i] = simulator.Run(jobs[i].cfg, jobs[i].w, sc)
	})
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "eval: %d runs in %.1fs\n", len(jobs), time.Since(start).Seconds())
	byKey := map[runKey][]simulator.Result{}
	for i, j := range jobs {
		byKey[j.key] = append(byKey[j.key], results[i])
	}
	published, err := readPublished(traces, workloads)
	if err != nil {
		return err
	}
	types, err := runGPUTypes(gavel)
	if err != nil {
		return err
	}
	seeds, err := runGPUTypeSeeds(gavel, 8)
	if err != nil {
		return err
	}
	grid, err := runTypeGrid(gavel)
	if err != nil {
		return err
	}
	typeTimes, err := runTypeTime(gavel)
	if err != nil {
		return err
	}
	rigid, err := runRigid()
	if err != nil {
		return err
	}
	teamSets, err := runTeams(shockwave, workloads["1.0"], sc)
	if err != nil {
		return err
	}
	var doc bytes.Buffer
	writeReport(&doc, byKey, published, types, seeds, grid, typeTimes, rigid, teamSets)
	if err := os.WriteFile(out, doc.Bytes(), 0o644); err != nil {
		return err
	}
	return writePlots(plots, byKey)
}

// forEach calls f with 0 to n−1, on every core.
func forEach(n int, f func(i int)) { parallel.For(n, runtime.GOMAXPROCS(0), f) }

// agg is the mean over workloads of per-workload metrics.
type agg struct {
	avg, p99, makespan, util, eff, rescales, restarts, bound float64
}

func aggregate(rs []simulator.Result) agg {
	var a agg
	for _, r := range rs {
		s := simulator.Summarise(r)
		a.avg += s.AvgJCT
		a.p99 += s.P99JCT
		a.makespan += s.Makespan
		a.util += s.GPUUtil
		a.eff += s.EffUtil
		a.rescales += s.RescalesPerJob
		a.restarts += s.RestartsPerJob
		a.bound += s.LowerBound
	}
	n := float64(len(rs))
	return agg{a.avg / n, a.p99 / n, a.makespan / n, a.util / n, a.eff / n, a.rescales / n, a.restarts / n, a.bound / n}
}

// publishedRun is a published system's mean over workloads at one load.
type publishedRun struct {
	avg, p99, makespan float64
	// byWorkload is each workload's average JCT.
	byWorkload map[string]float64
}

// readPublished reads the artifact's per-job JCTs and derives the same
// metrics as ours: mean over workloads of the average JCT, of the
// nearest-rank p99, and of the makespan (last completion − first arrival).
func readPublished(traces string, workloads map[string][]simulator.Workload) (map[string]map[string]publishedRun, error) {
	out := map[string]map[string]publishedRun{}
	for _, sys := range []string{"pollux", "optimus", "tiresias"} {
		out[sys] = map[string]publishedRun{}
		for _, l := range loads {
			path := filepath.Join(traces, "reference-results", "results-jobload", sys+"-"+l, "summary.json")
			raw, err := os.ReadFile(path)
			if err != nil {
				return nil, err
			}
			var sum struct {
				JCTs map[string]map[string]float64 `json:"jcts"`
			}
			if err := json.Unmarshal(raw, &sum); err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			pr := publishedRun{byWorkload: map[string]float64{}}
			for _, w := range workloads[l] {
				jcts := sum.JCTs[w.Name]
				if len(jcts) == 0 {
					return nil, fmt.Errorf("%s has no results for %s", path, w.Name)
				}
				var vals []float64
				first, last := math.Inf(1), 0.0
				for _, j := range w.Jobs {
					v, ok := jcts[j.Name]
					if !ok {
						return nil, fmt.Errorf("%s has no result for job %s of %s", path, j.Name, w.Name)
					}
					vals = append(vals, v)
					first, last = min(first, j.Submit.Seconds()), max(last, j.Submit.Seconds()+v)
				}
				slices.Sort(vals)
				var sumv float64
				for _, v := range vals {
					sumv += v
				}
				pr.avg += sumv / float64(len(vals))
				pr.byWorkload[w.Name] = sumv / float64(len(vals))
				pr.p99 += simulator.Percentile(vals, 99)
				pr.makespan += last - first
			}
			n := float64(len(workloads[l]))
			out[sys][l] = publishedRun{pr.avg / n, pr.p99 / n, pr.makespan / n, pr.byWorkload}
		}
	}
	return out, nil
}

// tuned are the workloads HeSRPT's parameters were chosen on; the others
// are held out.
var tuned = map[string]bool{"workload-1": true, "workload-2": true, "workload-3": true, "workload-4": true}

// writeHeldOut compares HeSRPT with Pollux on the tuning workloads and on
// the held-out ones apart.
func writeHeldOut(w io.Writer, byKey map[runKey][]simulator.Result, published map[string]map[string]publishedRun) {
	fmt.Fprint(w, `### HeSRPT on the workloads it was tuned on and on the others

HeSRPT's parameters were chosen on workloads 1–4 only; 5–8 are held out.
Mean over the four workloads of the average JCT:

`)
	heldOutTable(w, byKey, published, "artifact")
}

// heldOutTable compares HeSRPT's runs of a table with published Pollux on
// the tuning workloads and on the held-out ones apart.
func heldOutTable(w io.Writer, byKey map[runKey][]simulator.Result, published map[string]map[string]publishedRun, table string) {
	fmt.Fprintln(w, "| Load | HeSRPT, 1–4 | Pollux, 1–4 | ratio | HeSRPT, 5–8 | Pollux, 5–8 | ratio |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|")
	for _, l := range loads {
		row := []string{l + "×"}
		for _, in := range []bool{true, false} {
			var ours, theirs, n float64
			for _, r := range byKey[runKey{table, l, algorithm.NameHeSRPT}] {
				if tuned[r.Workload] != in {
					continue
				}
				ours += simulator.Summarise(r).AvgJCT
				theirs += published["pollux"][l].byWorkload[r.Workload]
				n++
			}
			row = append(row, fmt.Sprintf("%.0f s", ours/n), fmt.Sprintf("%.0f s", theirs/n), fmt.Sprintf("%.2f", ours/theirs))
		}
		fmt.Fprintln(w, "| "+strings.Join(row, " | ")+" |")
	}
	fmt.Fprintln(w)
}

func hours(sec float64) string { return fmt.Sprintf("%.1f h", sec/3600) }

func writeReport(w io.Writer, byKey map[runKey][]simulator.Result, published map[string]map[string]publishedRun, types []gpuTypesSection, seeds gpuTypeSeeds, grid typeGrid, typeTimes typeTime, rigid rigidRuns, teamSets []teamRuns) {
	fmt.Fprint(w, `# Evaluation

Generated by `+"`make eval`"+` (hack/eval) from the Pollux OSDI'21 artifact data: the
8 workloads × 160 jobs at 1.0× load (80, 240 and 320 jobs at 0.5×, 1.5× and
2.0×), the measured per-model profiles, and the authors' per-job results for
Pollux, Optimus+Oracle and Tiresias. Do not edit by hand; edit
hack/eval/discussion.md for the discussion at the end.

Every number is the mean over the 8 workloads of a per-workload metric.
Jobs keep the workload's batch size; each may use 1 to the largest GPU count
whose per-GPU batch stays at or above its model's minimum (at most 64); the
rigid policies (FIFO, SRJF, Tiresias) run the workload's GPU count. Every
worker holds one GPU (k = 1): the Pollux workloads give GPU counts only, and
the artifact's jobs ran one process per GPU. Policies
see true speedup curves and remaining times, and placement each job's
measured step time on every layout (docs/simulator.md). Utilisation is allocated
GPU-seconds over 64 GPUs × makespan; *useful* utilisation weights them by
each job's scaling efficiency. The bound is the lower bound on mean JCT of
the policy's class, the larger of two: some jobs alone at their best size
and the others by preemptive SRPT on the total capacity without them, and
a fluid bound in which all jobs share the 64 GPUs, each no faster than at
its best size and paying for speed in GPUs along its own curve
(docs/simulator.md): rigid for FIFO/SRJF/Tiresias, elastic GPU count with a
fixed batch for the others.

## Pollux-artifact conditions

16 nodes × 4 GPUs, rescheduling every 60 s, a 30 s restart delay on every
allocation change, Tiresias with two queues split at 57 600 GPU-s of executed
time × requested GPUs and no promotion (`+"`voda simulate --baseline pollux-artifact`"+`).

`)
	for _, l := range loads {
		fmt.Fprintf(w, "### %s× load\n\n", l)
		fmt.Fprintln(w, "| Policy | avg JCT | p99 JCT | makespan | GPU util | useful util | rescales/job | restarts/job | bound | JCT / bound |")
		fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
		for _, p := range algorithm.Names() {
			a := aggregate(byKey[runKey{"artifact", l, p}])
			fmt.Fprintf(w, "| %s | %.0f s | %.0f s | %s | %.0f%% | %.0f%% | %.2f | %.2f | %.0f s | %.2f |\n",
				p, a.avg, a.p99, hours(a.makespan), 100*a.util, 100*a.eff, a.rescales, a.restarts, a.bound, a.avg/a.bound)
		}
		for _, sys := range []struct{ key, name string }{{"pollux", "Pollux (published)"}, {"optimus", "Optimus+Oracle (published)"}, {"tiresias", "Tiresias (published)"}} {
			pr := published[sys.key][l]
			fmt.Fprintf(w, "| *%s* | %.0f s | %.0f s | %s | | | | | | |\n", sys.name, pr.avg, pr.p99, hours(pr.makespan))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "### Mean average JCT by load")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| Policy | "+strings.Join(withSuffix(loads, "×"), " | ")+" |")
	fmt.Fprintln(w, "|---|"+strings.Repeat("---:|", len(loads)))
	for _, p := range algorithm.Names() {
		row := []string{p}
		for _, l := range loads {
			row = append(row, fmt.Sprintf("%.0f s", aggregate(byKey[runKey{"artifact", l, p}]).avg))
		}
		fmt.Fprintln(w, "| "+strings.Join(row, " | ")+" |")
	}
	for _, sys := range []struct{ key, name string }{{"pollux", "*Pollux (published)*"}, {"optimus", "*Optimus+Oracle (published)*"}, {"tiresias", "*Tiresias (published)*"}} {
		row := []string{sys.name}
		for _, l := range loads {
			row = append(row, fmt.Sprintf("%.0f s", published[sys.key][l].avg))
		}
		fmt.Fprintln(w, "| "+strings.Join(row, " | ")+" |")
	}
	fmt.Fprintln(w)
	writeHeldOut(w, byKey, published)
	fmt.Fprintln(w, "## Findings (computed)")
	fmt.Fprintln(w)
	for _, line := range findings(byKey, published) {
		fmt.Fprintln(w, "- "+line)
	}
	fmt.Fprintln(w)
	fmt.Fprint(w, `## Voda's own conditions at 1.0× load

Event-driven rescheduling with a 30 s rate limit and the original Voda's
Tiresias settings (3 600 GPU-s since the last start, promotion after waiting
8× the last run); otherwise as above.

`)
	fmt.Fprintln(w, "| Policy | avg JCT | p99 JCT | makespan | GPU util | useful util | rescales/job | restarts/job | JCT / bound |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, p := range algorithm.Names() {
		a := aggregate(byKey[runKey{"voda", "1.0", p}])
		fmt.Fprintf(w, "| %s | %.0f s | %.0f s | %s | %.0f%% | %.0f%% | %.2f | %.2f | %.2f |\n",
			p, a.avg, a.p99, hours(a.makespan), 100*a.util, 100*a.eff, a.rescales, a.restarts, a.avg/a.bound)
	}
	fmt.Fprintln(w)
	fmt.Fprint(w, `## Estimated information at 1.0× load

Pollux-artifact conditions as above, but the policies see the estimator's
remaining time and speedup curve (pkg/estimator, docs/estimator.md)
instead of the true ones: every minute each running job reports its step
time at its current size, as a training script reports each epoch. The
estimator's error is that of the remaining time at one GPU (what SRJF and
AFS-L rank by, and the scale of every speedup-driven decision) after a
job's 1st, 3rd and 10th report, pooled over the workloads' jobs.

`)
	fmt.Fprintln(w, "| Policy | avg JCT, oracle | avg JCT, estimated | change | error after 1 report (median / p90) | after 3 | after 10 |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|")
	for _, p := range algorithm.Names() {
		o, e := aggregate(byKey[runKey{"artifact", "1.0", p}]), aggregate(byKey[runKey{"estimated", "1.0", p}])
		row := fmt.Sprintf("| %s | %.0f s | %.0f s | %+.1f%% |", p, o.avg, e.avg, 100*(e.avg/o.avg-1))
		for _, k := range simulator.EstimateCheckpoints {
			var errs []float64
			for _, r := range byKey[runKey{"estimated", "1.0", p}] {
				errs = append(errs, r.EstimateErrors[k]...)
			}
			slices.Sort(errs)
			if len(errs) == 0 {
				row += " – |"
				continue
			}
			row += fmt.Sprintf(" %.0f%% / %.0f%% (%d jobs) |", 100*simulator.Percentile(errs, 50), 100*simulator.Percentile(errs, 90), len(errs))
		}
		fmt.Fprintln(w, row)
	}
	fmt.Fprintln(w)
	writePyTorch(w, byKey, published)
	writeAdaptive(w, byKey, published)
	writeRigid(w, rigid)
	writeTeams(w, teamSets)
	writeGPUTypes(w, types)
	writeGPUTypeSeeds(w, seeds)
	writeTypeGrid(w, grid)
	writeTypeTime(w, typeTimes)
	fmt.Fprint(w, `## Plots

Workload 6 at 1.0× load (the workload of the Pollux testbed experiment),
Pollux-artifact conditions:

![JCT CDF](eval/workload-6-jct-cdf.svg)

![GPUs allocated](eval/workload-6-gpus.svg)

`)
	fmt.Fprint(w, discussion)
}

func withSuffix(xs []string, s string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = x + s
	}
	return out
}

// findings states, from the numbers, which policy wins where and how the
// fidelity check came out.
func findings(byKey map[runKey][]simulator.Result, published map[string]map[string]publishedRun) []string {
	var out []string
	tir := aggregate(byKey[runKey{"artifact", "1.0", algorithm.NameTiresias}]).avg
	pub := published["tiresias"]["1.0"].avg
	verdict := "within"
	if math.Abs(tir-pub)/pub > 0.10 {
		verdict = "OUTSIDE"
	}
	out = append(out, fmt.Sprintf("Fidelity: Tiresias at 1.0× averages %.0f s against the published %.0f s (%+.1f%%, %s the ±10%% acceptance band).",
		tir, pub, 100*(tir-pub)/pub, verdict))
	var tirByLoad []string
	for _, l := range loads {
		tirByLoad = append(tirByLoad, fmt.Sprintf("%.0f s", aggregate(byKey[runKey{"artifact", l, algorithm.NameTiresias}]).avg))
	}
	out = append(out, "Tiresias by load (0.5×→2.0×): "+strings.Join(tirByLoad, ", ")+".")
	for _, l := range loads {
		type pv struct {
			p string
			v float64
		}
		var vs []pv
		for _, p := range algorithm.Names() {
			vs = append(vs, pv{p, aggregate(byKey[runKey{"artifact", l, p}]).avg})
		}
		slices.SortStableFunc(vs, func(a, b pv) int { return cmp.Compare(a.v, b.v) })
		var order []string
		for _, x := range vs {
			order = append(order, x.p)
		}
		best := vs[0]
		out = append(out, fmt.Sprintf("%s×: best average JCT %s (%.0f s, %.0f%% of published Pollux's %.0f s); order: %s.",
			l, best.p, best.v, 100*best.v/published["pollux"][l].avg, published["pollux"][l].avg, strings.Join(order, " < ")))
	}
	return out
}

func writePlots(dir string, byKey map[runKey][]simulator.Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var rs []simulator.Result
	for _, p := range algorithm.Names() {
		for _, r := range byKey[runKey{"artifact", "1.0", p}] {
			if r.Workload == "workload-6" {
				rs = append(rs, r)
			}
		}
	}
	var cdf, gpus bytes.Buffer
	if err := simulator.PlotJCTCDF(&cdf, "Job completion time, workload 6, 1.0× load", rs); err != nil {
		return err
	}
	if err := simulator.PlotGPUs(&gpus, "GPUs allocated, workload 6, 1.0× load", rs); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "workload-6-jct-cdf.svg"), cdf.Bytes(), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "workload-6-gpus.svg"), gpus.Bytes(), 0o644)
}

// writePyTorch compares the artifact's 30 s restarts with what a PyTorch
// job's resize measured under Voda's torchrun settings.
func writePyTorch(w io.Writer, byKey map[runKey][]simulator.Result, published map[string]map[string]publishedRun) {
	fmt.Fprintf(w, `## PyTorch jobs: restarts as measured under torchrun

Pollux-artifact conditions as above, but every start, resize and move
idles a job for %.0f s instead of 30 s — the slowest resize measured with
real torchrun under Voda's rendezvous settings (a scale-in; starts,
scale-outs and whole-job restarts took 6–10 s; docs/design-notes.md,
"Resize cost") — and the policies are told so, as the controller tells
them for PyTorch jobs (HeSRPT weighs a restart at twice that, %.0f s,
where it assumes 60 s; `+"`voda simulate --runtime pytorch`"+`). Mean
average JCT over the 8 workloads, with the change from the 30 s runs.

`, api.PyTorchRestart.Seconds(), 2*api.PyTorchRestart.Seconds())
	fmt.Fprintln(w, "| Policy | "+strings.Join(withSuffix(loads, "×"), " | ")+" | p99 at 1.0× | restarts/job at 1.0× | rescales/job at 1.0× |")
	fmt.Fprintln(w, "|---|"+strings.Repeat("---:|", len(loads)+3))
	for _, p := range algorithm.Names() {
		row := []string{p}
		for _, l := range loads {
			a, b := aggregate(byKey[runKey{"artifact", l, p}]), aggregate(byKey[runKey{"pytorch", l, p}])
			row = append(row, fmt.Sprintf("%.0f s (%+.1f%%)", b.avg, 100*(b.avg/a.avg-1)))
		}
		a, b := aggregate(byKey[runKey{"artifact", "1.0", p}]), aggregate(byKey[runKey{"pytorch", "1.0", p}])
		row = append(row, fmt.Sprintf("%.0f s (%+.1f%%)", b.p99, 100*(b.p99/a.p99-1)),
			fmt.Sprintf("%.2f (was %.2f)", b.restarts, a.restarts), fmt.Sprintf("%.2f (was %.2f)", b.rescales, a.rescales))
		fmt.Fprintln(w, "| "+strings.Join(row, " | ")+" |")
	}
	row := []string{"*Pollux (published)*"}
	for _, l := range loads {
		row = append(row, fmt.Sprintf("%.0f s", published["pollux"][l].avg))
	}
	fmt.Fprintln(w, "| "+strings.Join(append(row, "", "", ""), " | ")+" |")
	fmt.Fprintln(w)
}
