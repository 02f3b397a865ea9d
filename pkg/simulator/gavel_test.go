package simulator_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vodascheduler/voda/pkg/simulator"
)

// gavelData is Gavel's (OSDI'20) throughput tables and traces, beside the
// repository.
var gavelData = filepath.Join("..", "..", "..", "shared", "traces", "gavel")

func needGavel(t *testing.T) *simulator.GavelTable {
	t.Helper()
	path := filepath.Join(gavelData, "simulation_throughputs.json")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("Gavel data not found at %s (it sits in ../shared/traces beside the repository): %v", gavelData, err)
	}
	table, err := simulator.ReadGavelThroughputs(path)
	if err != nil {
		t.Fatal(err)
	}
	return table
}

// gavelToyJSON is a small table in Gavel's format: A3C at one GPU only,
// ResNet-50 at 1, 2, 4 and 8 GPUs, an unconsolidated worker type that must
// be ignored and a packed-pair entry that must not be read as a throughput.
const gavelToyJSON = `{
 "k80": {
  "('A3C', 1)": {"null": 3.0, "('A3C', 1)": [1.5, 1.5]},
  "('ResNet-50 (batch size 64)', 1)": {"null": 0.5},
  "('ResNet-50 (batch size 64)', 2)": {"null": 1.0},
  "('ResNet-50 (batch size 64)', 4)": {"null": 2.0},
  "('ResNet-50 (batch size 64)', 8)": {"null": 4.0}
 },
 "v100": {
  "('A3C', 1)": {"null": 7.0},
  "('ResNet-50 (batch size 64)', 1)": {"null": 4.0},
  "('ResNet-50 (batch size 64)', 2)": {"null": 8.0},
  "('ResNet-50 (batch size 64)', 4)": {"null": 9.0},
  "('ResNet-50 (batch size 64)', 8)": {"null": 17.0}
 },
 "v100_unconsolidated": {
  "('A3C', 1)": {"null": 99.0},
  "('ResNet-50 (batch size 64)', 2)": {"null": 99.0}
 }
}`

func writeGavelFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func gavelToy(t *testing.T) *simulator.GavelTable {
	t.Helper()
	table, err := simulator.ReadGavelThroughputs(writeGavelFile(t, "toy.json", gavelToyJSON))
	if err != nil {
		t.Fatal(err)
	}
	return table
}

func TestGavelToyTable(t *testing.T) {
	table := gavelToy(t)
	if got, want := table.GPUTypes(), []string{"k80", "v100"}; !slices.Equal(got, want) {
		t.Errorf("GPU types: got %v, want %v", got, want)
	}
	if got, want := table.JobTypes(), []string{"A3C", "ResNet-50 (batch size 64)"}; !slices.Equal(got, want) {
		t.Errorf("job types: got %v, want %v", got, want)
	}
	if v, ok := table.StepsPerSecond("v100", "A3C", 1); !ok || v != 7 {
		t.Errorf("v100 A3C at 1 GPU: got %v, %v, want 7, true (not the unconsolidated 99)", v, ok)
	}
	if got, want := table.Scales("ResNet-50 (batch size 64)"), []int{1, 2, 4, 8}; !slices.Equal(got, want) {
		t.Errorf("ResNet-50 scales: got %v, want %v", got, want)
	}
}

func TestGavelTableShape(t *testing.T) {
	table := needGavel(t)
	if got, want := table.GPUTypes(), []string{"k80", "p100", "v100"}; !slices.Equal(got, want) {
		t.Errorf("GPU types: got %v, want %v", got, want)
	}
	jobs := table.JobTypes()
	if len(jobs) != 26 {
		t.Errorf("got %d job types, want 26: %q", len(jobs), jobs)
	}
	if !slices.IsSorted(jobs) {
		t.Errorf("job types not sorted: %q", jobs)
	}
	for _, want := range []string{"A3C", "CycleGAN", "ResNet-50 (batch size 64)", "LM (batch size 80)", "Recommendation (batch size 8192)"} {
		if !slices.Contains(jobs, want) {
			t.Errorf("job types lack %q", want)
		}
	}
}

// TestGavelTableMatchesJSON decodes the JSON here, independently of the
// reader, and compares every stand-alone entry of the consolidated workers.
func TestGavelTableMatchesJSON(t *testing.T) {
	table := needGavel(t)
	data, err := os.ReadFile(filepath.Join(gavelData, "simulation_throughputs.json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]map[string]map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	spot := raw["v100"]["('ResNet-50 (batch size 64)', 4)"]["null"].(float64)
	if got, ok := table.StepsPerSecond("v100", "ResNet-50 (batch size 64)", 4); !ok || got != spot {
		t.Errorf("v100 ResNet-50 bs64 at 4 GPUs: got %v, %v, want %v, true", got, ok, spot)
	}
	if spot == raw["v100_unconsolidated"]["('ResNet-50 (batch size 64)', 4)"]["null"].(float64) {
		t.Errorf("spot check cannot tell consolidated from unconsolidated")
	}
	key := regexp.MustCompile(`^\('(.*)', (\d+)\)$`)
	compared := 0
	for _, gpu := range []string{"k80", "p100", "v100"} {
		for k, others := range raw[gpu] {
			m := key.FindStringSubmatch(k)
			if m == nil {
				t.Fatalf("%s: key %q not in Gavel's form", gpu, k)
			}
			n, _ := strconv.Atoi(m[2])
			want := others["null"].(float64)
			got, ok := table.StepsPerSecond(gpu, m[1], n)
			if ok != (want > 0) || (ok && got != want) {
				t.Errorf("%s %s: got %v, %v, want %v", gpu, k, got, ok, want)
			}
			compared++
		}
	}
	if compared != 3*83 {
		t.Errorf("compared %d entries, want 249 (83 per GPU type)", compared)
	}
}

func TestGavelV100FasterThanK80ForResNet50(t *testing.T) {
	table := needGavel(t)
	for _, bs := range []int{16, 32, 64, 128} {
		jt := fmt.Sprintf("ResNet-50 (batch size %d)", bs)
		k80, okK := table.StepsPerSecond("k80", jt, 1)
		v100, okV := table.StepsPerSecond("v100", jt, 1)
		if !okK || !okV || !(v100 > k80) {
			t.Errorf("%s at 1 GPU: v100 %v (%v), k80 %v (%v), want v100 faster", jt, v100, okV, k80, okK)
		}
	}
}

func TestGavelScalesAndMissingEntries(t *testing.T) {
	table := needGavel(t)
	scales := map[string]struct {
		jobType string
		want    []int
	}{
		"distributed type has all four":          {"ResNet-50 (batch size 64)", []int{1, 2, 4, 8}},
		"A3C is single-GPU":                      {"A3C", []int{1}},
		"Recommendation is single-GPU":           {"Recommendation (batch size 1024)", []int{1}},
		"ResNet-50 bs128 lacks multi-GPU on K80": {"ResNet-50 (batch size 128)", []int{1}},
		"unknown type has none":                  {"GPT-3", nil},
	}
	for name, tc := range scales {
		t.Run(name, func(t *testing.T) {
			if got := table.Scales(tc.jobType); !slices.Equal(got, tc.want) {
				t.Errorf("Scales(%q): got %v, want %v", tc.jobType, got, tc.want)
			}
		})
	}
	misses := map[string]struct {
		gpu, jobType string
		gpus         int
	}{
		"unmeasured GPU count": {"v100", "ResNet-50 (batch size 64)", 3},
		"zero entry":           {"k80", "ResNet-50 (batch size 128)", 2},
		"single-GPU type at 2": {"v100", "A3C", 2},
		"unknown GPU type":     {"a100", "A3C", 1},
		"unconsolidated type":  {"v100_unconsolidated", "ResNet-50 (batch size 64)", 2},
	}
	for name, tc := range misses {
		if v, ok := table.StepsPerSecond(tc.gpu, tc.jobType, tc.gpus); ok {
			t.Errorf("%s: StepsPerSecond(%q, %q, %d) = %v, true; want false", name, tc.gpu, tc.jobType, tc.gpus, v)
		}
	}
	if v, ok := table.StepsPerSecond("v100", "ResNet-50 (batch size 128)", 2); !ok || v <= 0 {
		t.Errorf("v100 ResNet-50 bs128 at 2 GPUs: got %v, %v, want a throughput", v, ok)
	}
}

// gavelLines returns the non-blank lines of a trace, split on tabs.
func gavelLines(t *testing.T, path string) [][]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	for l := range strings.Lines(string(data)) {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, strings.Split(l, "\t"))
		}
	}
	return out
}

var gavelJobName = regexp.MustCompile(`^([0-9]{3,})-[a-z0-9]+(-[a-z0-9]+)*$`)

// checkGavelTrace compares every job with its line, read here independently
// of the reader (fields at the given indices), and checks the order.
func checkGavelTrace(t *testing.T, w simulator.HeteroWorkload, table *simulator.GavelTable, lines [][]string, stepsF, scaleF, arrivalF int) {
	t.Helper()
	if len(w.Jobs) != len(lines) {
		t.Fatalf("got %d jobs, want %d (the file's lines)", len(w.Jobs), len(lines))
	}
	if !slices.IsSortedFunc(w.Jobs, func(a, b simulator.HeteroJob) int {
		return cmp.Or(cmp.Compare(a.Submit, b.Submit), strings.Compare(a.Name, b.Name))
	}) {
		t.Errorf("jobs not sorted by submission then name")
	}
	seen := map[int]bool{}
	for _, j := range w.Jobs {
		m := gavelJobName.FindStringSubmatch(j.Name)
		if m == nil {
			t.Fatalf("job name %q: want <index>-<short type>", j.Name)
		}
		i, _ := strconv.Atoi(m[1])
		if seen[i] || i >= len(lines) {
			t.Fatalf("job %q: index repeated or past the end", j.Name)
		}
		seen[i] = true
		rec := lines[i]
		steps, _ := strconv.ParseFloat(rec[stepsF], 64)
		scale, _ := strconv.Atoi(rec[scaleF])
		arrival, _ := strconv.ParseFloat(rec[arrivalF], 64)
		want := simulator.HeteroJob{Name: j.Name, Submit: time.Duration(math.Round(arrival * 1e9)), JobType: rec[0], Scale: scale, Steps: steps}
		if j != want {
			t.Errorf("line %d: got %+v, want %+v", i+1, j, want)
		}
		if !slices.Contains([]int{1, 2, 4, 8}, j.Scale) {
			t.Errorf("job %s: scale %d", j.Name, j.Scale)
		}
		runs := false
		for _, g := range table.GPUTypes() {
			_, ok := table.StepsPerSecond(g, j.JobType, j.Scale)
			runs = runs || ok
		}
		if !runs {
			t.Errorf("job %s: %q has no throughput at %d GPUs", j.Name, j.JobType, j.Scale)
		}
	}
}

func TestGavelReadPhysicalClusterTrace(t *testing.T) {
	table := needGavel(t)
	path := filepath.Join(gavelData, "traces", "physical_cluster", "max_min_fairness.trace")
	w, err := simulator.ReadGavelTrace(path, table)
	if err != nil {
		t.Fatal(err)
	}
	if w.Name != "max_min_fairness" {
		t.Errorf("name: got %q, want max_min_fairness", w.Name)
	}
	if len(w.Jobs) != 96 {
		t.Errorf("got %d jobs, want 96", len(w.Jobs))
	}
	checkGavelTrace(t, w, table, gavelLines(t, path), 5, 6, 9)
	first := simulator.HeteroJob{Name: "000-resnet18-bs128", JobType: "ResNet-18 (batch size 128)", Scale: 4, Steps: 925982}
	if w.Jobs[0] != first {
		t.Errorf("first job: got %+v, want %+v", w.Jobs[0], first)
	}
}

func TestGavelReadEveryPhysicalClusterTrace(t *testing.T) {
	table := needGavel(t)
	files, err := filepath.Glob(filepath.Join(gavelData, "traces", "physical_cluster", "*.trace"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no physical_cluster traces: %v", err)
	}
	for _, f := range files {
		w, err := simulator.ReadGavelTrace(f, table)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		checkGavelTrace(t, w, table, gavelLines(t, f), 5, 6, 9)
	}
}

func TestGavelReadMSRTrace(t *testing.T) {
	table := needGavel(t)
	path := filepath.Join(gavelData, "traces", "msr-seed0", "ed69ec.trace")
	w, err := simulator.ReadGavelTrace(path, table)
	if err != nil {
		t.Fatal(err)
	}
	if w.Name != "ed69ec" {
		t.Errorf("name: got %q, want ed69ec", w.Name)
	}
	checkGavelTrace(t, w, table, gavelLines(t, path), 4, 6, 5)
	if len(w.Jobs) != 951 {
		t.Errorf("got %d jobs, want 951", len(w.Jobs))
	}
	if last := w.Jobs[len(w.Jobs)-1]; last.Submit < time.Hour {
		t.Errorf("last arrival %v: the msr arrival column was not read", last.Submit)
	}
}

// TestGavelMSRTracesWithUnmeasuredScalesAreRejected: 13 of the 15 msr traces
// ask for single-GPU types (A3C, CycleGAN, Recommendation) on several GPUs,
// or for 12 to 64 GPUs, which Gavel never measured; reading them fails on the
// first such line.
func TestGavelMSRTracesWithUnmeasuredScalesAreRejected(t *testing.T) {
	table := needGavel(t)
	for file, want := range map[string]string{
		"7f04ca.trace": `:2: job type "Recommendation (batch size 8192)" has no throughput at scale factor 8`,
		"11cb48.trace": `:46: job type "A3C" has no throughput at scale factor 4`,
	} {
		path := filepath.Join(gavelData, "traces", "msr-seed0", file)
		_, err := simulator.ReadGavelTrace(path, table)
		if err == nil || !strings.Contains(err.Error(), path+want) {
			t.Errorf("%s: got error %v, want one containing %q", file, err, path+want)
		}
	}
}

func TestGavelTraceErrors(t *testing.T) {
	table := gavelToy(t)
	const good = "A3C\tpython3 main.py\ta3c\t--max-steps\t0\t1000\t1\t1\t-1\t0\n"
	const goodMSR = "A3C\tpython3 main.py\t--max-steps\t0\t1000\t0\t1\n"
	cases := map[string]struct {
		content string
		want    string // right after the path
	}{
		"too few fields":           {good + "A3C\tx\ty\n", ":2: 3 tab-separated fields, want 10"},
		"unknown format":           {"A3C\tx\ty\tz\n", ":1: 4 tab-separated fields, want 10 (physical_cluster format), 7 (msr format) or 12 (Shockwave's format)"},
		"formats mixed":            {good + goodMSR, ":2: 7 tab-separated fields, want 10"},
		"non-numeric steps":        {good + "A3C\tc\td\ta\t0\tmany\t1\t1\t-1\t0\n", `:2: total_steps "many"`},
		"negative steps":           {good + "A3C\tc\td\ta\t0\t-5\t1\t1\t-1\t0\n", `:2: total_steps "-5"`},
		"zero steps":               {good + "A3C\tc\td\ta\t0\t0\t1\t1\t-1\t0\n", `:2: total_steps "0"`},
		"NaN steps":                {good + "A3C\tc\td\ta\t0\tNaN\t1\t1\t-1\t0\n", `:2: total_steps "NaN"`},
		"non-numeric arrival":      {good + "A3C\tc\td\ta\t0\t10\t1\t1\t-1\tnoon\n", `:2: arrival_time "noon"`},
		"negative arrival":         {good + "A3C\tc\td\ta\t0\t10\t1\t1\t-1\t-3\n", `:2: arrival_time "-3"`},
		"arrival past 292 years":   {good + "A3C\tc\td\ta\t0\t10\t1\t1\t-1\t1e19\n", `:2: arrival_time "1e19"`},
		"scale 3":                  {good + "A3C\tc\td\ta\t0\t10\t3\t1\t-1\t0\n", `:2: scale_factor "3"`},
		"scale 16":                 {good + "A3C\tc\td\ta\t0\t10\t16\t1\t-1\t0\n", `:2: scale_factor "16"`},
		"scale 0":                  {good + "A3C\tc\td\ta\t0\t10\t0\t1\t-1\t0\n", `:2: scale_factor "0"`},
		"non-numeric scale":        {good + "A3C\tc\td\ta\t0\t10\tfour\t1\t-1\t0\n", `:2: scale_factor "four"`},
		"unknown job type":         {good + "GPT-3\tc\td\ta\t0\t10\t1\t1\t-1\t0\n", `:2: job type "GPT-3" is not in the throughput table`},
		"type not at its scale":    {good + "A3C\tc\td\ta\t0\t10\t2\t1\t-1\t0\n", `:2: job type "A3C" has no throughput at scale factor 2`},
		"msr bad arrival":          {goodMSR + "A3C\tc\ta\t0\t1000\tlater\t1\n", `:2: arrival_time "later"`},
		"msr bad scale":            {goodMSR + "A3C\tc\ta\t0\t1000\t0\t32\n", `:2: scale_factor "32"`},
		"error past a blank line":  {good + "\n" + "A3C\tx\n", ":3: 2 tab-separated fields"},
		"empty file":               {"", ": no jobs"},
		"only blank lines":         {"\n\n  \n", ": no jobs"},
		"msr steps in wrong place": {"A3C\tc\ta\t0\tsteps\t0\t1\n", `:1: total_steps "steps"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := writeGavelFile(t, "bad.trace", tc.content)
			_, err := simulator.ReadGavelTrace(path, table)
			if err == nil || !strings.Contains(err.Error(), path+tc.want) {
				t.Errorf("got error %v, want one containing %q", err, path+tc.want)
			}
		})
	}
	if _, err := simulator.ReadGavelTrace(filepath.Join(t.TempDir(), "absent.trace"), table); err == nil {
		t.Errorf("a missing file gave no error")
	}
}

func TestGavelTraceOfToyTable(t *testing.T) {
	table := gavelToy(t)
	content := "ResNet-50 (batch size 64)\tc\td\ta\t0\t500\t4\t1\t-1\t30.5\n" +
		"A3C\tc\td\ta\t0\t100\t1\t1\t-1\t30.5\n" +
		"A3C\tc\td\ta\t0\t200\t1\t1\t-1\t2\n"
	w, err := simulator.ReadGavelTrace(writeGavelFile(t, "toy.trace", content), table)
	if err != nil {
		t.Fatal(err)
	}
	want := simulator.HeteroWorkload{Name: "toy", Jobs: []simulator.HeteroJob{
		{Name: "002-a3c", Submit: 2 * time.Second, JobType: "A3C", Scale: 1, Steps: 200},
		{Name: "000-resnet50-bs64", Submit: 30500 * time.Millisecond, JobType: "ResNet-50 (batch size 64)", Scale: 4, Steps: 500},
		{Name: "001-a3c", Submit: 30500 * time.Millisecond, JobType: "A3C", Scale: 1, Steps: 100},
	}}
	if !reflect.DeepEqual(w, want) {
		t.Errorf("got %+v, want %+v", w, want)
	}
}

func TestGavelThroughputErrors(t *testing.T) {
	cases := map[string]struct{ content, want string }{
		"not JSON":          {"v100: fast", "invalid character"},
		"no entries":        {`{"v100": {}}`, "no stand-alone"},
		"key not a tuple":   {`{"v100": {"A3C": {"null": 1}}}`, `job key "A3C"`},
		"scale 3":           {`{"v100": {"('A3C', 3)": {"null": 1}}}`, "scale factor 3 not in {1, 2, 4, 8}"},
		"scale not integer": {`{"v100": {"('A3C', x)": {"null": 1}}}`, "scale factor not an integer"},
		"unquoted type":     {`{"v100": {"(A3C, 1)": {"null": 1}}}`, "job type not quoted"},
		"negative":          {`{"v100": {"('A3C', 1)": {"null": -1}}}`, "negative"},
		"not a number":      {`{"v100": {"('A3C', 1)": {"null": "fast"}}}`, "stand-alone throughput"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := writeGavelFile(t, "bad.json", tc.content)
			_, err := simulator.ReadGavelThroughputs(path)
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want one naming the file and containing %q", err, tc.want)
			}
		})
	}
}

func TestGavelGenerateIsDeterministic(t *testing.T) {
	table := gavelToy(t)
	a, err := simulator.GenerateGavel(table, 200, 30, 7)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := simulator.GenerateGavel(table, 200, 30, 7)
	c, _ := simulator.GenerateGavel(table, 200, 30, 8)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("the same seed gave different workloads")
	}
	if reflect.DeepEqual(a.Jobs, c.Jobs) {
		t.Errorf("seeds 7 and 8 gave the same jobs")
	}
	if want := "gavel-200-jobs-30-per-hour-seed-7"; a.Name != want {
		t.Errorf("name: got %q, want %q", a.Name, want)
	}
	if len(a.Jobs) != 200 || !strings.HasPrefix(a.Jobs[0].Name, "000-") || a.Jobs[0].Submit <= 0 {
		t.Errorf("got %d jobs, first %+v; want 200, the first named 000-… arriving after 0", len(a.Jobs), a.Jobs[0])
	}
	for _, j := range a.Jobs {
		if j.JobType == "A3C" && j.Scale != 1 {
			t.Errorf("job %s: single-GPU type at scale %d", j.Name, j.Scale)
		}
	}
}

func TestGavelGenerateErrors(t *testing.T) {
	table := gavelToy(t)
	noV100, err := simulator.ReadGavelThroughputs(writeGavelFile(t, "k80.json", `{"k80": {"('A3C', 1)": {"null": 1}}}`))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		table *simulator.GavelTable
		n     int
		rate  float64
		want  string
	}{
		"no jobs":             {table, 0, 10, "0 jobs"},
		"too many jobs":       {table, 1_000_001, 10, "1000001 jobs"},
		"zero rate":           {table, 10, 0, "jobs per hour"},
		"negative rate":       {table, 10, -1, "jobs per hour"},
		"NaN rate":            {table, 10, math.NaN(), "jobs per hour"},
		"infinite rate":       {table, 10, math.Inf(1), "jobs per hour"},
		"no table":            {nil, 10, 10, "no throughput table"},
		"no v100":             {noV100, 10, 10, "v100"},
		"arrivals overflow":   {table, 10, 1e-12, "arrivals pass"},
		"one job is accepted": {table, 1, 1, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := simulator.GenerateGavel(tc.table, tc.n, tc.rate, 1)
			if tc.want == "" {
				if err != nil {
					t.Errorf("got error %v, want none", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestGavelGenerateDistributions checks 5000 generated jobs against Gavel's
// distributions: scale factors among multi-GPU types, durations (recovered as
// steps over the V100 throughput), uniform job types, Poisson arrivals.
func TestGavelGenerateDistributions(t *testing.T) {
	table := needGavel(t)
	const n, rate = 5000, 12.0
	w, err := simulator.GenerateGavel(table, n, rate, 42)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Jobs) != n {
		t.Fatalf("got %d jobs, want %d", len(w.Jobs), n)
	}
	scaleCount := map[int]int{}
	typeCount := map[string]int{}
	multi, long, logSum := 0, 0, 0.0
	names := map[string]bool{}
	for _, j := range w.Jobs {
		names[j.Name] = true
		typeCount[j.JobType]++
		scales := table.Scales(j.JobType)
		if !slices.Contains(scales, j.Scale) {
			t.Fatalf("job %s: scale %d not among %q's %v", j.Name, j.Scale, j.JobType, scales)
		}
		if len(scales) > 1 {
			multi++
			scaleCount[j.Scale]++
		}
		sps, _ := table.StepsPerSecond("v100", j.JobType, j.Scale)
		d := j.Steps / sps
		if d < 60*math.Pow(10, 1.5)*(1-1e-9) || d > 60*1e4*(1+1e-9) {
			t.Fatalf("job %s: %v s alone on V100, want 60·10^1.5 to 60·10^4", j.Name, d)
		}
		if d > 60*1e3 {
			long++
		}
		logSum += math.Log10(d / 60)
	}
	if len(names) != n {
		t.Errorf("%d distinct names among %d jobs", len(names), n)
	}
	within := func(what string, got, lo, hi float64) {
		t.Helper()
		if got < lo || got > hi {
			t.Errorf("%s: got %.4f, want %.4f to %.4f", what, got, lo, hi)
		}
	}
	share := func(s int) float64 { return float64(scaleCount[s]) / float64(multi) }
	within("share of scale 1 among multi-GPU types", share(1), 0.65, 0.75)
	within("share of scale 2 among multi-GPU types", share(2), 0.07, 0.13)
	within("share of scale 4 among multi-GPU types", share(4), 0.12, 0.18)
	within("share of scale 8 among multi-GPU types", share(8), 0.03, 0.07)
	within("share of jobs over 1000 min", float64(long)/n, 0.17, 0.23)
	// E[log10(d/60)] = 0.8·2.25 + 0.2·3.5 = 2.5.
	within("mean log10(duration / 60 s)", logSum/n, 2.45, 2.55)
	if len(typeCount) != 26 {
		t.Errorf("%d job types drawn, want all 26", len(typeCount))
	}
	for jt, c := range typeCount {
		within("jobs of type "+jt, float64(c), n/26.0-70, n/26.0+70)
	}
	gaps := (w.Jobs[n-1].Submit - w.Jobs[0].Submit).Seconds() / (n - 1)
	within("mean inter-arrival (s)", gaps, 0.9*3600/rate, 1.1*3600/rate)
}
