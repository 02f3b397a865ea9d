package metrics_test

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/metrics"
	"github.com/vodascheduler/voda/pkg/scheduler"
	"github.com/vodascheduler/voda/pkg/server"
)

var t0 = time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)

// exercise records one of everything.
func exercise(m *metrics.Metrics) {
	jobs := []scheduler.Job{
		{ID: "a", Phase: api.PhaseRunning, Workers: 4, Submitted: t0, FirstStarted: t0.Add(90 * time.Second)},
		{ID: "b", Phase: api.PhaseRunning, Workers: 2, Submitted: t0, FirstStarted: t0, Rescales: 1},
		{ID: "c", Phase: api.PhaseRunning, Workers: 2, Submitted: t0, FirstStarted: t0},
		{ID: "d", Phase: api.PhaseWaiting, Submitted: t0, FirstStarted: t0, Preemptions: 1},
		{ID: "e", Phase: api.PhaseWaiting, Submitted: t0},
	}
	m.Submitted("v100")
	m.Round("v100", scheduler.Round{
		Policy: "Tiresias", Took: 30 * time.Millisecond,
		RoundTimes: scheduler.RoundTimes{Algorithm: 2 * time.Millisecond, Placement: time.Millisecond},
		Plan: api.Plan{Actions: []api.Action{
			{Kind: api.ActionHalt, Job: "d"},
			{Kind: api.ActionStart, Job: "a", To: 4},
			{Kind: api.ActionScaleOut, Job: "b", From: 1, To: 2},
			{Kind: api.ActionMigrate, Job: "c", Moves: []api.WorkerMove{{Index: 0}, {Index: 1}}},
		}},
	}, jobs, 16)
	m.Round("v100", scheduler.Round{Err: os.ErrInvalid}, nil, 16)
	m.Finished("v100", scheduler.Job{Submitted: t0}, api.PhaseCompleted, t0.Add(time.Hour))
	m.Finished("v100", scheduler.Job{Submitted: t0}, api.PhaseFailed, t0.Add(time.Minute))
	m.Deleted("v100")
	m.RestartLost("v100", 120)
	m.Throughput("v100", "ml", "bert", 30)
	m.Throughput("v100", "ml", "gone", 10)
	m.Batch("v100", "ml", "gone", 512, 0.8)
	m.JobGone("v100", "ml", "gone")
	m.Batch("v100", "ml", "tuned", 1024, 0.75)
	team := func(name string, nominal, used, pending int, share float64) scheduler.QueueStatus {
		q := scheduler.QueueStatus{Used: used, Pending: pending, WeightedShare: share}
		q.Name, q.Nominal, q.Budget, q.Lent = name, nominal, used, max(nominal-used, 0)
		return q
	}
	m.Queues("v100", []scheduler.QueueStatus{team("a", 8, 12, 0, 0.5), team("b", 8, 4, 2, 0), team("gone", 1, 0, 0, 0)},
		scheduler.QuotaStats{Reclaims: 2, ByShrinking: 1})
	// A later round: queue "gone" was deleted, one more reclaim by shrinking.
	m.Queues("v100", []scheduler.QueueStatus{team("a", 8, 12, 0, 0.5), team("b", 8, 4, 2, 0)},
		scheduler.QuotaStats{Reclaims: 3, ByShrinking: 2})
}

func TestMetricsRecordWhatHappened(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, "1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	exercise(m)
	want := map[string]float64{
		`voda_scheduler_gpus{gpu_type="v100"}`:                                   16,
		`voda_scheduler_queue_gpus{gpu_type="v100",kind="borrowed",queue="a"}`:   4,
		`voda_scheduler_queue_gpus{gpu_type="v100",kind="lent",queue="b"}`:       4,
		`voda_scheduler_queue_gpus{gpu_type="v100",kind="pending",queue="b"}`:    2,
		`voda_scheduler_queue_weighted_share{gpu_type="v100",queue="a"}`:         0.5,
		`voda_scheduler_queue_reclaims_total{gpu_type="v100",how="shrink"}`:      2,
		`voda_scheduler_queue_reclaims_total{gpu_type="v100",how="stop"}`:        1,
		`voda_scheduler_gpus_allocated{gpu_type="v100"}`:                         8,
		`voda_scheduler_jobs{gpu_type="v100",phase="Running"}`:                   3,
		`voda_scheduler_jobs{gpu_type="v100",phase="Waiting"}`:                   2,
		`voda_scheduler_jobs_submitted_total{gpu_type="v100"}`:                   1,
		`voda_scheduler_jobs_finished_total{gpu_type="v100",phase="Completed"}`:  1,
		`voda_scheduler_jobs_finished_total{gpu_type="v100",phase="Failed"}`:     1,
		`voda_scheduler_jobs_deleted_total{gpu_type="v100"}`:                     1,
		`voda_scheduler_reschedules_total{algorithm="Tiresias",gpu_type="v100"}`: 1,
		`voda_scheduler_reschedule_failures_total{gpu_type="v100"}`:              1,
		`voda_scheduler_actions_total{gpu_type="v100",kind="Start"}`:             1,
		`voda_scheduler_actions_total{gpu_type="v100",kind="Halt"}`:              1,
		`voda_scheduler_workers_migrated_total{gpu_type="v100"}`:                 2,
		`voda_scheduler_info{version="1.2.3"}`:                                   1,
		// Only a's start is a first start: 90 s in the queue.
		`voda_scheduler_queueing_delay_seconds_sum{gpu_type="v100"}`:   90,
		`voda_scheduler_queueing_delay_seconds_count{gpu_type="v100"}`: 1,
		// Only the completed job counts: one hour.
		`voda_scheduler_job_completion_seconds_sum{gpu_type="v100"}`:                          3600,
		`voda_scheduler_algorithm_duration_seconds_sum{algorithm="Tiresias",gpu_type="v100"}`: 0.002,
		`voda_scheduler_reschedule_duration_seconds_count{gpu_type="v100"}`:                   1,
		`voda_scheduler_job_batch_size{gpu_type="v100",job="tuned",namespace="ml"}`:           1024,
		`voda_scheduler_job_batch_efficiency{gpu_type="v100",job="tuned",namespace="ml"}`:     0.75,
	}
	got := samples(t, reg)
	if _, ok := got[`voda_scheduler_job_batch_size{gpu_type="v100",job="gone",namespace="ml"}`]; ok {
		t.Error("an ended job's batch size stays")
	}
	if _, ok := got[`voda_scheduler_job_estimated_throughput{gpu_type="v100",job="gone",namespace="ml"}`]; ok {
		t.Error("an ended job's series stays")
	}
	if _, ok := got[`voda_scheduler_queue_gpus{gpu_type="v100",kind="nominal",queue="gone"}`]; ok {
		t.Error("a deleted queue's series stays")
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
}

// samples flattens a registry into "name{labels}" → value, with histograms
// as _sum and _count.
func samples(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+`="`+l.GetValue()+`"`)
			}
			key := "{" + strings.Join(ls, ",") + "}"
			switch {
			case m.Gauge != nil:
				out[mf.GetName()+key] = m.GetGauge().GetValue()
			case m.Counter != nil:
				out[mf.GetName()+key] = m.GetCounter().GetValue()
			case m.Histogram != nil:
				out[mf.GetName()+"_sum"+key] = m.GetHistogram().GetSampleSum()
				out[mf.GetName()+"_count"+key] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

// TestDashboardQueriesExportedMetrics checks that every metric the Grafana
// dashboard queries is one Voda exports.
func TestDashboardQueriesExportedMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, "test")
	if err != nil {
		t.Fatal(err)
	}
	exercise(m)
	s, err := server.New(fake.NewClientBuilder().Build(), server.TokenReview{}, server.Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	s.Handler().ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/healthz", nil))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	for _, mf := range mfs {
		exported[mf.GetName()] = true
		if len(mf.GetMetric()) > 0 && mf.GetMetric()[0].Histogram != nil {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				exported[mf.GetName()+suffix] = true
			}
		}
	}

	data, err := os.ReadFile("../../deploy/grafana/voda.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Query any `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("voda.json: %v", err)
	}
	name := regexp.MustCompile(`\bvoda_[a-z_]+`)
	var exprs []string
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, v := range dash.Templating.List {
		if q, ok := v.Query.(string); ok {
			exprs = append(exprs, q)
		}
	}
	var queried []string
	for _, e := range exprs {
		for _, n := range name.FindAllString(e, -1) {
			if !exported[n] {
				t.Errorf("the dashboard queries %s, which Voda does not export (in %q)", n, e)
			}
			queried = append(queried, n)
		}
	}
	// And the dashboard shows every scheduler metric.
	for n := range exported {
		if strings.HasPrefix(n, "voda_scheduler_") && !strings.HasSuffix(n, "_sum") && !strings.HasSuffix(n, "_count") &&
			!slices.ContainsFunc(queried, func(q string) bool { return strings.HasPrefix(q, n) }) {
			t.Errorf("the dashboard shows nothing of %s", n)
		}
	}
}
