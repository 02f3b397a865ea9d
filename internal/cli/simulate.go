package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/model"
	"github.com/vodascheduler/voda/pkg/quota"
	"github.com/vodascheduler/voda/pkg/simulator"
)

type simulateFlags struct {
	workload, profiles, policies, baseline string
	information                            string
	nodes, gpusPerNode, jobs, perWorker    int
	restartDelay, rateLimit, interval      time.Duration
	runtime                                string
	adaptiveBatch                          bool
	load                                   float64
	seed                                   uint64
	rigidShare                             float64
	output, perJob, plot, html             string
	policyParams                           []string
	queues, spread, gpuType                string
	teams                                  int
}

func newSimulateCmd() *cobra.Command {
	f := &simulateFlags{}
	h := &heteroFlags{}
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Replay a workload through the scheduler on a simulated GPU cluster",
		Long: `Replay a workload through Voda's real scheduling engine (policies, placement,
rate limit, plan diff) on a simulated cluster in virtual time, and report job
completion times, queueing, makespan, utilisation, rescales and restarts next
to the lower bound no policy of its class can beat.

With no flags it runs every policy on a built-in synthetic workload (160 jobs,
Philly-like sizes and arrivals, 8 hours) on 16 nodes × 4 GPUs with a model
catalog fitted from measured profiles, so it needs no data files.

Jobs run at a fixed global batch size. Each job's worker range is 1 to the
largest GPU count whose per-GPU batch stays at or above the model's minimum
(at most 64); the rigid policies (FIFO, SRJF, Tiresias) give the workload's
GPU count. Every allocation change idles the job for --restart-delay.
With --information oracle (the default) policies see each job's true
speedup curve and remaining time, and placement its step time on every
layout, so a job goes where the profiles measure it fastest; with
estimated they see the estimator's, and jobs are packed.

A worker holds --gpus-per-worker GPUs (default 1), or what the workload's
optional gpus_per_worker column says for its job; policies then decide
worker counts, each worker sits whole on one node, and a job's rigid size is
its GPUs rounded up to whole workers. The table adds a GPUS/WORKER column
whenever a worker holds more than one GPU.

With --gpu-types the cluster has several GPU types (one engine per type, each
with the policy) and jobs run at Gavel's measured throughputs per type
(--gavel); --type-choice compares pinning each job to a random type, to its
fastest type, and Voda's choice of type (pkg/typechoice), which moves jobs
between types when that pays.

With --queues (ClusterQueue objects in a YAML file) or --teams N the GPUs are
split among teams' queues as the controller splits them (docs/queues.md):
jobs name their queue in the workload's queue column, or --spread spreads
them; each queue's jobs also run alone on its nominal quota, and the report
adds each queue's mean JCT, sharing incentive, time below its quota with work
waiting, and the reclaims done by shrinking. Every run reports its jobs'
finish-time fairness ρ (Shockwave's).

Every number printed is deterministic for the same inputs except sim_wall_s.`,
		Example: `  voda simulate
  voda simulate --policy ElasticFIFO,AFS-L --jobs 400 --load 1.5
  voda simulate --rigid-share 0.5 --load 1.5
  voda simulate --workload ../shared/traces/pollux-adaptdl/workloads \
      --profiles ../shared/traces/pollux-adaptdl/profiles --baseline pollux-artifact --policy Tiresias
  voda simulate --output json --per-job jobs.csv --plot plots/
  voda simulate --policy HeSRPT --html hesrpt.html
  voda simulate --policy HeSRPT --policy-param hesrpt.exponent=0.2 --policy-param hesrpt.aging=4h
  voda simulate --gpu-types v100=2x4,p100=4x4,k80=6x4 --gavel ../shared/traces/gavel --jobs 300 --jobs-per-hour 1
  voda simulate --teams 4 --spread half
  voda simulate --queues teams.yaml --workload jobs-with-a-queue-column.csv
  voda simulate --gavel ../shared/traces/shockwave/tacc_throughputs.json --gpu-type v100 \
      --workload ../shared/traces/shockwave/traces/jobs120_100_40.trace --nodes 8 --teams 4 --spread half`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, name := range []string{"queues", "teams", "spread", "gpu-type", "adaptive-batch"} {
				if cmd.Flags().Changed(name) && h.gpuTypes != "" {
					return usageError{fmt.Errorf("--%s applies to a cluster of one GPU type, not with --gpu-types", name)}
				}
			}
			if h.gpuTypes != "" {
				return runHetero(cmd, f, h)
			}
			for _, name := range []string{"type-choice", "jobs-per-hour"} {
				if cmd.Flags().Changed(name) {
					return usageError{fmt.Errorf("--%s applies only with --gpu-types", name)}
				}
			}
			if cmd.Flags().Changed("gavel") != (f.gpuType != "") {
				return usageError{errors.New("--gavel without --gpu-types needs --gpu-type (and --workload, a Gavel or Shockwave .trace file): the GPU type whose throughputs the jobs run at")}
			}
			return runSimulate(cmd, f, h)
		},
	}
	h.add(cmd)
	fl := cmd.Flags()
	fl.StringVar(&f.workload, "workload", "", "workload CSV file, or a directory whose *.csv files are each run (default: a synthetic workload)")
	fl.StringVar(&f.profiles, "profiles", "", "directory of measured model profiles (default: the built-in fitted catalog)")
	fl.StringVar(&f.policies, "policy", "all", "policies to compare, comma-separated, or all")
	fl.IntVar(&f.nodes, "nodes", 16, "nodes in the simulated cluster")
	fl.IntVar(&f.gpusPerNode, "gpus-per-node", 4, "GPUs per node")
	fl.IntVar(&f.perWorker, "gpus-per-worker", 1, "GPUs each worker holds, on one node, for jobs whose workload row does not say (torchrun's --nproc-per-node)")
	fl.DurationVar(&f.restartDelay, "restart-delay", 30*time.Second, "idle time after every start, resize or migration (GPU time still charged); default 30s, or 16s with --runtime pytorch")
	fl.StringVar(&f.runtime, "runtime", simulator.RuntimeHorovod, "what runs the jobs: horovod (restarts take --restart-delay; the policies assume their own restart cost) or pytorch (torchrun with Voda's rendezvous settings: restarts take the measured 16s unless --restart-delay says otherwise, and the policies are told so, as the controller tells them)")
	fl.DurationVar(&f.rateLimit, "rate-limit", 30*time.Second, "event-driven rescheduling, at most once per this period")
	fl.DurationVar(&f.interval, "interval", 0, "reschedule on a fixed period instead of on events (e.g. 60s); excludes --rate-limit")
	fl.StringVar(&f.baseline, "baseline", "", "preset: pollux-artifact (16×4 GPUs, 60s interval, 30s restart delay, Tiresias at 57600 GPU-s without promotion); flags given explicitly still win")
	fl.IntVar(&f.jobs, "jobs", 160, "jobs in the synthetic workload")
	fl.Float64Var(&f.load, "load", 1.0, "synthetic arrival rate relative to 20 jobs/hour")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the synthetic workload")
	fl.Float64Var(&f.rigidShare, "rigid-share", 0, "share of the synthetic workload's jobs, 0 to 1, that are rigid: they run only at their GPUs (minimum = maximum), under every policy, as Philly's jobs did")
	fl.StringArrayVar(&f.policyParams, "policy-param", nil, "NAME=VALUE: a policy parameter, as 'voda controller --policy-param' takes it (e.g. hesrpt.exponent=0.2); repeat for several; 'voda policies' lists them")
	fl.BoolVar(&f.adaptiveBatch, "adaptive-batch", false, "let every job adapt its batch size, from the workload's batch_size up to its max_batch_size column (default: the model's largest traced batch), scheduled by goodput (throughput × statistical efficiency); with --information estimated the noise scale and throughput are learned from the jobs' reports, as the controller learns them. Without it only jobs with a max_batch_size adapt")
	fl.StringVar(&f.information, "information", "oracle", "what policies know of speedup and remaining time: oracle (true values) or estimated (the estimator's, from the step times jobs report)")
	fl.StringVar(&f.output, "output", "table", "output format: table, json or csv")
	fl.StringVar(&f.perJob, "per-job", "", "also write one CSV row per job to this file")
	fl.StringVar(&f.plot, "plot", "", "also write SVG plots (JCT CDF, GPUs allocated over time) into this directory")
	fl.StringVar(&f.queues, "queues", "", "split the GPUs among teams: a YAML file of ClusterQueue objects (vodascheduler.io/v1alpha1, one quota each); jobs name their queue in the workload's queue column, or --spread spreads them (docs/queues.md)")
	fl.IntVar(&f.teams, "teams", 0, "split the GPUs among this many teams (team-a, team-b, …) of equal nominal quota in one cohort, instead of --queues")
	fl.StringVar(&f.spread, "spread", "", "with --queues or --teams, for workloads without a queue column: even (jobs spread evenly over the queues) or half (the first queue submits half of the jobs, the others share the rest)")
	fl.StringVar(&f.gpuType, "gpu-type", "", "with --gavel and a .trace --workload: the GPU type whose throughputs the jobs run at (e.g. v100), on --nodes × --gpus-per-node GPUs")
	fl.StringVar(&f.html, "html", "", fmt.Sprintf("also write a self-contained HTML page to this file: each run's summary, GPUs in use over time, and a timeline of its jobs' GPUs and events (at most %d job rows in all, shared among the runs, first submitted first)", htmlRows))
	return cmd
}

// simulation is a validated set of runs.
type simulation struct {
	cfgs      []simulator.Config
	workloads []simulator.Workload
	catalog   simulator.Catalog
}

// check reports, before anything runs, a run that could not start: a job
// the cluster cannot hold, say (the same for every policy, so one
// configuration is checked).
func (s *simulation) check() error {
	for _, w := range s.workloads {
		if err := simulator.Check(s.cfgs[0], w, s.catalog); err != nil {
			return err
		}
	}
	return nil
}

func runSimulate(cmd *cobra.Command, f *simulateFlags, h *heteroFlags) error {
	s, err := prepareSimulation(cmd, f, h)
	if err == nil {
		err = s.check()
	}
	if err != nil {
		return usageError{err}
	}
	results, err := runAll(s, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	rep := simulator.NewReport(results)
	out := cmd.OutOrStdout()
	switch f.output {
	case "json":
		err = rep.WriteJSON(out)
	case "csv":
		err = rep.WriteCSV(out)
	default:
		err = rep.WriteTable(out)
	}
	if err != nil {
		return err
	}
	if f.perJob != "" {
		if err := writeFile(f.perJob, func(w io.Writer) error { return simulator.WritePerJob(w, results) }); err != nil {
			return err
		}
	}
	if f.plot != "" {
		if err := writePlots(f.plot, s.workloads, results); err != nil {
			return err
		}
	}
	if f.html != "" {
		page := htmlPage{Config: s.cfgs[0], Results: results}
		if err := writeFileAtomic(f.html, page.write); err != nil {
			return fmt.Errorf("--html: %w", err)
		}
	}
	return nil
}

func prepareSimulation(cmd *cobra.Command, f *simulateFlags, h *heteroFlags) (*simulation, error) {
	changed := cmd.Flags().Changed
	if changed("rate-limit") && changed("interval") {
		return nil, errors.New("--rate-limit and --interval exclude each other: choose event-driven or fixed-interval rescheduling")
	}
	switch f.output {
	case "table", "json", "csv":
	default:
		return nil, fmt.Errorf("--output %q: want table, json or csv", f.output)
	}
	if f.perWorker < 1 {
		return nil, fmt.Errorf("--gpus-per-worker %d: want 1 to the GPUs per node", f.perWorker)
	}
	for flag, path := range map[string]string{"--html": f.html, "--per-job": f.perJob} {
		if path == "" {
			continue
		}
		if err := checkOutputFile(path); err != nil {
			return nil, fmt.Errorf("%s: %w", flag, err)
		}
	}
	tiresias := algorithm.DefaultTiresias()
	switch f.baseline {
	case "":
	case "pollux-artifact":
		tiresias = algorithm.PolluxArtifactTiresias()
		if !changed("nodes") {
			f.nodes = 16
		}
		if !changed("gpus-per-node") {
			f.gpusPerNode = 4
		}
		if !changed("restart-delay") {
			f.restartDelay = 30 * time.Second
		}
		if !changed("interval") && !changed("rate-limit") {
			f.interval = time.Minute
		}
	default:
		return nil, fmt.Errorf("--baseline %q: the only preset is pollux-artifact", f.baseline)
	}
	if err := f.applyRuntime(changed); err != nil {
		return nil, err
	}
	params, err := algorithm.ParseParams(algorithm.Config{Tiresias: tiresias, HeSRPT: algorithm.DefaultHeSRPT()}, f.policyParams)
	if err != nil && f.baseline != "" {
		preset := algorithm.Config{Tiresias: tiresias}.Changed(algorithm.NameTiresias)
		return nil, fmt.Errorf("--policy-param: %w (--baseline %s sets %s)", err, f.baseline, strings.Join(preset, " "))
	}
	if err != nil {
		return nil, fmt.Errorf("--policy-param: %w", err)
	}
	policies, err := parsePolicies(f.policies)
	if err != nil {
		return nil, err
	}
	cat := model.Builtin()
	if f.profiles != "" {
		if cat, err = model.LoadProfiles(f.profiles); err != nil {
			return nil, err
		}
	}
	s := &simulation{catalog: simulator.ModelCatalog(cat)}
	for _, p := range policies {
		cfg := simulator.Config{Policy: p, Nodes: f.nodes, GPUsPerNode: f.gpusPerNode, RestartDelay: f.restartDelay, Runtime: f.runtime,
			RateLimit: f.rateLimit, Interval: f.interval, Tiresias: params.Tiresias, HeSRPT: params.HeSRPT, Information: f.information, GPUsPerWorker: f.perWorker,
			RecordEvents: f.html != "", AdaptiveBatch: f.adaptiveBatch}
		if err := cfg.Validate(); err != nil {
			return nil, fmt.Errorf("invalid flags: %w", err)
		}
		s.cfgs = append(s.cfgs, cfg)
	}
	switch {
	case f.workload != "" && (changed("jobs") || changed("load") || changed("seed") || changed("rigid-share")):
		return nil, errors.New("--jobs, --load, --seed and --rigid-share shape the synthetic workload; they do not apply with --workload")
	case f.gpuType != "":
		if err := s.readTrace(f, h); err != nil {
			return nil, err
		}
	case f.workload != "":
		if s.workloads, err = simulator.ReadWorkloads(f.workload, s.catalog); err != nil {
			return nil, err
		}
	default:
		w, err := simulator.Generate(simulator.GenConfig{Jobs: f.jobs, Load: f.load, Seed: f.seed, RigidShare: f.rigidShare,
			GPUsPerNode: f.gpusPerNode, MaxGPUs: f.nodes * f.gpusPerNode}, s.catalog, simulator.Batches(cat))
		if err != nil {
			return nil, fmt.Errorf("invalid flags: %w", err)
		}
		s.workloads = []simulator.Workload{w}
	}
	return s, s.addQueues(f)
}

// readTrace reads a Gavel or Shockwave trace (--workload) to run at one
// GPU type's throughputs (--gpu-type) from a Gavel-format table (--gavel:
// the file, or a directory holding simulation_throughputs.json).
func (s *simulation) readTrace(f *simulateFlags, h *heteroFlags) error {
	if f.workload == "" || f.profiles != "" {
		return errors.New("--gpu-type needs --workload, a Gavel or Shockwave .trace file, and takes its throughputs from --gavel, not --profiles")
	}
	path := h.gavel
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		path = filepath.Join(path, "simulation_throughputs.json")
	}
	table, err := simulator.ReadGavelThroughputs(path)
	if err != nil {
		return err
	}
	hw, err := simulator.ReadGavelTrace(f.workload, table)
	if err != nil {
		return err
	}
	w, cat, err := simulator.SingleType(hw, table, f.gpuType)
	if err != nil {
		return fmt.Errorf("--gpu-type %s: %w", f.gpuType, err)
	}
	s.workloads, s.catalog = []simulator.Workload{w}, cat
	return nil
}

// addQueues sets the queues of --queues or --teams on every run and
// spreads the workloads' jobs over them with --spread.
func (s *simulation) addQueues(f *simulateFlags) error {
	var qs []quota.Queue
	var err error
	switch {
	case f.queues != "" && f.teams != 0:
		return errors.New("--queues and --teams exclude each other: give the queues in a file, or as a number of equal teams")
	case f.queues != "":
		qs, err = simulator.ReadQueues(f.queues)
	case f.teams != 0:
		qs, err = simulator.TeamQueues(f.teams, f.nodes*f.gpusPerNode)
	case f.spread != "":
		return errors.New("--spread needs queues to spread the jobs over: --queues or --teams")
	}
	if err != nil && f.teams != 0 {
		return fmt.Errorf("--teams: %w", err)
	}
	if err != nil {
		return fmt.Errorf("--queues: %w", err)
	}
	if len(qs) == 0 {
		return nil
	}
	for i := range s.cfgs {
		s.cfgs[i].Queues = qs
	}
	if f.spread == "" {
		return nil
	}
	names := simulator.QueueNames(qs)
	for i, w := range s.workloads {
		if s.workloads[i], err = simulator.SpreadQueues(w, names, f.spread); err != nil {
			return fmt.Errorf("--spread: %w", err)
		}
	}
	return nil
}

func parsePolicies(list string) ([]string, error) {
	if strings.EqualFold(strings.TrimSpace(list), "all") {
		return algorithm.Names(), nil
	}
	var out []string
	seen := map[string]bool{}
	for _, p := range strings.Split(list, ",") {
		c, err := algorithm.Canonical(p)
		if err != nil {
			return nil, fmt.Errorf("--policy: %w", err)
		}
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out, nil
}

// runAll runs every (policy, workload) pair on all cores and returns the
// results in a fixed order: workload by workload, policies in the order
// given.
func runAll(s *simulation, stderr io.Writer) ([]simulator.Result, error) {
	type task struct{ cfg, w int }
	var tasks []task
	for w := range s.workloads {
		for c := range s.cfgs {
			tasks = append(tasks, task{c, w})
		}
	}
	results := make([]simulator.Result, len(tasks))
	errs := make([]error, len(tasks))
	work := make(chan int)
	var wg sync.WaitGroup
	prog := newProgress(stderr, len(tasks))
	for range min(runtime.GOMAXPROCS(0), len(tasks)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				t := tasks[i]
				start := time.Now()
				r, err := simulator.Run(s.cfgs[t.cfg], s.workloads[t.w], s.catalog)
				r.WallSeconds = time.Since(start).Seconds()
				results[i], errs[i] = r, err
				prog.done()
			}
		}()
	}
	for i := range tasks {
		work <- i
	}
	close(work)
	wg.Wait()
	prog.stop()
	return results, errors.Join(errs...)
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

// checkOutputFile reports, before any work, why a file could not be
// written at path: its directory is missing or is not a directory, or the
// path is a directory.
func checkOutputFile(path string) error {
	dir := filepath.Dir(path)
	info, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	if !info.IsDir() {
		return fmt.Errorf("cannot write %s: %s is not a directory", path, dir)
	}
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		return fmt.Errorf("cannot write %s: it is a directory", path)
	}
	return nil
}

// writeFileAtomic writes a temporary file next to path and renames it into
// place, so path is either the whole output or untouched.
func writeFileAtomic(path string, write func(io.Writer) error) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := write(f); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	// CreateTemp makes the file private; the output is an ordinary file.
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// writePlots writes, per workload, the JCT CDF and the GPUs over time of
// every policy.
func writePlots(dir string, workloads []simulator.Workload, results []simulator.Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, w := range workloads {
		var rs []simulator.Result
		for _, r := range results {
			if r.Workload == w.Name {
				rs = append(rs, r)
			}
		}
		cdf := filepath.Join(dir, w.Name+"-jct-cdf.svg")
		if err := writeFile(cdf, func(out io.Writer) error {
			return simulator.PlotJCTCDF(out, "Job completion time, "+w.Name, rs)
		}); err != nil {
			return err
		}
		gpus := filepath.Join(dir, w.Name+"-gpus.svg")
		if err := writeFile(gpus, func(out io.Writer) error {
			return simulator.PlotGPUs(out, "GPUs allocated, "+w.Name, rs)
		}); err != nil {
			return err
		}
	}
	return nil
}

// progress draws a progress bar on a terminal once the runs have taken more
// than a second, repainting a few times a second until stopped.
type progress struct {
	mu       sync.Mutex
	w        io.Writer
	total    int
	n        int
	shown    bool
	quit     chan struct{}
	finished chan struct{}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

func newProgress(w io.Writer, total int) *progress {
	return startProgress(w, total, isTerminal(w), time.Second, 250*time.Millisecond)
}

func startProgress(w io.Writer, total int, on bool, delay, every time.Duration) *progress {
	p := &progress{w: w, total: total, quit: make(chan struct{}), finished: make(chan struct{})}
	if !on {
		close(p.finished)
		return p
	}
	go func() {
		defer close(p.finished)
		select {
		case <-time.After(delay):
		case <-p.quit:
			return
		}
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			p.paint()
			select {
			case <-t.C:
			case <-p.quit:
				p.paint()
				return
			}
		}
	}()
	return p
}

func (p *progress) paint() {
	p.mu.Lock()
	defer p.mu.Unlock()
	const width = 30
	fill := width * p.n / max(p.total, 1)
	fmt.Fprintf(p.w, "\r[%s%s] %d/%d runs", strings.Repeat("=", fill), strings.Repeat(" ", width-fill), p.n, p.total)
	p.shown = true
}

// done counts one finished run.
func (p *progress) done() {
	p.mu.Lock()
	p.n++
	p.mu.Unlock()
}

// stop ends the bar and its line.
func (p *progress) stop() {
	close(p.quit)
	<-p.finished
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprintln(p.w)
	}
}

// applyRuntime checks --runtime and gives PyTorch jobs their measured
// restart delay unless --restart-delay was given.
func (f *simulateFlags) applyRuntime(changed func(string) bool) error {
	switch f.runtime {
	case simulator.RuntimeHorovod:
	case simulator.RuntimePyTorch:
		if !changed("restart-delay") {
			f.restartDelay = api.PyTorchRestart
		}
	default:
		return fmt.Errorf("--runtime %q: want horovod or pytorch", f.runtime)
	}
	return nil
}
