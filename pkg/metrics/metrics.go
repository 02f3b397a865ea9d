// Package metrics exports what the schedulers do as Prometheus metrics, all
// named voda_scheduler_*. A Metrics is registered with a registry the
// caller gives (the controller's, or a test's own): there are no process
// globals. Every label has few values: the GPU type, the phase, the action
// kind, the policy.
//
// Import rule: pkg/api, pkg/scheduler and the Prometheus client; the core
// does not import it.
package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/scheduler"
)

// Metrics are the scheduler's collectors.
type Metrics struct {
	info             *prometheus.GaugeVec
	jobs             *prometheus.GaugeVec
	gpus, allocated  *prometheus.GaugeVec
	submitted        *prometheus.CounterVec
	finished         *prometheus.CounterVec
	deleted          *prometheus.CounterVec
	reschedules      *prometheus.CounterVec
	failures         *prometheus.CounterVec
	roundDuration    *prometheus.HistogramVec
	algorithmSeconds *prometheus.HistogramVec
	placementSeconds *prometheus.HistogramVec
	actions          *prometheus.CounterVec
	migrated         *prometheus.CounterVec
	queueing         *prometheus.HistogramVec
	jct              *prometheus.HistogramVec
	restartLost      *prometheus.CounterVec
	throughput       *prometheus.GaugeVec
	batchSize        *prometheus.GaugeVec
	batchEfficiency  *prometheus.GaugeVec
	typeMoves        *prometheus.CounterVec
	queueGPUs        *prometheus.GaugeVec
	queueShare       *prometheus.GaugeVec
	reclaims         *prometheus.CounterVec
	// reclaimsSeen is each GPU type's engine's reclaim counts as last
	// seen, so that the counters grow by what is new (an engine's counts
	// restart with the controller, as counters do); the engines' loops
	// share it under mu.
	mu           sync.Mutex
	reclaimsSeen map[api.GPUType]scheduler.QuotaStats
}

// Label names.
const (
	labelQueue   = "queue"
	labelGPUType = "gpu_type"
	labelPhase   = "phase"
	labelKind    = "kind"
	labelPolicy  = "algorithm"
)

// Buckets: computation from 0.1 ms to ~100 s; job times from 1 minute to
// ~2 months.
var (
	computeBuckets = prometheus.ExponentialBuckets(0.0001, 4, 11)
	jobBuckets     = prometheus.ExponentialBuckets(60, 3, 12)
)

// New creates the collectors and registers them with reg; version is
// reported by voda_scheduler_info.
func New(reg prometheus.Registerer, version string) (*Metrics, error) {
	gt := []string{labelGPUType}
	m := &Metrics{
		info: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "voda_scheduler_info",
			Help: "1, with the version of Voda as a label."}, []string{"version"}),
		jobs: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "voda_scheduler_jobs",
			Help: "Jobs the scheduler holds, by GPU type and phase (Waiting, Running)."}, []string{labelGPUType, labelPhase}),
		gpus: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "voda_scheduler_gpus",
			Help: "Schedulable GPUs, by GPU type."}, gt),
		allocated: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "voda_scheduler_gpus_allocated",
			Help: "GPUs allocated to running jobs, by GPU type."}, gt),
		submitted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "voda_scheduler_jobs_submitted_total",
			Help: "Jobs accepted by a scheduler."}, gt),
		finished: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "voda_scheduler_jobs_finished_total",
			Help: "Jobs that ended, by final phase (Completed, Failed)."}, []string{labelGPUType, labelPhase}),
		deleted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "voda_scheduler_jobs_deleted_total",
			Help: "Jobs deleted before they ended."}, gt),
		reschedules: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "voda_scheduler_reschedules_total",
			Help: "Reschedulings that produced a plan, by GPU type and policy."}, []string{labelGPUType, labelPolicy}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "voda_scheduler_reschedule_failures_total",
			Help: "Reschedulings whose policy or placement failed (the previous plan was kept)."}, gt),
		roundDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "voda_scheduler_reschedule_duration_seconds",
			Help: "Time of a whole rescheduling, carrying out its actions included.", Buckets: computeBuckets}, gt),
		algorithmSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "voda_scheduler_algorithm_duration_seconds",
			Help: "Time the policy took to allocate GPUs.", Buckets: computeBuckets}, []string{labelGPUType, labelPolicy}),
		placementSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "voda_scheduler_placement_duration_seconds",
			Help: "Time placement took to bind workers to nodes.", Buckets: computeBuckets}, gt),
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "voda_scheduler_actions_total",
			Help: "Actions planned, by kind (Start, ScaleOut, ScaleIn, Migrate, Halt)."}, []string{labelGPUType, labelKind}),
		migrated: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "voda_scheduler_workers_migrated_total",
			Help: "Workers moved to another node."}, gt),
		queueing: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "voda_scheduler_queueing_delay_seconds",
			Help: "Time from submission to first start.", Buckets: jobBuckets}, gt),
		jct: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "voda_scheduler_job_completion_seconds",
			Help: "Time from submission to completion, of completed jobs.", Buckets: jobBuckets}, gt),
		restartLost: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "voda_scheduler_restart_gpu_seconds_total",
			Help: "GPU-seconds held by jobs between a start, resize or migration and every worker of the new allocation running on its node."}, gt),
		throughput: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "voda_scheduler_job_estimated_throughput",
			Help: "Estimated epochs per hour of each running job that reports progress, at its current workers; the series goes when the job ends."},
			[]string{labelGPUType, "namespace", "job"}),
		batchSize: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "voda_scheduler_job_batch_size",
			Help: "Global batch size in force of each job that lets Voda choose it (spec.batchSize), at its current workers; the series goes when the job ends."},
			[]string{labelGPUType, "namespace", "job"}),
		batchEfficiency: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "voda_scheduler_job_batch_efficiency",
			Help: "Estimated statistical efficiency (0–1) of the batch size in force of each job that lets Voda choose it: an epoch's worth in epochs at its initial batch size."},
			[]string{labelGPUType, "namespace", "job"}),
		typeMoves: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "voda_scheduler_gpu_type_moves_total",
			Help: "Jobs of several GPU types moved from one type to another while they waited."}, []string{"from", "to"}),
		queueGPUs: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "voda_scheduler_queue_gpus",
			Help: "A ClusterQueue's GPUs of a GPU type, by kind: nominal (quota), used (held by its jobs), borrowed (used above the quota), lent (of its idle quota, held by others), pending (needed by its waiting jobs to start), budget (the most it could hold at the last rescheduling)."},
			[]string{labelQueue, labelGPUType, labelKind}),
		queueShare: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "voda_scheduler_queue_weighted_share",
			Help: "A ClusterQueue's use above its quota as a share of what its cohort can lend, divided by its weight."}, []string{labelQueue, labelGPUType}),
		reclaims: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "voda_scheduler_queue_reclaims_total",
			Help: "Times a queue gave GPUs back to others, by how: shrink (by shrinking jobs alone) or stop (stopping some)."}, []string{labelGPUType, "how"}),
		reclaimsSeen: map[api.GPUType]scheduler.QuotaStats{},
	}
	for _, c := range []prometheus.Collector{m.info, m.jobs, m.gpus, m.allocated, m.submitted, m.finished, m.deleted,
		m.reschedules, m.failures, m.roundDuration, m.algorithmSeconds, m.placementSeconds, m.actions, m.migrated, m.queueing, m.jct,
		m.restartLost, m.throughput, m.batchSize, m.batchEfficiency, m.typeMoves, m.queueGPUs, m.queueShare, m.reclaims} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	m.info.WithLabelValues(version).Set(1)
	return m, nil
}

// Round records a rescheduling of a GPU type. Starts that are a job's first
// also record its queueing delay; jobs and gpus are the scheduler's after
// the round.
func (m *Metrics) Round(gpuType api.GPUType, r scheduler.Round, jobs []scheduler.Job, gpus int) {
	t := string(gpuType)
	if r.Err != nil {
		m.failures.WithLabelValues(t).Inc()
		return
	}
	m.reschedules.WithLabelValues(t, r.Policy).Inc()
	m.roundDuration.WithLabelValues(t).Observe(r.Took.Seconds())
	m.algorithmSeconds.WithLabelValues(t, r.Policy).Observe(r.Algorithm.Seconds())
	if r.Placement > 0 {
		m.placementSeconds.WithLabelValues(t).Observe(r.Placement.Seconds())
	}
	started := map[api.JobID]bool{}
	for _, a := range r.Plan.Actions {
		m.actions.WithLabelValues(t, string(a.Kind)).Inc()
		m.migrated.WithLabelValues(t).Add(float64(len(a.Moves)))
		if a.Kind == api.ActionStart {
			started[a.Job] = true
		}
	}
	for _, j := range jobs {
		if started[j.ID] && j.Restarts == 0 && j.Preemptions == 0 && !j.FirstStarted.IsZero() {
			m.queueing.WithLabelValues(t).Observe(j.FirstStarted.Sub(j.Submitted).Seconds())
		}
	}
	m.State(gpuType, jobs, gpus)
}

// State sets the gauges of a GPU type from its jobs and, unless negative,
// its GPUs.
func (m *Metrics) State(gpuType api.GPUType, jobs []scheduler.Job, gpus int) {
	t := string(gpuType)
	counts := map[api.Phase]int{api.PhaseWaiting: 0, api.PhaseRunning: 0}
	allocated := 0
	for _, j := range jobs {
		if j.Phase == api.PhaseWaiting || j.Phase == api.PhaseRunning {
			counts[j.Phase]++
		}
		if j.Phase == api.PhaseRunning {
			allocated += j.Workers * j.Spec.K()
		}
	}
	for p, n := range counts {
		m.jobs.WithLabelValues(t, string(p)).Set(float64(n))
	}
	m.allocated.WithLabelValues(t).Set(float64(allocated))
	if gpus >= 0 {
		m.gpus.WithLabelValues(t).Set(float64(gpus))
	}
}

// TypeMoved counts a job moved from one GPU type to another.
func (m *Metrics) TypeMoved(from, to api.GPUType) {
	m.typeMoves.WithLabelValues(string(from), string(to)).Inc()
}

// Submitted counts a job accepted by a scheduler.
func (m *Metrics) Submitted(gpuType api.GPUType) { m.submitted.WithLabelValues(string(gpuType)).Inc() }

// Deleted counts a job deleted before it ended.
func (m *Metrics) Deleted(gpuType api.GPUType) { m.deleted.WithLabelValues(string(gpuType)).Inc() }

// Finished counts a job that ended at `at` and, if it completed, records
// its completion time.
func (m *Metrics) Finished(gpuType api.GPUType, j scheduler.Job, phase api.Phase, at time.Time) {
	t := string(gpuType)
	m.finished.WithLabelValues(t, string(phase)).Inc()
	if phase == api.PhaseCompleted && !j.Submitted.IsZero() {
		m.jct.WithLabelValues(t).Observe(at.Sub(j.Submitted).Seconds())
	}
}

// RestartLost counts GPU-seconds a job held while restarting after an
// action.
func (m *Metrics) RestartLost(gpuType api.GPUType, gpuSeconds float64) {
	if gpuSeconds > 0 {
		m.restartLost.WithLabelValues(string(gpuType)).Add(gpuSeconds)
	}
}

// Throughput sets a job's estimated epochs per hour.
func (m *Metrics) Throughput(gpuType api.GPUType, namespace, job string, epochsPerHour float64) {
	m.throughput.WithLabelValues(string(gpuType), namespace, job).Set(epochsPerHour)
}

// Batch sets the batch size in force of a job that lets Voda choose it,
// and its estimated efficiency (0–1).
func (m *Metrics) Batch(gpuType api.GPUType, namespace, job string, size int, efficiency float64) {
	m.batchSize.WithLabelValues(string(gpuType), namespace, job).Set(float64(size))
	m.batchEfficiency.WithLabelValues(string(gpuType), namespace, job).Set(efficiency)
}

// JobGone removes a job's series.
func (m *Metrics) JobGone(gpuType api.GPUType, namespace, job string) {
	for _, g := range []*prometheus.GaugeVec{m.throughput, m.batchSize, m.batchEfficiency} {
		g.DeleteLabelValues(string(gpuType), namespace, job)
	}
}

// Queues sets a GPU type's queue gauges from its engine's queues and counts
// the reclaims since it last looked. Call it from the engine's goroutine.
func (m *Metrics) Queues(gpuType api.GPUType, queues []scheduler.QueueStatus, stats scheduler.QuotaStats) {
	t := string(gpuType)
	m.queueGPUs.DeletePartialMatch(prometheus.Labels{labelGPUType: t})
	m.queueShare.DeletePartialMatch(prometheus.Labels{labelGPUType: t})
	for _, q := range queues {
		for kind, v := range map[string]int{"nominal": q.Nominal, "used": q.Used, "borrowed": max(q.Used-q.Nominal, 0),
			"lent": q.Lent, "pending": q.Pending, "budget": q.Budget} {
			m.queueGPUs.WithLabelValues(q.Name, t, kind).Set(float64(v))
		}
		m.queueShare.WithLabelValues(q.Name, t).Set(q.WeightedShare)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	seen, ok := m.reclaimsSeen[gpuType]
	if !ok || stats.Reclaims < seen.Reclaims {
		seen = scheduler.QuotaStats{}
	}
	shrink := stats.ByShrinking - seen.ByShrinking
	stop := stats.Reclaims - seen.Reclaims - shrink
	if shrink > 0 {
		m.reclaims.WithLabelValues(t, "shrink").Add(float64(shrink))
	}
	if stop > 0 {
		m.reclaims.WithLabelValues(t, "stop").Add(float64(stop))
	}
	m.reclaimsSeen[gpuType] = stats
}
