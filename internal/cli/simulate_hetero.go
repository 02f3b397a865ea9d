package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/simulator"
)

// heteroFlags are the flags of a simulation on several GPU types.
type heteroFlags struct {
	gpuTypes, gavel, choices string
	jobsPerHour              float64
}

func (h *heteroFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&h.gpuTypes, "gpu-types", "", "simulate a cluster of several GPU types, TYPE=NODESxGPUS comma-separated (e.g. v100=2x4,p100=4x4,k80=6x4), with the Gavel throughputs of --gavel; see docs/simulator.md")
	fl.StringVar(&h.gavel, "gavel", "", "with --gpu-types: Gavel's data directory (simulation_throughputs.json; traces/ for --workload)")
	fl.StringVar(&h.choices, "type-choice", "all", "with --gpu-types: how jobs get a GPU type, comma-separated or all: random (pinned at random among the types it runs on), fastest (pinned to its fastest), voda (chosen and moved by Voda's rule)")
	fl.Float64Var(&h.jobsPerHour, "jobs-per-hour", 1, "with --gpu-types and no --workload: arrival rate of the generated Gavel workload")
}

// heteroSim is a validated set of heterogeneous runs.
type heteroSim struct {
	cfgs     []simulator.HeteroConfig
	workload simulator.HeteroWorkload
	table    *simulator.GavelTable
}

func prepareHetero(cmd *cobra.Command, f *simulateFlags, h *heteroFlags) (*heteroSim, error) {
	changed := cmd.Flags().Changed
	for _, name := range []string{"profiles", "nodes", "gpus-per-node", "gpus-per-worker", "interval", "baseline", "information", "load", "per-job", "plot", "html"} {
		if changed(name) {
			return nil, fmt.Errorf("--%s does not apply with --gpu-types (a heterogeneous run takes its throughputs from --gavel and reports a table or JSON)", name)
		}
	}
	if f.output == "csv" {
		return nil, errors.New("--output csv does not apply with --gpu-types: use table or json")
	}
	if changed("jobs-per-hour") && f.workload != "" {
		return nil, errors.New("--jobs-per-hour shapes the generated workload; it does not apply with --workload")
	}
	if h.gavel == "" {
		return nil, errors.New("--gpu-types needs --gavel DIR, the directory of Gavel's simulation_throughputs.json (../shared/traces/gavel)")
	}
	types, err := simulator.ParseTypes(h.gpuTypes)
	if err != nil {
		return nil, err
	}
	table, err := simulator.ReadGavelThroughputs(filepath.Join(h.gavel, "simulation_throughputs.json"))
	if err != nil {
		return nil, err
	}
	for _, t := range types {
		if !slices.Contains(table.GPUTypes(), t.Name) {
			return nil, fmt.Errorf("--gpu-types: %s has no throughputs in Gavel's table, which has %s", t.Name, strings.Join(table.GPUTypes(), ", "))
		}
	}
	choices := simulator.Choices
	if !strings.EqualFold(strings.TrimSpace(h.choices), "all") {
		choices = nil
		for _, c := range strings.Split(h.choices, ",") {
			choices = append(choices, strings.ToLower(strings.TrimSpace(c)))
		}
	}
	if err := f.applyRuntime(changed); err != nil {
		return nil, err
	}
	params, err := algorithm.ParseParams(algorithm.DefaultConfig(), f.policyParams)
	if err != nil {
		return nil, fmt.Errorf("--policy-param: %w", err)
	}
	policies, err := parsePolicies(f.policies)
	if err != nil {
		return nil, err
	}
	s := &heteroSim{table: table}
	for _, p := range policies {
		for _, c := range choices {
			cfg := simulator.HeteroConfig{Policy: p, Types: types, RestartDelay: f.restartDelay, Runtime: f.runtime, RateLimit: f.rateLimit,
				Tiresias: params.Tiresias, HeSRPT: params.HeSRPT, Choice: c, Seed: f.seed}
			if err := cfg.Validate(); err != nil {
				return nil, fmt.Errorf("invalid flags: %w", err)
			}
			s.cfgs = append(s.cfgs, cfg)
		}
	}
	if f.workload != "" {
		s.workload, err = simulator.ReadGavelTrace(f.workload, table)
	} else {
		s.workload, err = simulator.GenerateGavel(table, f.jobs, h.jobsPerHour, f.seed)
	}
	return s, err
}

func runHetero(cmd *cobra.Command, f *simulateFlags, h *heteroFlags) error {
	s, err := prepareHetero(cmd, f, h)
	if err != nil {
		return usageError{err}
	}
	results := make([]simulator.HeteroResult, len(s.cfgs))
	errs := make([]error, len(s.cfgs))
	work := make(chan int)
	var wg sync.WaitGroup
	prog := newProgress(cmd.ErrOrStderr(), len(s.cfgs))
	for range min(runtime.GOMAXPROCS(0), len(s.cfgs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				results[i], errs[i] = simulator.RunHetero(s.cfgs[i], s.workload, s.table)
				prog.done()
			}
		}()
	}
	for i := range s.cfgs {
		work <- i
	}
	close(work)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if f.output == "json" {
		return writeHeteroJSON(cmd.OutOrStdout(), results)
	}
	return writeHeteroTable(cmd.OutOrStdout(), results)
}

func writeHeteroTable(out io.Writer, rs []simulator.HeteroResult) error {
	if len(rs) == 0 {
		return nil
	}
	var types []string
	for t := range rs[0].GPUs {
		types = append(types, t)
	}
	slices.Sort(types)
	fmt.Fprintf(out, "Workload %s: %d jobs on", rs[0].Workload, len(rs[0].Jobs))
	for _, t := range types {
		fmt.Fprintf(out, " %d %s", rs[0].GPUs[t], t)
	}
	fmt.Fprintln(out, " GPUs")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "POLICY\tCHOICE\tAVG_JCT\tP99_JCT\tMAKESPAN\tMOVES/JOB\tBOUND\tJCT/BOUND")
	for _, t := range types {
		fmt.Fprintf(tw, "\tUTIL_%s", strings.ToUpper(t))
	}
	fmt.Fprintln(tw)
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%s\t%.0fs\t%.0fs\t%.0fs\t%.2f\t%.0fs\t%.2f", r.Policy, r.Choice, r.MeanJCT(), r.P99JCT(), r.Makespan, r.MovesPerJob(),
			r.LowerBound, r.MeanJCT()/max(r.LowerBound, 1e-9))
		for _, t := range types {
			fmt.Fprintf(tw, "\t%.0f%%", 100*r.Busy[t]/max(float64(r.GPUs[t])*r.Makespan, 1e-9))
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// Voda's choice against the two pinned ones, per policy.
	mean := map[[2]string]float64{}
	var policies []string
	for _, r := range rs {
		if _, seen := mean[[2]string{r.Policy, simulator.ChoiceVoda}]; !seen && !slices.Contains(policies, r.Policy) {
			policies = append(policies, r.Policy)
		}
		mean[[2]string{r.Policy, r.Choice}] = r.MeanJCT()
	}
	for _, p := range policies {
		v, ok := mean[[2]string{p, simulator.ChoiceVoda}]
		if !ok {
			continue
		}
		var parts []string
		for _, c := range []string{simulator.ChoiceRandom, simulator.ChoiceFastest} {
			if o, ok := mean[[2]string{p, c}]; ok && o > 0 {
				parts = append(parts, fmt.Sprintf("%+.1f%% against %s", 100*(v-o)/o, c))
			}
		}
		if len(parts) > 0 {
			fmt.Fprintf(out, "%s: Voda's choice of type: average JCT %s\n", p, strings.Join(parts, ", "))
		}
	}
	return nil
}

func writeHeteroJSON(out io.Writer, rs []simulator.HeteroResult) error {
	type row struct {
		Workload    string             `json:"workload"`
		Policy      string             `json:"policy"`
		Choice      string             `json:"choice"`
		Jobs        int                `json:"jobs"`
		AvgJCT      float64            `json:"avg_jct_s"`
		P99JCT      float64            `json:"p99_jct_s"`
		Makespan    float64            `json:"makespan_s"`
		MovesPerJob float64            `json:"moves_per_job"`
		LowerBound  float64            `json:"lower_bound_s"`
		GPUs        map[string]int     `json:"gpus"`
		Busy        map[string]float64 `json:"busy_gpu_s"`
		Wall        float64            `json:"sim_wall_s"`
	}
	var rows []row
	for _, r := range rs {
		rows = append(rows, row{r.Workload, r.Policy, r.Choice, len(r.Jobs), r.MeanJCT(), r.P99JCT(), r.Makespan, r.MovesPerJob(), r.LowerBound, r.GPUs, r.Busy, r.WallSeconds})
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(map[string]any{"runs": rows})
}
