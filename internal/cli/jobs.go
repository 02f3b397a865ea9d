package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/apis/rest"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/client"
)

// now is the clock of the job commands; tests fix it.
var now = time.Now

// apiError adds a hint to the errors a user can act on.
func apiError(err error) error {
	switch client.StatusOf(err) {
	case http.StatusUnauthorized:
		return fmt.Errorf("%w (check --token, %s or the config file)", err, envToken)
	case 0:
		var ue usageError
		if !errors.As(err, &ue) && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("cannot reach the Voda server: %w", err)
		}
	}
	return err
}

func newCreateCmd() *cobra.Command {
	var (
		cf   clientFlags
		file string
	)
	cmd := &cobra.Command{
		Use:   "create -f FILE",
		Short: "Submit a training job",
		Long: `Submit a training job: a TrainingJob (vodascheduler.io/v1alpha1); an MPIJob
in the original Voda format, whose launcher environment (NUM_PROC, MIN_NUM_PROC,
MAX_NUM_PROC, EPOCHS, JOB_PRIORITY) and worker nodeSelector
vodascheduler/accelerator become the job's scheduling fields (such a job is
named NAME-YYYYMMDD-HHMMSS); or a Kubeflow PyTorchJob (kubeflow.org/v1) with an
elastic policy, whose minReplicas–maxReplicas become the worker range,
Worker.replicas the requested size and nprocPerNode the GPUs per worker (it
keeps its name). The file is YAML or JSON; - reads standard input.
` + clientHelp,
		Example: `  voda create -f examples/mnist-trainingjob.yaml
  voda create -f examples/pytorch/elastic-ddp-trainingjob.yaml
  voda create -f examples/pytorch/elastic-ddp-pytorchjob.yaml
  voda create -f examples/original/tensorflow2-keras-mnist-elastic.yaml`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return usageError{errors.New("-f FILE is required")}
			}
			var data []byte
			var err error
			if file == "-" {
				data, err = io.ReadAll(io.LimitReader(cmd.InOrStdin(), 8<<20))
			} else {
				data, err = os.ReadFile(file)
			}
			if err != nil {
				return usageError{err}
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			tj, err := c.CreateJob(cmd.Context(), data)
			if err != nil {
				return apiError(err)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "Training job created: %s\n", tj.Name)
			fmt.Fprintf(out, "Follow it with:  voda describe job %s\n", tj.Name)
			fmt.Fprintf(out, "Its output:      kubectl logs -n %s -f %s-launcher\n", tj.Namespace, tj.Name)
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "job file (YAML or JSON; - for standard input)")
	cf.add(cmd)
	return cmd
}

func newDeleteCmd() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "delete NAME...",
		Short: "Delete training jobs (their MPIJobs or PyTorchJobs and pods go too)",
		Long:  "Delete every named training job. Its MPIJob or PyTorchJob and pods are deleted with it.\n" + clientHelp,
		Args:  usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, names []string) error {
			c, err := cf.client()
			if err != nil {
				return err
			}
			var errs []error
			for _, name := range names {
				if err := c.DeleteJob(cmd.Context(), name); err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", name, apiError(err)))
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Training job deleted: %s\n", name)
			}
			return errors.Join(errs...)
		},
		ValidArgsFunction: cf.completeJobs,
	}
	cf.add(cmd)
	return cmd
}

// completeJobs completes job names from the server.
func (f *clientFlags) completeJobs(cmd *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
	c, err := f.client()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	jobs, err := c.ListJobs(cmd.Context(), client.JobFilter{})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, j := range jobs {
		if strings.HasPrefix(j.Name, prefix) {
			out = append(out, j.Name)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

func newGetCmd() *cobra.Command {
	var cf clientFlags
	get := groupCmd("get (jobs | job NAME | schedulers | queues)", "List training jobs, schedulers or queues",
		"List training jobs, the scheduler of every GPU type, or the queues jobs may name.\n"+clientHelp, "jobs, job NAME, schedulers or queues", &cf)

	var (
		output, status, gpuType, user string
		watch                         bool
		interval                      time.Duration
	)
	jobs := &cobra.Command{
		Use:     "jobs [NAME...]",
		Aliases: []string{"job", "tj", "trainingjobs"},
		Short:   "List training jobs",
		Long: `List your training jobs (admins: every job), sorted by name:
NAME STATUS WORKERS SCHEDULER WAITING RUNNING TOTAL, where SCHEDULER is the GPU
type and the times are how long the job waited for GPUs and ran.
` + clientHelp,
		Example: `  voda get jobs
  voda get jobs --status Running -o wide
  voda get job mnist-20261123-101500 -o yaml
  voda get jobs --watch`,
		Args: usageArgs(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, names []string) error {
			if err := checkOutput(&output, "wide", "json", "yaml"); err != nil {
				return err
			}
			if watch && (output == "json" || output == "yaml") {
				return usageError{errors.New("--watch prints tables only: leave out -o json|yaml")}
			}
			if interval <= 0 {
				return usageError{errors.New("--watch-interval must be positive")}
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			f := client.JobFilter{Status: status, GPUType: gpuType, User: user}
			fetch := func(ctx context.Context) ([]v1alpha1.TrainingJob, error) {
				if len(names) == 0 {
					return c.ListJobs(ctx, f)
				}
				var out []v1alpha1.TrainingJob
				for _, n := range names {
					tj, err := c.GetJob(ctx, n)
					if err != nil {
						return nil, fmt.Errorf("%s: %w", n, err)
					}
					out = append(out, *tj)
				}
				return out, nil
			}
			if watch {
				ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
				defer stop()
				return watchJobs(ctx, cmd.OutOrStdout(), fetch, output == "wide", interval)
			}
			items, err := fetch(cmd.Context())
			if err != nil {
				return apiError(err)
			}
			return printJobs(cmd.OutOrStdout(), items, output, len(names) == 1)
		},
		ValidArgsFunction: cf.completeJobs,
	}
	fl := jobs.Flags()
	fl.StringVarP(&output, "output", "o", "", "output format: table, wide (the table with more columns), json or yaml (default table)")
	fl.StringVar(&status, "status", "", "only jobs in this phase (Submitted, Waiting, Starting, Running, Completed, Failed, Canceled)")
	fl.StringVar(&gpuType, "gpu-type", "", "only jobs of this GPU type")
	fl.StringVar(&user, "user", "", "only jobs of this submitter (admins)")
	fl.BoolVarP(&watch, "watch", "w", false, "after the list, print jobs again whenever they change, until Ctrl-C")
	fl.DurationVar(&interval, "watch-interval", 2*time.Second, "how often --watch asks the server")

	var schedOutput string
	scheds := &cobra.Command{
		Use:     "schedulers",
		Aliases: []string{"scheduler"},
		Short:   "List the scheduler of every GPU type",
		Long: `List the scheduler of every GPU type: its algorithm and rate limit, its nodes
and GPUs, the GPUs allocated and its jobs per phase.
` + clientHelp,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(&schedOutput, "json", "yaml"); err != nil {
				return err
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			items, err := c.Schedulers(cmd.Context())
			if err != nil {
				return apiError(err)
			}
			return printSchedulers(cmd.OutOrStdout(), items, schedOutput)
		},
	}
	scheds.Flags().StringVarP(&schedOutput, "output", "o", "", "output format: table, json or yaml (default table)")
	get.AddCommand(jobs, scheds, newGetQueuesCmd(&cf))
	return get
}

// groupCmd is a command that only holds subcommands, with the client
// flags for all of them; run alone it says what it wants.
func groupCmd(use, short, long, what string, cf *clientFlags) *cobra.Command {
	verb, _, _ := strings.Cut(use, " ")
	cmd := &cobra.Command{
		Use: use, Short: short, Long: long,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			return usageError{fmt.Errorf("say what to %s: %s", verb, what)}
		},
	}
	cf.add(cmd)
	return cmd
}

// checkOutput rejects an -o value that is neither the default table nor
// among the allowed ones; "table" becomes "", the default.
func checkOutput(o *string, allowed ...string) error {
	if *o == "table" {
		*o = ""
	}
	if *o == "" || slices.Contains(allowed, *o) {
		return nil
	}
	return usageError{fmt.Errorf("-o %s: want table (the default), %s", *o, strings.Join(allowed, ", "))}
}

// printStructured writes v as JSON or YAML.
func printStructured(w io.Writer, v any, format string) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if format == "yaml" {
		if data, err = yaml.JSONToYAML(data); err != nil {
			return err
		}
	} else {
		data = append(data, '\n')
	}
	_, err = w.Write(data)
	return err
}

// jobRow is one line of the jobs table.
func jobRow(tj *v1alpha1.TrainingJob, wide bool, at time.Time) string {
	w, r, _ := tj.TimesAt(at)
	phase := tj.Status.Phase
	if phase == "" {
		phase = v1alpha1.PhaseSubmitted
	}
	cols := []string{tj.Name, string(phase), workersColumn(tj), schedulerColumn(tj),
		w.Round(time.Second).String(), r.Round(time.Second).String(), (w + r).Round(time.Second).String()}
	if wide {
		cols = append(cols, fmt.Sprintf("%d-%d", tj.Spec.MinWorkers, tj.Spec.MaxWorkers), orDefault(tj.Spec.Template.Runtime(), "-"), fmt.Sprint(tj.Status.Queue),
			orDefault(tj.Spec.Submitter, "-"), batchColumn(tj), orDefault(compactPlacement(tj.Status.Placement), "-"))
	}
	return strings.Join(cols, "\t")
}

// batchColumn is the batch size in force of a job that lets Voda choose
// it, with its efficiency: "192 (87%)"; "-" otherwise.
func batchColumn(tj *v1alpha1.TrainingJob) string {
	b := tj.Status.Batch
	if tj.Spec.BatchSize == nil || b == nil || b.Global == 0 {
		return "-"
	}
	return fmt.Sprintf("%d (%d%%)", b.Global, b.EfficiencyPercent)
}

// schedulerColumn is a job's GPU type: "v100", and for a job of several
// types the one it is on and the others, "v100 (or p100,k80)", or
// "? (v100,p100)" before Voda chose.
func schedulerColumn(tj *v1alpha1.TrainingJob) string {
	if len(tj.Spec.GPUTypes) < 2 {
		return strings.Join(tj.Spec.AcceptedGPUTypes(), ",")
	}
	cur := tj.CurrentGPUType()
	if cur == "" {
		return "? (" + strings.Join(tj.Spec.GPUTypes, ",") + ")"
	}
	var others []string
	for _, t := range tj.Spec.GPUTypes {
		if t != cur {
			others = append(others, t)
		}
	}
	return cur + " (or " + strings.Join(others, ",") + ")"
}

// workersColumn is a job's workers: "4", "2/4" while only 2 of 4 run, and
// "4×2" when each worker holds 2 GPUs.
func workersColumn(tj *v1alpha1.TrainingJob) string {
	st := tj.Status
	s := fmt.Sprint(st.Workers)
	if st.Phase == v1alpha1.PhaseStarting {
		s = fmt.Sprintf("%d/%d", st.RunningWorkers, st.Workers)
	}
	k := st.GPUsPerWorker
	if k == 0 {
		if n, err := tj.Spec.WorkerGPUs(); err == nil {
			k = int32(n)
		}
	}
	if k > 1 {
		s += fmt.Sprintf("×%d", k)
	}
	return s
}

const (
	jobHeader     = "NAME\tSTATUS\tWORKERS\tSCHEDULER\tWAITING\tRUNNING\tTOTAL"
	jobWideHeader = jobHeader + "\tRANGE\tRUNTIME\tQUEUE\tSUBMITTER\tBATCH\tNODES"
)

// printJobs writes jobs as a table, JSON or YAML. A single named job is
// written as itself rather than as a list.
func printJobs(w io.Writer, items []v1alpha1.TrainingJob, format string, single bool) error {
	if format == "json" || format == "yaml" {
		for i := range items {
			items[i].APIVersion, items[i].Kind = v1alpha1.GroupVersion.String(), "TrainingJob"
		}
		if single && len(items) == 1 {
			return printStructured(w, items[0], format)
		}
		if items == nil {
			items = []v1alpha1.TrainingJob{}
		}
		return printStructured(w, rest.JobList{Items: items}, format)
	}
	if len(items) == 0 {
		_, err := fmt.Fprintln(w, "No training jobs.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	header := jobHeader
	if format == "wide" {
		header = jobWideHeader
	}
	fmt.Fprintln(tw, header)
	at := now()
	for i := range items {
		fmt.Fprintln(tw, jobRow(&items[i], format == "wide", at))
	}
	return tw.Flush()
}

// watchJobs prints the table, then every job whose row changed, until ctx
// ends. A failed poll is reported and retried.
func watchJobs(ctx context.Context, w io.Writer, fetch func(context.Context) ([]v1alpha1.TrainingJob, error), wide bool, every time.Duration) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	header := jobHeader
	if wide {
		header = jobWideHeader
	}
	fmt.Fprintln(tw, header)
	// Rows are compared without the times, which change every poll.
	last := map[string]string{}
	key := func(tj *v1alpha1.TrainingJob) string {
		return fmt.Sprint(tj.Status.Phase, tj.Status.Workers, tj.Status.Placement, tj.Status.Queue)
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		items, err := fetch(ctx)
		switch {
		case ctx.Err() != nil:
			return tw.Flush()
		case err != nil:
			fmt.Fprintf(tw, "# %v (retrying)\n", apiError(err))
		default:
			at := now()
			seen := map[string]bool{}
			for i := range items {
				tj := &items[i]
				seen[tj.Name] = true
				if k := key(tj); last[tj.Name] != k {
					last[tj.Name] = k
					fmt.Fprintln(tw, jobRow(tj, wide, at))
				}
			}
			for name := range last {
				if !seen[name] {
					delete(last, name)
					fmt.Fprintf(tw, "%s\tDeleted\n", name)
				}
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// compactPlacement writes worker nodes as "node-a×2,node-b".
func compactPlacement(nodes []string) string {
	var parts []string
	for i := 0; i < len(nodes); {
		j := i
		for j < len(nodes) && nodes[j] == nodes[i] {
			j++
		}
		if j-i > 1 {
			parts = append(parts, fmt.Sprintf("%s×%d", nodes[i], j-i))
		} else {
			parts = append(parts, nodes[i])
		}
		i = j
	}
	return strings.Join(parts, ",")
}

// printSchedulers writes schedulers as a table, JSON or YAML.
func printSchedulers(w io.Writer, items []rest.Scheduler, format string) error {
	if format != "" {
		if items == nil {
			items = []rest.Scheduler{}
		}
		return printStructured(w, rest.SchedulerList{Items: items}, format)
	}
	if len(items) == 0 {
		_, err := fmt.Fprintln(w, "No GPU types: label GPU nodes with "+v1alpha1.AcceleratorLabel+"=TYPE.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "GPU-TYPE\tALGORITHM\tRATE-LIMIT\tNODES\tGPUS\tALLOCATED\tOTHER\tWAITING\tSTARTING\tRUNNING\tDONE")
	for _, s := range items {
		done := s.Jobs[string(v1alpha1.PhaseCompleted)] + s.Jobs[string(v1alpha1.PhaseFailed)] + s.Jobs[string(v1alpha1.PhaseCanceled)]
		waiting := s.Jobs[string(v1alpha1.PhaseWaiting)] + s.Jobs[string(v1alpha1.PhaseSubmitted)]
		alg := s.Algorithm
		if len(s.Parameters) > 0 {
			alg += " (" + strings.Join(s.Parameters, " ") + ")"
		}
		if s.SettingsError != "" {
			alg += " (bad settings)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", s.GPUType, alg, s.RateLimit, s.Nodes, s.GPUs, s.AllocatedGPUs,
			s.OtherGPUs, waiting, s.Jobs[string(v1alpha1.PhaseStarting)], s.Jobs[string(v1alpha1.PhaseRunning)], done)
	}
	return tw.Flush()
}

func newSetCmd() *cobra.Command {
	var cf clientFlags
	set := groupCmd("set scheduler GPU_TYPE [--algorithm NAME] [--rate-limit DURATION] [--policy-param NAME=VALUE]...", "Change a scheduler's settings",
		"Change the settings of a GPU type's scheduler (admins).\n"+clientHelp, "scheduler GPU_TYPE", &cf)
	var alg, rate string
	var params []string
	var clearParams bool
	sched := &cobra.Command{
		Use:   "scheduler GPU_TYPE",
		Short: "Change the algorithm, rate limit or policy parameters of a GPU type's scheduler (admins)",
		Long: `Change the algorithm, the rate limit or the policy parameters of a GPU type's
scheduler. What is left out keeps its value. The controller applies the
change within moments and reschedules with it; it lasts across restarts (it
is kept in the ConfigMap voda-schedulers). Needs membership of an admin
group.

--policy-param sets the GPU type's own policy parameters (see 'voda
policies'): each replaces the controller's value of that parameter (its
--policy-param or the default) for this type only. Given at all, the list
replaces the type's previous one; --clear-policy-params removes it, and the
type runs with the controller's parameters again.
` + clientHelp,
		Example: `  voda set scheduler nvidia-tesla-v100 --algorithm Tiresias
  voda set scheduler nvidia-tesla-v100 --algorithm ElasticTiresias --rate-limit 10s
  voda set scheduler nvidia-tesla-k80 --policy-param tiresias.thresholds=4h --policy-param tiresias.promote-knob=0
  voda set scheduler nvidia-tesla-k80 --clear-policy-params`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			changed := cmd.Flags().Changed("policy-param")
			if alg == "" && rate == "" && !changed && !clearParams {
				return usageError{errors.New("nothing to change: pass --algorithm, --rate-limit, --policy-param or --clear-policy-params")}
			}
			if changed && clearParams {
				return usageError{errors.New("--policy-param and --clear-policy-params contradict each other: pass one")}
			}
			up := rest.SchedulerUpdate{}
			if changed || clearParams {
				if _, err := algorithm.ParseParams(algorithm.DefaultConfig(), params); err != nil {
					return usageError{fmt.Errorf("--policy-param: %w", err)}
				}
				list := append([]string{}, params...) // [] when clearing
				up.PolicyParams = &list
			}
			if alg != "" {
				p, err := algorithm.New(alg, algorithm.DefaultConfig())
				if err != nil {
					return usageError{fmt.Errorf("--algorithm: %w", err)}
				}
				alg = p.Name()
			}
			if rate != "" {
				if d, err := time.ParseDuration(rate); err != nil || d < 0 {
					return usageError{fmt.Errorf("--rate-limit %q: want a non-negative duration such as 30s", rate)}
				}
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			up.Algorithm, up.RateLimit = alg, rate
			s, err := c.SetScheduler(cmd.Context(), args[0], up)
			if err != nil {
				return apiError(err)
			}
			params := "default parameters"
			if len(s.Parameters) > 0 {
				params = "parameters " + strings.Join(s.Parameters, " ")
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Scheduler %s: algorithm %s, rate limit %s, %s\n", s.GPUType, s.Algorithm, s.RateLimit, params)
			return nil
		},
	}
	sched.Flags().StringVar(&alg, "algorithm", "", "scheduling policy; see 'voda policies'")
	sched.Flags().StringVar(&rate, "rate-limit", "", "minimum time between two reschedulings, e.g. 30s")
	sched.Flags().StringArrayVar(&params, "policy-param", nil, "NAME=VALUE: a policy parameter for this GPU type only (e.g. hesrpt.exponent=0.5); repeat for several; replaces the type's previous list")
	sched.Flags().BoolVar(&clearParams, "clear-policy-params", false, "remove the GPU type's own policy parameters: it runs with the controller's again")
	set.AddCommand(sched)
	return set
}

func newVersionCmd() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the client's version and, when a server is configured, the server's",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "Client: %s\n", Version)
			cfg, err := cf.resolve()
			if errors.Is(err, errNoServer) {
				fmt.Fprintln(out, "Server: not configured")
				return nil
			}
			if err != nil {
				return err
			}
			c, err := client.New(cfg)
			if err != nil {
				return usageError{err}
			}
			v, err := c.Version(cmd.Context())
			if err != nil {
				return apiError(err)
			}
			fmt.Fprintf(out, "Server: %s at %s (jobs in namespace %s)\n", v.Version, cfg.Server, v.Namespace)
			return nil
		},
	}
	cf.add(cmd)
	return cmd
}
