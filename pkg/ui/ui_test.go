package ui_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vodascheduler/voda/pkg/apis/rest"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/ui"
)

var update = flag.Bool("update", false, "rewrite the golden SVG files")

var t0 = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)

func at(sec int) *metav1.Time {
	t := metav1.NewTime(t0.Add(time.Duration(sec) * time.Second))
	return &t
}

// job makes a TrainingJob of user on type gpu.
func job(name, user, gpu string, phase v1alpha1.Phase, minW, workers, k int32, placement ...string) v1alpha1.TrainingJob {
	tj := v1alpha1.TrainingJob{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name, CreationTimestamp: metav1.NewTime(t0)}}
	tj.Spec = v1alpha1.TrainingJobSpec{GPUType: gpu, MinWorkers: minW, MaxWorkers: 8, GPUsPerWorker: k, Submitter: user}
	tj.Status = v1alpha1.TrainingJobStatus{Phase: phase, Workers: workers, GPUsPerWorker: k, Placement: placement, SubmitTime: at(0)}
	return tj
}

func state(viewer ui.Viewer) ui.State {
	a := job("a", "alice", "v100", v1alpha1.PhaseRunning, 1, 3, 1, "n1", "n1", "n2")
	b := job("b", "bob", "v100", v1alpha1.PhaseRunning, 1, 1, 2, "n2")
	w1 := job("w1", "alice", "v100", v1alpha1.PhaseWaiting, 4, 0, 1)
	w1.Status.Message = "waiting: 4 GPUs needed, 1 free"
	w1.Status.SubmitTime = at(10)
	w2 := job("w2", "bob", "v100", v1alpha1.PhaseWaiting, 2, 0, 1)
	w2.Status.SubmitTime = at(5) // earlier than w1: first under FIFO
	w2.Status.Message = "waiting: 2 GPUs needed, 1 free"
	w3 := job("w3", "alice", "k80", v1alpha1.PhaseWaiting, 1, 0, 1)
	w3.Status.Message = "no schedulable nodes of GPU type k80"
	done := job("done", "alice", "v100", v1alpha1.PhaseCompleted, 1, 0, 1)
	return ui.State{
		Now:    t0.Add(time.Minute),
		Viewer: viewer,
		Nodes: []ui.Node{
			{Name: "n2", GPUType: "v100", GPUs: 4, Other: 0},
			{Name: "n1", GPUType: "v100", GPUs: 4, Other: 1},
		},
		Jobs: []v1alpha1.TrainingJob{w1, a, b, w2, w3, done},
		Schedulers: map[string]rest.Scheduler{
			"v100": {GPUType: "v100", Algorithm: "FIFO", RateLimit: "30s", Nodes: 2, GPUs: 8},
			"k80":  {GPUType: "k80", Algorithm: "FIFO", RateLimit: "30s"},
		},
	}
}

func kinds(n ui.NodeView) string {
	var b strings.Builder
	for _, c := range n.Cells {
		switch c.Kind {
		case ui.CellJob:
			b.WriteString(c.Job)
		case ui.CellHidden:
			b.WriteString("#")
		case ui.CellOther:
			b.WriteString("o")
		case ui.CellFree:
			b.WriteString(".")
		}
	}
	return b.String()
}

func TestClusterGrid(t *testing.T) {
	admin := ui.Cluster(state(ui.Viewer{Name: "root", Admin: true}))
	if len(admin) != 2 || admin[0].GPUType != "k80" || admin[1].GPUType != "v100" {
		t.Fatalf("types %+v", admin)
	}
	v := admin[1]
	if len(v.Nodes) != 2 || v.Nodes[0].Name != "n1" || kinds(v.Nodes[0]) != "aao." || kinds(v.Nodes[1]) != "abb." || v.Free != 2 || v.Waiting != 2 {
		t.Errorf("admin's v100 grid: %s %s, %d free, %d waiting", kinds(v.Nodes[0]), kinds(v.Nodes[1]), v.Free, v.Waiting)
	}
	if c := v.Nodes[1].Cells[0]; c.Worker != 2 || c.Title != "a worker 2 (alice)" {
		t.Errorf("cell %+v", c)
	}
	if len(v.Holders) != 2 || v.Holders[0].Job != "a" || v.Holders[0].GPUs != 3 || v.Holders[1].Job != "b" || v.Holders[1].GPUs != 2 {
		t.Errorf("admin's key: %+v", v.Holders)
	}
	alice := ui.Cluster(state(ui.Viewer{Name: "alice"}))[1]
	if kinds(alice.Nodes[1]) != "a##." || len(alice.Holders) != 1 {
		t.Errorf("alice's n2: %s, want bob's job hidden, and only her job in the key (%+v)", kinds(alice.Nodes[1]), alice.Holders)
	}
	if len(admin[0].Nodes) != 0 || admin[0].Waiting != 1 {
		t.Errorf("k80: %+v", admin[0])
	}
}

func TestQueuePositionsAndReasons(t *testing.T) {
	q := ui.Queue(state(ui.Viewer{Name: "alice"}), ui.QueueFilter{})
	var got []string
	for _, e := range q.Entries {
		got = append(got, e.Job.Name+":"+string(e.Phase)+":"+e.Code)
	}
	want := "w3:Waiting:no-nodes w1:Waiting:no-room a:Running:running"
	if strings.Join(got, " ") != want {
		t.Fatalf("alice's queue %v, want %s", got, want)
	}
	w1 := q.Entries[1]
	if w1.Position != 2 || w1.Ahead != 1 || w1.Reason != "4 GPUs needed, 1 free; 1 job ahead" || w1.GPUs != 4 || q.Hidden != 1 {
		t.Errorf("w1 %+v, hidden %d", w1, q.Hidden)
	}
	if r := q.Entries[0].Reason; r != "GPU type k80 has no schedulable nodes; first in line" {
		t.Errorf("w3: %q", r)
	}
	// Waited counts from the status's accounting to now.
	if w1.Waited != 50*time.Second {
		t.Errorf("w1 waited %s", w1.Waited)
	}
	// Under SRJF the shorter job goes first.
	s := state(ui.Viewer{Name: "root", Admin: true})
	sc := s.Schedulers["v100"]
	sc.Algorithm = "SRJF"
	s.Schedulers["v100"] = sc
	short := int64(60)
	for i := range s.Jobs {
		if s.Jobs[i].Name == "w1" {
			s.Jobs[i].Status.RemainingSeconds = &short
		}
	}
	q = ui.Queue(s, ui.QueueFilter{GPUType: "v100", Phase: "Waiting"})
	if len(q.Entries) != 2 || q.Entries[0].Job.Name != "w1" || q.Entries[0].Position != 1 || q.Entries[1].Position != 2 {
		t.Errorf("SRJF queue: %+v", q.Entries)
	}
	// Tiresias says where a demoted job stands.
	s.Schedulers["v100"] = rest.Scheduler{GPUType: "v100", Algorithm: "Tiresias", Nodes: 2, GPUs: 8}
	for i := range s.Jobs {
		if s.Jobs[i].Name == "w2" {
			s.Jobs[i].Status.Queue = 1
			s.Jobs[i].Status.GPUMillis = 61_000_000
		}
	}
	q = ui.Queue(s, ui.QueueFilter{User: "bob"})
	if len(q.Entries) != 2 || !strings.Contains(q.Entries[0].Reason, "demoted to queue 1 after 3 600 GPU-s (it has had 61 000 GPU-s)") {
		t.Errorf("bob's Tiresias queue: %+v", q.Entries)
	}
	// A job in a lower queue by its priority was not demoted.
	for i := range s.Jobs {
		if s.Jobs[i].Name == "w2" {
			s.Jobs[i].Status.GPUMillis = 0
		}
	}
	q = ui.Queue(s, ui.QueueFilter{User: "bob"})
	if r := q.Entries[0].Reason; !strings.HasSuffix(r, "; in queue 1 by its priority") {
		t.Errorf("w2 by priority: %q", r)
	}
}

func TestTimelineGolden(t *testing.T) {
	tj := job("train", "alice", "v100", v1alpha1.PhaseCompleted, 1, 0, 1)
	tj.Status.FinishTime = at(600)
	ev := func(sec int, reason, msg string, workers int, sized bool) ui.JobEvent {
		return ui.JobEvent{Event: rest.Event{Reason: reason, Message: msg, Count: 1, FirstTime: t0.Add(time.Duration(sec) * time.Second), LastTime: t0.Add(time.Duration(sec) * time.Second)}, Workers: workers, Sized: sized}
	}
	events := []ui.JobEvent{
		ev(0, "Submitted", "Queued", 0, false),
		ev(30, "Started", "Started with 4 workers on n1", 4, true),
		ev(200, "Scaled", "Scaled 4→2 workers", 2, true),
		ev(300, "Preempted", "Preempted: 2 workers released", 0, true),
		ev(420, "Resumed", "Resumed with 8 workers on n1, n2", 8, true),
		ev(500, "Migrated", "Migrated worker-0 n1→n2", 0, false),
		ev(600, "Completed", "Training completed", 0, true),
	}
	tl := ui.JobTimeline(&tj, events, t0.Add(time.Hour))
	svg := string(tl.SVG())
	for _, k := range []string{"submit", "start", "scale", "preempt", "restart", "migrate", "end"} {
		if !strings.Contains(svg, `data-kind="`+k+`"`) {
			t.Errorf("no %s mark", k)
		}
	}
	// Tooltips carry the sizes and the Events' words, escaped.
	for _, want := range []string{"<title>4 workers from 2026-11-24 10:00:30</title>", "Scaled 4→2 workers", "n1→n2"} {
		if !strings.Contains(svg, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	golden(t, "job-timeline.svg", svg)

	// Without Events, the status's times.
	tj.Status.FirstStartTime, tj.Status.LastStartTime, tj.Status.Workers = at(30), at(420), 8
	svg = string(ui.JobTimeline(&tj, nil, t0.Add(time.Hour)).SVG())
	for _, k := range []string{"start", "restart", "end"} {
		if !strings.Contains(svg, `data-kind="`+k+`"`) {
			t.Errorf("status-only timeline: no %s mark", k)
		}
	}

	// Many rows, an axis in durations: the simulator's view.
	many := ui.Timeline{Start: t0, End: t0.Add(3 * time.Hour), Unit: "GPUs"}
	for i, name := range []string{"j1", "j<2>"} {
		many.Rows = append(many.Rows, ui.Row{Label: name, Steps: []ui.Step{{At: t0.Add(time.Duration(i) * time.Hour), Value: 2 + i}, {At: t0.Add(2 * time.Hour), Value: 0}}})
	}
	svg = string(many.SVG())
	if !strings.Contains(svg, `data-row="j&lt;2&gt;"`) || strings.Contains(svg, "<2>") {
		t.Error("labels are not escaped")
	}
	golden(t, "rows.svg", svg)
	util := string(ui.Series{Steps: []ui.Step{{At: t0, Value: 3}, {At: t0.Add(time.Hour), Value: 8}}, Capacity: 8}.AreaSVG(t0, t0.Add(2*time.Hour), "GPUs"))
	golden(t, "utilisation.svg", util)
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the golden file (go test -update rewrites it):\n%s", name, got)
	}
}

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 45 * time.Second: "45s", 12*time.Minute + 30*time.Second: "12m30s", 3 * time.Minute: "3m",
		3*time.Hour + 5*time.Minute: "3h05m", 52 * time.Hour: "2d04h", -90 * time.Second: "-1m30s",
	} {
		if got := ui.Duration(d); got != want {
			t.Errorf("Duration(%s) = %q, want %q", d, got, want)
		}
	}
}

// TestPagesRender checks every page renders, with the data-* attributes
// the browser test and scripts rely on, escaped text, and relative URLs
// only.
func TestPagesRender(t *testing.T) {
	s := state(ui.Viewer{Name: "root", Admin: true})
	v100 := s.Schedulers["v100"]
	v100.Parameters = []string{"tiresias.thresholds=2h", "tiresias.promote-knob=0"}
	v100.PolicyParams = []string{"tiresias.thresholds=2h", "hesrpt.aging=1h"}
	s.Schedulers["v100"] = v100
	tj := s.Jobs[0]
	pages := []ui.Page{
		{Page: "login", Title: "Log in", Root: "./", Data: ui.LoginData{Next: "queue", Error: `bad <token>`}},
		{Page: "cluster", Title: "Cluster", Root: "./", Viewer: s.Viewer, CSRF: "tok", Stream: "events", Data: ui.Cluster(s)},
		{Page: "queue", Title: "Queue", Root: "./", Viewer: s.Viewer, CSRF: "tok", Stream: "events", Data: ui.Queue(s, ui.QueueFilter{})},
		{Page: "job", Title: "w1", Root: "../", Viewer: s.Viewer, CSRF: "tok", Stream: "../events?job=w1", Data: ui.Job(s, &tj, nil, "gpuType: v100\n")},
		{Page: "message", Title: "Forbidden", Root: "./", Viewer: s.Viewer, Data: ui.MessageData{Status: 403, Message: "no <b>", Back: "queue"}},
		{Page: "teams", Title: "Teams", Root: "./", Viewer: s.Viewer, CSRF: "tok", Stream: "events", Data: ui.Teams(teams())},
	}
	for _, p := range pages {
		var full, part bytes.Buffer
		if err := ui.Render(&full, p, false); err != nil {
			t.Fatalf("%s: %v", p.Page, err)
		}
		if err := ui.Render(&part, p, true); err != nil {
			t.Fatalf("%s partial: %v", p.Page, err)
		}
		html := full.String()
		if !strings.Contains(html, `data-page="`+p.Page+`"`) || !strings.Contains(html, part.String()) || strings.Contains(part.String(), "<html") {
			t.Errorf("%s: the partial is not the full page's main part", p.Page)
		}
		if m := regexp.MustCompile(`(?:href|src|action)="(/|https?:)[^"]*"`).FindString(html); m != "" {
			t.Errorf("%s: absolute URL %s", p.Page, m)
		}
		if strings.Contains(html, "<token>") || strings.Contains(html, "no <b>") {
			t.Errorf("%s: unescaped text", p.Page)
		}
	}
	var b bytes.Buffer
	if err := ui.Render(&b, pages[3], false); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	if err := ui.Render(&b, pages[1], false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "2 nodes, 8 GPUs: 0 held by jobs, 0 by other pods, 2 free; 2 jobs waiting.") ||
		!strings.Contains(b.String(), `FIFO</span> with <code data-parameter>tiresias.thresholds=2h</code>, <code data-parameter>tiresias.promote-knob=0</code>, at most`) ||
		!strings.Contains(b.String(), `name="policyParams" value="tiresias.thresholds=2h hesrpt.aging=1h"`) ||
		strings.Count(b.String(), "data-parameter") != 2 {
		t.Errorf("cluster page's summary:\n%s", b.String())
	}
	b.Reset()
	if err := ui.Render(&b, pages[3], false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`data-position="2"`, `data-reason-code="no-room"`, `data-stream="../events?job=w1"`, `href="../static/style.css"`, `data-timeline`, "kubectl -n ml logs -l vodascheduler.io/job=w1"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("job page lacks %s", want)
		}
	}
	if strings.Contains(b.String(), "data-batch") {
		t.Error("a job with a batch of its own shows a batch size")
	}
	// A job that lets Voda choose its batch size shows the batch in force.
	b.Reset()
	tj.Spec.BatchSize = &v1alpha1.BatchSizeSpec{Initial: 64, Max: 1024}
	tj.Status.Batch = &v1alpha1.BatchStatus{Global: 512, Local: 64, Accumulation: 2, EfficiencyPercent: 71}
	tj.Status.Progress = &v1alpha1.TrainingProgress{NoiseScale: resource.NewQuantity(900, resource.DecimalSI)}
	page := pages[3]
	page.Data = ui.Job(s, &tj, nil, "")
	if err := ui.Render(&b, page, false); err != nil {
		t.Fatal(err)
	}
	if want := "<td data-batch>512 (64 per GPU × 2 accumulation steps), 71% efficient; chosen from 64–1024 by a noise scale of 900 samples</td>"; !strings.Contains(b.String(), want) {
		t.Errorf("job page lacks %s", want)
	}
	if err := ui.Render(&b, ui.Page{Page: "nosuch"}, false); err == nil {
		t.Error("an unknown page rendered")
	}
}

func teams() []rest.Queue {
	return []rest.Queue{
		{Name: "default", Default: true, ClusterQueue: "vision", Cohort: "research", Nominal: 8, Used: 12, Borrowed: 4, RunningJobs: 3,
			GPUTypes: []v1alpha1.QueueUsage{{GPUType: "v100", Nominal: 8, Used: 12, Borrowed: 4, Budget: 12}}},
		{Name: "nlp", ClusterQueue: "nlp", Cohort: "research", Nominal: 8, Used: 4, Pending: 4, WaitingJobs: 1,
			GPUTypes: []v1alpha1.QueueUsage{{GPUType: "v100", Nominal: 8, Used: 4, Pending: 4, Budget: 4, Lent: 4}}},
		{Name: "old", ClusterQueue: "gone", Message: "ClusterQueue gone does not exist: the jobs of this queue wait"},
	}
}

// The teams page draws each queue's use against its quota and says when a
// queue's waiting jobs wait for quota.
func TestTeamsPage(t *testing.T) {
	var b bytes.Buffer
	p := ui.Page{Page: "teams", Title: "Teams", Root: "./", Viewer: ui.Viewer{Name: "alice"}, Data: ui.Teams(teams())}
	if err := ui.Render(&b, p, false); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, want := range []string{
		`data-queue="default" data-cluster-queue="vision"`,
		`<span class="in" style="width: 66%"></span><span class="over" style="width: 33%"></span>`, // 8 in quota, 4 borrowed, of 12
		`data-gpu-type="v100" data-nominal="8" data-used="4" data-borrowed="0" data-lent="4" data-pending="4"`,
		`data-at-quota`, `ClusterQueue gone does not exist`, `href="./teams" aria-current="page"`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("teams page lacks %s", want)
		}
	}
	if strings.Count(html, "data-at-quota") != 1 {
		t.Errorf("%d queues at their quota, want 1 (nlp)", strings.Count(html, "data-at-quota"))
	}
	b.Reset()
	if err := ui.Render(&b, ui.Page{Page: "teams", Root: "./", Viewer: ui.Viewer{Name: "alice"}, Data: ui.Teams(nil)}, false); err != nil || !strings.Contains(b.String(), "data-no-queues") {
		t.Errorf("no queues: %v\n%s", err, b.String())
	}
}
