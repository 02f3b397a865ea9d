package cli

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/cluster/kube"
	"github.com/vodascheduler/voda/pkg/metrics"
	"github.com/vodascheduler/voda/pkg/scheduler"
	"github.com/vodascheduler/voda/pkg/typechoice"
)

func newControllerCmd() *cobra.Command {
	var (
		o            kube.ManagerOptions
		kubeconfig   string
		gpuTypes     string
		accelerators []string
		verbose      bool
		qps          float32
		burst        int
		api          apiFlags
		policyParams []string
		memFraction  float64
	)
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run the scheduler on a Kubernetes cluster",
		Long: `Run Voda on a Kubernetes cluster: one scheduler per GPU type decides how many
workers every TrainingJob gets and on which nodes, and carries it out through
Kubeflow MPIJobs or PyTorchJobs (start, scale, preempt with suspend,
resume, migrate).

GPU nodes join a GPU type through the label vodascheduler/accelerator=<type>;
their GPUs are their allocatable nvidia.com/gpu, or the resource
--accelerator names for the type (amd.com/gpu, a MIG profile such as
nvidia.com/mig-1g.10gb, or cpu for a type of CPU nodes, in whole cores). Every decision is written to
the TrainingJob's status and recorded as an Event on it, so
'kubectl get tj' and 'kubectl describe tj NAME' show what happened and why.

Every replica also serves the REST API (--api-addr) that 'voda create', 'get',
'describe', 'delete' and 'set scheduler' talk to; see docs/api.md.

Requires the TrainingJob CRD (deploy/crds) and the operator of each runtime
in use: mpi-operator v0.6 or later (mpiJob), the Kubeflow training-operator
v1.9 with PyTorchJob (pytorchJob). Jobs of a runtime that is not installed
are refused by name.`,
		Example: `  # Out of cluster, against the current kubeconfig context:
  voda controller --leader-elect=false

  # Only the V100 nodes, with Tiresias, rescheduling at most every 10 s:
  voda controller --gpu-types nvidia-tesla-v100 --algorithm Tiresias --rate-limit 10s

  # HeSRPT with a shorter tail (docs/policies.md weighs the trade-off):
  voda controller --policy-param hesrpt.exponent=0.2 --policy-param hesrpt.aging=4h

  # Hand the gangs to a scheduler-plugins coscheduling scheduler:
  voda controller --gang-scheduler scheduler-plugins

  # AMD nodes, A100s split into MIG slices, and a pool of CPU nodes:
  voda controller --accelerator amd-mi300x=amd.com/gpu \
      --accelerator a100-mig=nvidia.com/mig-1g.10gb --accelerator cpu-pool=cpu`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if o.Algorithm, err = algorithm.ParseParams(algorithm.DefaultConfig(), policyParams); err != nil {
				return usageError{fmt.Errorf("--policy-param: %w", err)}
			}
			if _, err := algorithm.New(o.Policy, o.Algorithm); err != nil {
				return usageError{fmt.Errorf("--algorithm: %w", err)}
			}
			if o.RateLimit < 0 {
				return usageError{errors.New("--rate-limit must not be negative")}
			}
			// Zero would not turn these off; each must be a period.
			for _, d := range []struct {
				flag     string
				v, deflt time.Duration
			}{
				{"--type-choice-period", o.TypeChoiceEvery, kube.DefaultTypeChoiceEvery},
				{"--type-choice-dwell", o.TypeChoiceDwell, typechoice.DefaultConfig().MinDwell},
				{"--status-sync", o.SyncPeriod, kube.DefaultSyncPeriod},
				{"--metrics-scan", o.MetricsScan, kube.DefaultMetricsScan},
				{"--gang-timeout", o.GangTimeout, kube.DefaultGangTimeout},
				{"--operator-idle", o.OperatorIdle, kube.DefaultOperatorIdle},
			} {
				if d.v <= 0 {
					return usageError{fmt.Errorf("%s %v: must be a positive duration (the default is %v)", d.flag, d.v, d.deflt)}
				}
			}
			if !(o.SyncWrites > 0) || o.SyncWrites > float64(qps) {
				return usageError{fmt.Errorf("--status-sync-writes %v: want a positive number of writes a second, at most --kube-api-qps (%v), which decisions share", o.SyncWrites, qps)}
			}
			if o.WriteConcurrency < 1 {
				return usageError{fmt.Errorf("--write-concurrency %d: want at least 1 (writes one at a time)", o.WriteConcurrency)}
			}
			if !(memFraction >= 0 && memFraction < 1) {
				return usageError{fmt.Errorf("--memory-limit-fraction %v: want a fraction of the container's memory limit, at least 0 (off) and below 1", memFraction)}
			}
			if _, err := o.Gang.Resolve(); err != nil {
				return usageError{fmt.Errorf("--gang-scheduler: %w", err)}
			}
			if o.Accelerators, err = v1alpha1.ParseAccelerators(accelerators); err != nil {
				return usageError{fmt.Errorf("--accelerator: %w", err)}
			}
			o.GPUTypes = splitList(gpuTypes)
			if err := api.check(); err != nil {
				return err
			}
			cfg, err := restConfig(kubeconfig)
			if err != nil {
				return err
			}
			cfg.QPS, cfg.Burst = qps, burst
			level := slog.LevelInfo
			if verbose {
				level = slog.LevelDebug
			}
			o.Log = logr.FromSlogHandler(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
			switch soft, err := setMemoryLimit("/sys/fs/cgroup", memFraction); {
			case err != nil:
				o.Log.Info("container memory limit unknown; the Go runtime has no soft limit", "reason", err.Error())
			case soft > 0:
				o.Log.Info("Go soft memory limit set from the container's", "bytes", soft, "fraction", memFraction)
			}
			if o.LeaderElect && o.LeaderElectionNamespace == "" {
				o.LeaderElectionNamespace = podNamespace(o.Namespace)
			}
			if o.ConfigNamespace == "" {
				o.ConfigNamespace = podNamespace(o.Namespace)
			}
			// Served on --metrics-addr and the API's /metrics.
			if o.Metrics, err = metrics.New(ctrlmetrics.Registry, Version); err != nil {
				return err
			}
			mgr, kc, err := kube.NewManager(cfg, o)
			if err != nil {
				return err
			}
			if err := api.addTo(mgr, cfg, o, kc); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return mgr.Start(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "path of a kubeconfig; empty uses $KUBECONFIG, ~/.kube/config, or the in-cluster service account")
	f.StringVarP(&o.Namespace, "namespace", "n", "", "watch TrainingJobs in this namespace only (default all namespaces)")
	f.StringVar(&gpuTypes, "gpu-types", "", "comma-separated GPU types this replica schedules (default all)")
	f.StringSliceVar(&accelerators, "accelerator", nil, "GPU_TYPE=RESOURCE: the node resource a GPU type schedules instead of nvidia.com/gpu (amd.com/gpu, nvidia.com/mig-1g.10gb, cpu for whole cores); repeat or comma-separate for several types")
	f.StringVar(&o.Policy, "algorithm", kube.DefaultPolicy, "scheduling policy of every GPU type; see 'voda policies'")
	f.StringArrayVar(&policyParams, "policy-param", nil, "NAME=VALUE: a parameter of the policies, for every GPU type of this replica unless the type's own replaces it (voda set scheduler --policy-param) (e.g. hesrpt.exponent=0.2, tiresias.thresholds=16h); repeat for several; 'voda policies' lists them with their defaults")
	f.DurationVar(&o.RateLimit, "rate-limit", scheduler.DefaultRateLimit, "minimum time between two reschedulings of a GPU type; events in between are coalesced")
	f.StringVar(&o.MetricsAddr, "metrics-addr", ":8080", `address of the Prometheus metrics endpoint; "0" disables it`)
	f.StringVar(&o.HealthAddr, "health-addr", ":8081", `address of /healthz and /readyz; "0" disables them`)
	f.Float64Var(&memFraction, "memory-limit-fraction", 0.9, "set the Go runtime's soft memory limit to this fraction of the container's memory limit (cgroup memory.max), so that garbage collection works harder near the limit instead of the controller being killed; 0 disables it, and GOMEMLIMIT, when set, wins")
	f.StringVar(&o.PprofAddr, "pprof-addr", "0", `address of Go's profiles (/debug/pprof/), to diagnose the controller's CPU and memory; "0" disables them (keep it off, or on localhost, in production: profiles are not authenticated)`)
	f.BoolVar(&o.LeaderElect, "leader-elect", true, "run only while holding the leader Lease, so that replicas can stand by")
	f.StringVar(&o.LeaderElectionNamespace, "leader-elect-namespace", "", "namespace of the leader Lease (default the pod's namespace, else --namespace, else default)")
	f.StringVar(&o.LeaderElectionID, "leader-elect-id", "voda-controller", "name of the leader Lease; replicas with different --gpu-types need different names")
	f.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", 15*time.Second, "how long standby replicas wait before taking over a lease that is not renewed")
	f.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long the leader keeps trying to renew before it gives up leadership")
	f.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", 2*time.Second, "how often replicas try to acquire or renew the lease")
	f.StringVar(&o.ConfigNamespace, "config-namespace", "", "namespace of the ConfigMap "+kube.ConfigMapName+" that changes a GPU type's algorithm, rate limit and policy parameters at runtime (default the pod's, else --namespace, else default)")
	f.DurationVar(&o.TypeChoiceEvery, "type-choice-period", kube.DefaultTypeChoiceEvery, "how often the waiting jobs that accept several GPU types (spec.gpuTypes) are looked at again, and moved to another type when that finishes them sooner")
	f.DurationVar(&o.TypeChoiceDwell, "type-choice-dwell", typechoice.DefaultConfig().MinDwell, "least time between the first two moves of one waiting job between GPU types; it doubles with each further move, up to a day")
	f.DurationVar(&o.SyncPeriod, "status-sync", kube.DefaultSyncPeriod, "how often every job's time counters are written to its status (decisions are written at once)")
	f.Float64Var(&o.SyncWrites, "status-sync-writes", kube.DefaultSyncWrites, "most writes per second the counters' refreshes take, across every GPU type (oldest first); with more jobs than --status-sync times this, each job's counters are written less often")
	f.IntVar(&o.WriteConcurrency, "write-concurrency", kube.DefaultWriteConcurrency, "writes sent at once: each GPU type's scheduler writes a round's actions of one kind and the statuses a round changed this many at a time, and this many TrainingJobs are reconciled at once; 1 writes one by one; --kube-api-qps still bounds the rate")
	f.Float32Var(&qps, "kube-api-qps", kube.DefaultKubeAPIQPS, "requests per second to the API server, sustained (a job costs about a dozen writes while it starts: its status, its child, a patch per worker, Events)")
	f.IntVar(&burst, "kube-api-burst", kube.DefaultKubeAPIBurst, "requests to the API server in a burst")
	f.StringVar(&o.ProgressURL, "progress-url", "", "base URL of the REST API as the jobs' pods reach it (e.g. http://voda.voda-system:8088); when set, every job's pods get VODA_PROGRESS_URL and VODA_PROGRESS_TOKEN to report their epochs, from which speedup and remaining time are estimated")
	f.StringVar(&o.MetricsDir, "metrics-dir", "", "directory of the original Voda's per-job metrics CSV files (<job>.csv, one row per epoch); read into the jobs' progress")
	f.DurationVar(&o.MetricsScan, "metrics-scan", kube.DefaultMetricsScan, "how often --metrics-dir is read")
	f.DurationVar(&o.GangTimeout, "gang-timeout", kube.DefaultGangTimeout, "how long a job's workers may take to all run after a start, resize or migration before the job gives its GPUs back and is requeued")
	f.DurationVar(&o.OperatorIdle, "operator-idle", kube.DefaultOperatorIdle, "how long a runtime's operator may create no pod before it counts as idle: until then, and unless it reports failing to create a job's pods, the gang timeout waits for workers that have no pod yet")
	f.StringVar(&o.Gang.Scheduler, "gang-scheduler", kube.GangNone, "who binds the jobs' pods as a gang: none (Voda's own gated placement and the default scheduler), scheduler-plugins (coscheduling; Voda makes a scheduling.x-k8s.io PodGroup per job) or volcano (a scheduling.volcano.sh PodGroup per job); see docs/gang-scheduling.md")
	f.StringVar(&o.Gang.SchedulerName, "gang-scheduler-name", "", "schedulerName of the jobs' pods under --gang-scheduler (default "+kube.DefaultSchedulerPluginsName+" or "+kube.DefaultVolcanoName+")")
	f.StringVar(&o.Gang.Queue, "gang-queue", "", "Volcano queue of the jobs' PodGroups (default: the queue named "+kube.DefaultVolcanoQueue+"; only with --gang-scheduler=volcano)")
	f.BoolVarP(&verbose, "verbose", "v", false, "log debug messages")
	api.add(f)
	return cmd
}

// restConfig loads a kubeconfig, or the in-cluster configuration.
func restConfig(path string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil && path == "" {
		if missing := missingFiles(os.Getenv(clientcmd.RecommendedConfigPathEnvVar)); missing != "" {
			return nil, fmt.Errorf("kubernetes client configuration: $%s names %s, which does not exist (fix it, or pass --kubeconfig)",
				clientcmd.RecommendedConfigPathEnvVar, missing)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes client configuration: %w (pass --kubeconfig or run in a cluster)", err)
	}
	return cfg, nil
}

// missingFiles returns the files of a path list (as $KUBECONFIG holds)
// when none of them exists, else "".
func missingFiles(list string) string {
	files := filepath.SplitList(list)
	for _, f := range files {
		if _, err := os.Stat(f); err == nil {
			return ""
		}
	}
	return strings.Join(files, ", ")
}

// podNamespace is the namespace the controller runs in, when it can tell.
func podNamespace(fallback string) string {
	if data, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil {
		if ns := strings.TrimSpace(string(data)); ns != "" {
			return ns
		}
	}
	if fallback != "" {
		return fallback
	}
	return "default"
}
