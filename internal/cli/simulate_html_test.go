package cli

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/model"
	"github.com/vodascheduler/voda/pkg/simulator"
	"github.com/vodascheduler/voda/pkg/ui"
)

// element is an element of a parsed page.
type element struct {
	name     string
	attr     map[string]string
	children []*element
}

// parsePage parses a page strictly as XML. The page is written so that it
// is (void elements closed, attributes quoted, text escaped), which makes
// this a real check that every element is closed where it should be.
func parsePage(t *testing.T, page []byte) *element {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(page))
	d.Strict = true
	root := &element{name: "#document"}
	stack := []*element{root}
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the page is not well-formed: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			e := &element{name: tok.Name.Local, attr: map[string]string{}}
			for _, a := range tok.Attr {
				e.attr[a.Name.Local] = a.Value
			}
			top := stack[len(stack)-1]
			top.children = append(top.children, e)
			stack = append(stack, e)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		}
	}
	if len(root.children) != 1 || root.children[0].name != "html" {
		t.Fatalf("the page has %d top elements, want one <html>", len(root.children))
	}
	return root.children[0]
}

// all returns the elements under e (e included) that match, in document
// order.
func (e *element) all(match func(*element) bool) []*element {
	var out []*element
	if match(e) {
		out = append(out, e)
	}
	for _, c := range e.children {
		out = append(out, c.all(match)...)
	}
	return out
}

// named matches elements by name and, optionally, attribute values.
func named(name string, attrs ...string) func(*element) bool {
	return func(e *element) bool {
		if e.name != name {
			return false
		}
		for i := 0; i+1 < len(attrs); i += 2 {
			if e.attr[attrs[i]] != attrs[i+1] {
				return false
			}
		}
		return true
	}
}

// classed matches elements whose class list holds class.
func classed(name, class string) func(*element) bool {
	return func(e *element) bool {
		return e.name == name && slices.Contains(strings.Fields(e.attr["class"]), class)
	}
}

// only returns the one element under e that matches, or fails.
func only(t *testing.T, e *element, what string, match func(*element) bool) *element {
	t.Helper()
	found := e.all(match)
	if len(found) != 1 {
		t.Fatalf("%d %s, want 1", len(found), what)
	}
	return found[0]
}

// testConfig is a small cluster, busy enough for preemptions and rescales.
func testConfig(policy string) simulator.Config {
	return simulator.Config{Policy: policy, Nodes: 2, GPUsPerNode: 4, RestartDelay: 30 * time.Second,
		RateLimit: 30 * time.Second, Tiresias: algorithm.DefaultTiresias(), RecordEvents: true}
}

// simulate runs a synthetic workload of n jobs on the built-in catalog.
func simulate(t *testing.T, cfg simulator.Config, n int) simulator.Result {
	t.Helper()
	cat := model.Builtin()
	w, err := simulator.Generate(simulator.GenConfig{Jobs: n, Load: 4, Seed: 2, GPUsPerNode: cfg.GPUsPerNode,
		MaxGPUs: cfg.Nodes * cfg.GPUsPerNode}, simulator.ModelCatalog(cat), simulator.Batches(cat))
	if err != nil {
		t.Fatal(err)
	}
	res, err := simulator.Run(cfg, w, simulator.ModelCatalog(cat))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func writePage(t *testing.T, p htmlPage) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := p.write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// summaryShown is the summary numbers of a page or run section, by their
// JSON keys.
func summaryShown(e *element) map[string]string {
	shown := map[string]string{}
	for _, dd := range e.all(named("dd")) {
		shown[dd.attr["data-key"]] = dd.attr["data-value"]
	}
	return shown
}

// checkSummary fails unless a page shows every number of want (a summary
// as JSON) but the wall-clock time, exactly.
func checkSummary(t *testing.T, shown map[string]string, want map[string]any) {
	t.Helper()
	for key, v := range want {
		f, ok := v.(float64)
		if !ok || key == "sim_wall_s" {
			continue
		}
		got, err := strconv.ParseFloat(shown[key], 64)
		if err != nil || got != f {
			t.Errorf("summary %s shows %q, want %v", key, shown[key], f)
		}
	}
	if _, ok := shown["sim_wall_s"]; ok {
		t.Error("the page shows the wall-clock time, so it is not deterministic")
	}
}

func checkSelfContained(t *testing.T, page []byte) {
	t.Helper()
	for _, bad := range []string{"src=", `href="http`, "<script", "url(", "@import", "<link"} {
		if bytes.Contains(page, []byte(bad)) {
			t.Errorf("the page contains %q: it must load nothing", bad)
		}
	}
}

func TestHTMLPageShowsEveryJobAndTheSummary(t *testing.T) {
	for _, policy := range []string{"Tiresias", "ElasticFIFO"} {
		t.Run(policy, func(t *testing.T) {
			res := simulate(t, testConfig(policy), 16)
			page := writePage(t, htmlPage{Config: testConfig(policy), Results: []simulator.Result{res}})
			doc := parsePage(t, page)
			checkSelfContained(t, page)

			if n := len(doc.all(named("svg"))); n != 2 {
				t.Errorf("%d <svg> elements, want 2", n)
			}
			util := only(t, doc, "utilisation figures", classed("figure", "utilisation"))
			only(t, util, "utilisation <svg>", named("svg"))
			if rows := util.all(classed("g", "row")); len(rows) != 1 || rows[0].attr["data-row"] != "8 GPUs" {
				t.Errorf("utilisation rows %v, want one labelled with the cluster's 8 GPUs", rows)
			}
			jobs := only(t, doc, "job figures", classed("figure", "jobs"))
			svg := only(t, jobs, "timeline <svg>", named("svg"))

			// One row per job, in submission order.
			rows := svg.all(classed("g", "row"))
			var got, want []string
			for _, r := range rows {
				got = append(got, r.attr["data-row"])
			}
			for _, j := range res.Jobs {
				want = append(want, j.Name)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("timeline rows (-want,+got):\n%s", diff)
			}
			kinds := map[string]int{}
			for i, r := range rows {
				j := res.Jobs[i]
				count := map[string]int{}
				for _, m := range r.all(classed("g", "mark")) {
					count[m.attr["data-kind"]]++
					kinds[m.attr["data-kind"]]++
				}
				// Every job of a simulation is submitted, starts and finishes.
				for _, k := range []string{"submit", "start", "end"} {
					if count[k] != 1 {
						t.Errorf("job %s: %d %q marks, want 1", j.Name, count[k], k)
					}
				}
				if count["scale"] != j.Rescales {
					t.Errorf("job %s: %d scale marks, want its %d rescales", j.Name, count["scale"], j.Rescales)
				}
				if count["restart"] > j.Restarts || j.Restarts > count["restart"]+count["migrate"] {
					t.Errorf("job %s: %d resumptions and %d migrations drawn for %d restarts", j.Name, count["restart"], count["migrate"], j.Restarts)
				}
				if count["preempt"] < count["restart"] {
					t.Errorf("job %s: %d preemptions drawn for %d resumptions", j.Name, count["preempt"], count["restart"])
				}
				if len(r.all(classed("path", "area"))) != 1 {
					t.Errorf("job %s: no allocation drawn", j.Name)
				}
			}
			if policy == "Tiresias" && (kinds["preempt"] == 0 || kinds["restart"] == 0) {
				t.Errorf("Tiresias: %d preemptions and %d resumptions drawn, want some of each", kinds["preempt"], kinds["restart"])
			}
			if policy == "ElasticFIFO" && kinds["scale"] == 0 {
				t.Error("ElasticFIFO: no rescales drawn")
			}

			raw, _ := json.Marshal(simulator.Summarise(res))
			var sum map[string]any
			json.Unmarshal(raw, &sum)
			checkSummary(t, summaryShown(doc), sum)
			section := only(t, doc, "run sections", named("section"))
			if section.attr["data-policy"] != policy || section.attr["data-workload"] != res.Workload {
				t.Errorf("the run is labelled %v, want %s on %s", section.attr, policy, res.Workload)
			}
			if !bytes.Contains(page, []byte("2 nodes × 4 GPUs (8 GPUs)")) {
				t.Error("the page does not give the cluster's size")
			}
		})
	}
}

// The steps drawn for each job hold the GPU-seconds the engine charged it,
// and the utilisation view holds them all.
func TestHTMLStepsHoldTheChargedGPUSeconds(t *testing.T) {
	for _, policy := range []string{"Tiresias", "ElasticFIFO", "AFS-L"} {
		res := simulate(t, testConfig(policy), 16)
		total := 0.0
		for i, r := range htmlJobRows(res, len(res.Jobs)) {
			sum, last := integrate(r.Steps)
			if last != 0 {
				t.Errorf("%s, job %s: holds %d GPUs at the end", policy, r.Label, last)
			}
			if want := res.Jobs[i].GPUSeconds; math.Abs(sum-want) > 1e-6*max(want, 1) {
				t.Errorf("%s, job %s: steps hold %v GPU-seconds, want %v", policy, r.Label, sum, want)
			}
			total += sum
		}
		steps, end := htmlUtilisation(res)
		util, last := integrate(steps)
		if math.Abs(util-total) > 1e-6*total || last != 0 || !steps[0].At.Equal(htmlEpoch) || math.Abs(end-(res.Jobs[0].Submit+res.Makespan)) > 1e-6 {
			t.Errorf("%s: utilisation holds %v GPU-seconds from %v to %v s ending at %d GPUs; jobs %v GPU-seconds, makespan %v s",
				policy, util, steps[0].At, end, last, total, res.Makespan)
		}
	}
}

// integrate is the area under a step curve, and its last value.
func integrate(steps []ui.Step) (float64, int) {
	sum := 0.0
	for k, s := range steps[:len(steps)-1] {
		sum += float64(s.Value) * steps[k+1].At.Sub(s.At).Seconds()
	}
	return sum, steps[len(steps)-1].Value
}

func TestHTMLPageCapsTheRows(t *testing.T) {
	a, b := simulate(t, testConfig("FIFO"), 12), simulate(t, testConfig("HeSRPT"), 12)
	cases := map[string]struct {
		results []simulator.Result
		max     int
		rows    int // per run
		note    string
	}{
		"one run, capped":     {[]simulator.Result{a}, 5, 5, "Showing the first 5 of 12 jobs by submission; 7 are left out."},
		"two runs share rows": {[]simulator.Result{a, b}, 10, 5, "7 are left out (the page's job rows are shared among its 2 runs"},
		"room for every job":  {[]simulator.Result{a, b}, 0, 12, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			page := writePage(t, htmlPage{Config: testConfig("FIFO"), Results: tc.results, MaxRows: tc.max})
			doc := parsePage(t, page)
			runs := doc.all(named("section"))
			if len(runs) != len(tc.results) {
				t.Fatalf("%d run sections, want %d", len(runs), len(tc.results))
			}
			for i, run := range runs {
				jobs := only(t, run, "job figures", classed("figure", "jobs"))
				rows := jobs.all(classed("g", "row"))
				if len(rows) != tc.rows {
					t.Errorf("run %d: %d rows, want %d", i, len(rows), tc.rows)
				}
				for k, r := range rows {
					if want := tc.results[i].Jobs[k].Name; r.attr["data-row"] != want {
						t.Errorf("run %d row %d is %s, want %s (first by submission)", i, k, r.attr["data-row"], want)
					}
				}
				if n := len(run.all(classed("p", "note"))); (n == 1) != (tc.note != "") {
					t.Errorf("run %d: %d notes of left-out jobs", i, n)
				}
			}
			if !strings.Contains(string(page), tc.note) {
				t.Errorf("the page does not say %q", tc.note)
			}
			if links := doc.all(named("a")); len(tc.results) > 1 && len(links) != len(tc.results) {
				t.Errorf("%d links to runs, want %d", len(links), len(tc.results))
			}
		})
	}
}

func TestHTMLPageNeedsRecordedEvents(t *testing.T) {
	cfg := testConfig("FIFO")
	cfg.RecordEvents = false
	err := htmlPage{Config: cfg, Results: []simulator.Result{simulate(t, cfg, 3)}}.write(io.Discard)
	if err == nil || !strings.Contains(err.Error(), "no recorded events") {
		t.Errorf("got %v, want an error saying events were not recorded", err)
	}
	if err := (htmlPage{}).write(io.Discard); err == nil {
		t.Error("a page of no runs: no error")
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.html")
	if err := writeFileAtomic(path, func(w io.Writer) error { _, err := io.WriteString(w, "old"); return err }); err != nil {
		t.Fatal(err)
	}
	failed := errors.New("disk full")
	err := writeFileAtomic(path, func(w io.Writer) error {
		io.WriteString(w, "half a page")
		return failed
	})
	if !errors.Is(err, failed) || !strings.Contains(err.Error(), path) {
		t.Errorf("got %v, want the write's error naming %s", err, path)
	}
	if got, _ := os.ReadFile(path); string(got) != "old" {
		t.Errorf("a failed write left %q, want the old file untouched", got)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("files left behind: %v", entries)
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o644 {
		t.Errorf("mode %v (%v), want 0644", info.Mode(), err)
	}
	err = writeFileAtomic(filepath.Join(dir, "missing", "out.html"), func(io.Writer) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "cannot write") {
		t.Errorf("into a missing directory: got %v", err)
	}
}
