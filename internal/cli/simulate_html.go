package cli

import (
	"cmp"
	"errors"
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/vodascheduler/voda/pkg/simulator"
	"github.com/vodascheduler/voda/pkg/ui"
)

// htmlRows is how many job rows a page of `voda simulate --html` shows in
// all: every job of a policy run of a few hundred jobs, and a page of about
// 2 MB at most for the built-in workload's nine runs.
const htmlRows = 500

// htmlPage is `voda simulate --html`: one self-contained HTML page (inline
// CSS and SVG, no scripts, no external resources) showing runs: each
// run's summary, GPUs in use over time against the cluster's GPUs, and one
// timeline row per job. It lives here rather than in pkg/simulator because
// pkg/ui, which draws the timelines, imports Kubernetes types.
type htmlPage struct {
	// Config is the cluster and rescheduling the runs shared; its Policy
	// is not used.
	Config simulator.Config
	// Results are the runs, each recorded with Config.RecordEvents.
	Results []simulator.Result
	// MaxRows caps the job rows of the whole page; the runs share them
	// evenly, each showing its first jobs by submission. 0 means htmlRows.
	MaxRows int
}

// htmlEpoch is the page's time zero, the trace start; any fixed instant
// would do, as the page shows times since it.
var htmlEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// write writes the page. It leaves out the wall-clock time of the runs,
// so the same runs always give the same bytes.
func (p htmlPage) write(w io.Writer) error {
	limit := p.MaxRows
	if limit <= 0 {
		limit = htmlRows
	}
	limit = max(limit/max(len(p.Results), 1), 1)
	data := htmlData{Cluster: htmlCluster(p.Config), Information: cmp.Or(p.Config.Information, simulator.InfoOracle)}
	for i, r := range p.Results {
		if r.Events == nil && len(r.Jobs) > 0 {
			return fmt.Errorf("%s on %s has no recorded events (Config.RecordEvents)", r.Policy, r.Workload)
		}
		data.Runs = append(data.Runs, newHTMLRun(i, r, limit))
	}
	if len(data.Runs) == 0 {
		return errors.New("no runs to show")
	}
	data.Title = "voda simulate: " + data.Runs[0].Summary.Workload
	if len(data.Runs) == 1 {
		data.Title += ", " + data.Runs[0].Summary.Policy
	}
	return htmlTemplate.Execute(w, data)
}

type htmlData struct {
	Title, Cluster, Information string
	Runs                        []htmlRun
}

type htmlRun struct {
	ID           string
	Summary      simulator.Summary
	Metrics      []htmlMetric
	Utilisation  template.HTML
	Timeline     template.HTML
	Shown, Total int
}

// htmlMetric is one summary number: its JSON key, its exact value (as the
// CSV output prints it) and the text people read.
type htmlMetric struct {
	Key, Label, Value, Text string
}

func (r htmlRun) Omitted() int { return r.Total - r.Shown }

func htmlCluster(c simulator.Config) string {
	s := fmt.Sprintf("%d nodes × %d GPUs (%d GPUs), restart delay %s, ", c.Nodes, c.GPUsPerNode, c.Nodes*c.GPUsPerNode, ui.Duration(c.RestartDelay))
	if c.Interval > 0 {
		return s + "rescheduling every " + ui.Duration(c.Interval)
	}
	return s + "rescheduling on events, at most every " + ui.Duration(c.RateLimit)
}

func newHTMLRun(i int, r simulator.Result, limit int) htmlRun {
	s := simulator.Summarise(r)
	run := htmlRun{ID: "run-" + strconv.Itoa(i+1), Summary: s, Metrics: htmlMetrics(s), Total: len(r.Jobs), Shown: min(len(r.Jobs), limit)}
	steps, end := htmlUtilisation(r)
	run.Utilisation = ui.Series{Steps: steps, Capacity: r.GPUs}.AreaSVG(htmlEpoch, htmlAt(end), "GPUs")
	rows := htmlJobRows(r, run.Shown)
	run.Timeline = ui.Timeline{Start: htmlEpoch, End: htmlAt(end), Rows: rows, Unit: "GPUs"}.SVG()
	return run
}

// htmlUtilisation is the GPUs in use over a run, and when the run ends.
func htmlUtilisation(r simulator.Result) ([]ui.Step, float64) {
	end := 0.0
	for _, j := range r.Jobs {
		end = max(end, j.Finish)
	}
	var steps []ui.Step
	if len(r.Timeline) == 0 || r.Timeline[0].T > 0 {
		steps = append(steps, ui.Step{At: htmlEpoch})
	}
	for _, pt := range r.Timeline {
		steps = addHTMLStep(steps, ui.Step{At: htmlAt(pt.T), Value: pt.GPUs})
		end = max(end, pt.T)
	}
	return steps, end
}

func htmlMetrics(s simulator.Summary) []htmlMetric {
	num := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	pct := func(x float64) string { return strconv.FormatFloat(100*x, 'f', 0, 64) + "%" }
	two := func(x float64) string { return strconv.FormatFloat(x, 'f', 2, 64) }
	m := func(key, label string, v float64, text string) htmlMetric {
		return htmlMetric{Key: key, Label: label, Value: num(v), Text: text}
	}
	return []htmlMetric{
		m("jobs", "Jobs", float64(s.Jobs), strconv.Itoa(s.Jobs)),
		m("avg_jct_s", "Average JCT", s.AvgJCT, humanSeconds(s.AvgJCT)),
		m("p50_jct_s", "Median JCT", s.P50JCT, humanSeconds(s.P50JCT)),
		m("p99_jct_s", "p99 JCT", s.P99JCT, humanSeconds(s.P99JCT)),
		m("makespan_s", "Makespan", s.Makespan, humanSeconds(s.Makespan)),
		m("avg_queue_s", "Average queueing", s.AvgQueue, humanSeconds(s.AvgQueue)),
		m("gpu_util", "GPU utilisation", s.GPUUtil, pct(s.GPUUtil)),
		m("eff_util", "Useful utilisation", s.EffUtil, pct(s.EffUtil)),
		m("rescales_per_job", "Rescales per job", s.RescalesPerJob, two(s.RescalesPerJob)),
		m("restarts_per_job", "Restarts per job", s.RestartsPerJob, two(s.RestartsPerJob)),
		m("lower_bound_s", "Lower bound on average JCT", s.LowerBound, humanSeconds(s.LowerBound)),
		m("jct_over_bound", "Average JCT / bound", s.JCTOverBound, two(s.JCTOverBound)),
		m("worst_rho", "Worst finish-time fairness ρ", s.WorstRho, two(s.WorstRho)),
		m("share_rho_above_1_05", "Jobs with ρ > 1.05", s.ShareRhoAbove105, pct(s.ShareRhoAbove105)),
	}
}

// htmlAt is a moment of a run, in seconds from the trace start, on the
// page's time axis.
func htmlAt(sec float64) time.Time { return htmlEpoch.Add(time.Duration(sec * float64(time.Second))) }

// humanSeconds formats seconds for people: 45s, 1h30m.
func humanSeconds(sec float64) string { return ui.Duration(time.Duration(sec * float64(time.Second))) }

// htmlJobRows is one timeline row for each of the first n jobs (r.Jobs is
// in submission order): the GPUs the job holds over time and a mark for
// each event.
func htmlJobRows(r simulator.Result, n int) []ui.Row {
	rows := make([]ui.Row, n)
	index := make(map[string]int, n)
	for i, j := range r.Jobs[:n] {
		rows[i].Label = j.Name
		index[j.Name] = i
	}
	started := make([]bool, n)
	held := make([]int, n)
	for _, e := range r.Events {
		i, ok := index[e.Job]
		if !ok {
			continue
		}
		row, j, t := &rows[i], r.Jobs[i], htmlAt(e.T)
		var kind, title string
		switch e.Kind {
		case simulator.EventSubmit:
			kind, title = ui.MarkSubmit, fmt.Sprintf("submitted: %s, batch %d, asks for %d GPUs", j.Model, j.Batch, j.GPUs)
		case simulator.EventStart:
			kind, title = ui.MarkStart, fmt.Sprintf("started on %d GPUs", e.GPUs)
			if started[i] {
				kind, title = ui.MarkRestart, fmt.Sprintf("resumed on %d GPUs", e.GPUs)
			}
			started[i] = true
		case simulator.EventScaleIn, simulator.EventScaleOut:
			kind, title = ui.MarkScale, fmt.Sprintf("scaled from %d to %d GPUs", held[i], e.GPUs)
		case simulator.EventHalt:
			kind, title = ui.MarkPreempt, "preempted"
		case simulator.EventMigrate:
			kind, title = ui.MarkMigrate, fmt.Sprintf("migrated on %d GPUs", e.GPUs)
		case simulator.EventFinish:
			kind, title = ui.MarkEnd, "finished, JCT "+humanSeconds(j.JCT)
		default:
			continue
		}
		if why := actionDetail(e.Reason, r.Policy); why != "" {
			title += " (" + why + ")"
		}
		row.Marks = append(row.Marks, ui.Mark{At: t, Kind: kind, Title: title})
		if e.Kind != simulator.EventSubmit {
			row.Steps = addHTMLStep(row.Steps, ui.Step{At: t, Value: e.GPUs})
			held[i] = e.GPUs
		}
	}
	return rows
}

// actionDetail is what an action's reason adds to its mark's title: the
// reason without the policy's name, which the page shows once, and without
// the GPUs held, which the title gives.
func actionDetail(reason, policy string) string {
	reason = strings.TrimPrefix(reason, "preempted by ")
	reason = strings.TrimPrefix(reason, policy+": ")
	if rest, ok := strings.CutPrefix(reason, "running: "); ok {
		_, reason, _ = strings.Cut(rest, ", ")
	}
	return reason
}

// addHTMLStep appends s to a step curve; a step at the same moment as the
// last replaces it, and one that changes nothing is dropped.
func addHTMLStep(steps []ui.Step, s ui.Step) []ui.Step {
	if k := len(steps); k > 0 {
		if steps[k-1].At.Equal(s.At) {
			steps[k-1] = s
			if k > 1 && steps[k-2].Value == s.Value {
				steps = steps[:k-1]
			}
			return steps
		}
		if steps[k-1].Value == s.Value {
			return steps
		}
	}
	return append(steps, s)
}

var htmlTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8"/>
<meta name="viewport" content="width=device-width, initial-scale=1"/>
<title>{{.Title}}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; color: #222; margin: 1.5em auto; max-width: 920px; padding: 0 1em; }
h1 { font-size: 1.4em; margin-bottom: .2em; }
h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
h3 { font-size: 1em; margin: 1.2em 0 .3em; }
p.setup { color: #555; margin-top: 0; }
table { border-collapse: collapse; }
th, td { padding: 2px 10px 2px 0; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
table.runs th { border-bottom: 1px solid #ccc; }
dl.summary { display: grid; grid-template-columns: repeat(4, auto); gap: 2px 18px; margin: .5em 0; }
dl.summary div { display: flex; justify-content: space-between; gap: 8px; border-bottom: 1px dotted #ddd; }
dl.summary dt { color: #555; }
dl.summary dd { margin: 0; font-weight: 600; font-variant-numeric: tabular-nums; }
figure { margin: 0; overflow-x: auto; }
figcaption, .note, .legend { color: #555; font-size: .9em; }
.note { background: #fff6d5; padding: 4px 8px; }
svg.timeline { display: block; }
svg.timeline .band { fill: #f3f5f7; }
svg.timeline .label { font: 10px sans-serif; fill: #333; }
svg.timeline .area { fill: #6baed6; }
figure.utilisation svg.timeline .area { fill: #a1d99b; stroke: #31a354; stroke-width: .6; }
svg.timeline .hit { fill: transparent; }
svg.timeline .hit:hover { fill: rgba(0, 0, 0, .08); }
svg.timeline .axis line { stroke: #888; }
svg.timeline .axis text { font: 10px sans-serif; fill: #555; text-anchor: middle; }
.mark circle, .mark rect, .mark path { stroke-width: 1.2; }
.submit circle, .key.submit { fill: #fff; stroke: #777; color: #777; }
.start circle, .key.start { fill: #2ca02c; stroke: #2ca02c; color: #2ca02c; }
.end circle, .key.end { fill: #222; stroke: #222; color: #222; }
.scale path, .key.scale { fill: #ff7f0e; stroke: #ff7f0e; color: #ff7f0e; }
.preempt path, .key.preempt { stroke: #d62728; stroke-width: 2; fill: none; color: #d62728; }
.fail path, .key.fail { stroke: #000; stroke-width: 2; fill: none; color: #000; }
.migrate rect, .key.migrate { fill: #9467bd; stroke: #9467bd; color: #9467bd; }
.restart rect, .key.restart { fill: #fff; stroke: #08519c; color: #08519c; }
.key { font-weight: bold; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p class="setup">Cluster: {{.Cluster}}. Information: {{.Information}}.</p>
{{- if gt (len .Runs) 1}}
<table class="runs">
<tr><th>Policy</th><th>Workload</th><th>Avg JCT</th><th>p99 JCT</th><th>Makespan</th><th>GPU util</th><th>JCT/bound</th></tr>
{{- range .Runs}}
<tr><td><a href="#{{.ID}}">{{.Summary.Policy}}</a></td><td>{{.Summary.Workload}}</td>
{{- range .Metrics}}{{if eq .Key "avg_jct_s" "p99_jct_s" "makespan_s" "gpu_util" "jct_over_bound"}}<td class="num">{{.Text}}</td>{{end}}{{end}}</tr>
{{- end}}
</table>
{{- end}}
{{range .Runs}}
<section class="run" id="{{.ID}}" data-policy="{{.Summary.Policy}}" data-workload="{{.Summary.Workload}}">
<h2>{{.Summary.Policy}} on {{.Summary.Workload}}</h2>
<p class="setup">GPUs per worker: {{.Summary.GPUsPerWorker}}.</p>
<dl class="summary">
{{- range .Metrics}}
<div><dt>{{.Label}}</dt><dd data-key="{{.Key}}" data-value="{{.Value}}">{{.Text}}</dd></div>
{{- end}}
</dl>
<h3>GPUs in use</h3>
<figure class="utilisation">
{{.Utilisation}}
<figcaption>GPUs allocated to jobs over time; the full height is the cluster's GPUs. Allocated GPUs include those idle in a restart delay.</figcaption>
</figure>
<h3>Jobs</h3>
<p class="legend">One row per job, in submission order: the GPUs it holds over time (the tallest row is the largest allocation). Marks:
<span class="key submit">●</span> submitted,
<span class="key start">●</span> started,
<span class="key scale">▲</span> scaled,
<span class="key preempt">✕</span> preempted,
<span class="key restart">□</span> resumed,
<span class="key migrate">■</span> migrated,
<span class="key end">●</span> finished.
Hover over a mark or an allocation for details. Simulated jobs do not fail.</p>
{{- if .Omitted}}
<p class="note">Showing the first {{.Shown}} of {{.Total}} jobs by submission; {{.Omitted}} are left out
{{- if gt (len $.Runs) 1}} (the page's job rows are shared among its {{len $.Runs}} runs; simulate one policy to see more){{end}}.</p>
{{- end}}
<figure class="jobs">
{{.Timeline}}
</figure>
</section>
{{end}}
</body>
</html>
`))
