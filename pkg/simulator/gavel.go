package simulator

// Gavel's throughput table, traces and workload generator, from Narayanan,
// Santhanam, Kazhamiaka, Phanishayee and Zaharia, "Heterogeneity-Aware
// Cluster Scheduling Policies for Deep Learning Workloads", OSDI'20, and its
// repository (github.com/stanford-futuredata/gavel, MIT licence). Only the
// data formats and the generator's distributions are restated here; no code
// was copied.

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// GavelTable holds steps/s per GPU type, job type and GPU count, read from
// Gavel's simulation_throughputs.json (Narayanan et al., OSDI'20): only the
// stand-alone "null" entries, and only the consolidated worker types (the
// *_unconsolidated ones are skipped).
type GavelTable struct {
	sps  map[string]map[string]map[int]float64 // GPU type → job type → GPUs → steps/s
	gpus []string                              // sorted
	jobs []string                              // sorted
}

// gavelScales are the GPU counts Gavel measured and the only scale factors
// its jobs ask for.
var gavelScales = []int{1, 2, 4, 8}

// maxGavelTableBytes bounds the JSON read into memory; Gavel's file is
// about 1.2 MB.
const maxGavelTableBytes = 64 << 20

// ReadGavelThroughputs reads Gavel's simulation_throughputs.json (or
// physical_cluster_throughputs.json): worker type → "('<job type>', <scale
// factor>)" → "null" → steps/s. Entries for packed pairs of jobs are ignored.
func ReadGavelThroughputs(path string) (*GavelTable, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gavel throughputs: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxGavelTableBytes+1))
	if err != nil {
		return nil, fmt.Errorf("gavel throughputs %s: %w", path, err)
	}
	if len(data) > maxGavelTableBytes {
		return nil, fmt.Errorf("gavel throughputs %s: larger than %d MiB", path, maxGavelTableBytes>>20)
	}
	var raw map[string]map[string]map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("gavel throughputs %s: %w", path, err)
	}
	t, err := newGavelTable(raw)
	if err != nil {
		return nil, fmt.Errorf("gavel throughputs %s: %w", path, err)
	}
	return t, nil
}

func newGavelTable(raw map[string]map[string]map[string]json.RawMessage) (*GavelTable, error) {
	t := &GavelTable{sps: map[string]map[string]map[int]float64{}}
	jobs := map[string]bool{}
	for gpu, entries := range raw {
		if strings.HasSuffix(gpu, "_unconsolidated") {
			continue // multi-GPU workers spread over servers: not a stand-alone entry
		}
		byJob := map[string]map[int]float64{}
		for key, others := range entries {
			alone, ok := others["null"]
			if !ok {
				continue // only packed measurements for this job
			}
			jobType, scale, err := parseGavelKey(key)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", gpu, err)
			}
			var v float64
			if err := json.Unmarshal(alone, &v); err != nil {
				return nil, fmt.Errorf("%s %s: stand-alone throughput: %w", gpu, key, err)
			}
			if v < 0 {
				return nil, fmt.Errorf("%s %s: throughput %v is negative", gpu, key, v)
			}
			if byJob[jobType] == nil {
				byJob[jobType] = map[int]float64{}
			}
			byJob[jobType][scale] = v
			jobs[jobType] = true
		}
		t.sps[gpu] = byJob
		t.gpus = append(t.gpus, gpu)
	}
	if len(jobs) == 0 {
		return nil, errors.New("no stand-alone (\"null\") throughputs")
	}
	for j := range jobs {
		t.jobs = append(t.jobs, j)
	}
	slices.Sort(t.gpus)
	slices.Sort(t.jobs)
	return t, nil
}

// parseGavelKey splits the string form of a Python tuple,
// "('ResNet-50 (batch size 64)', 4)", into job type and scale factor.
func parseGavelKey(key string) (string, int, error) {
	bad := func(why string) (string, int, error) {
		return "", 0, fmt.Errorf("job key %q: %s, want ('<job type>', <scale factor>)", key, why)
	}
	inner, open := strings.CutPrefix(key, "(")
	inner, closed := strings.CutSuffix(inner, ")")
	if !open || !closed {
		return bad("not in parentheses")
	}
	i := strings.LastIndex(inner, ",")
	if i < 0 {
		return bad("no comma")
	}
	name, num := strings.TrimSpace(inner[:i]), strings.TrimSpace(inner[i+1:])
	if len(name) < 3 || (name[0] != '\'' && name[0] != '"') || name[len(name)-1] != name[0] {
		return bad("job type not quoted")
	}
	scale, err := strconv.Atoi(num)
	if err != nil {
		return bad("scale factor not an integer")
	}
	if !slices.Contains(gavelScales, scale) {
		return bad(fmt.Sprintf("scale factor %d not in {1, 2, 4, 8}", scale))
	}
	return name[1 : len(name)-1], scale, nil
}

// GPUTypes returns the GPU types, sorted (k80, p100, v100).
func (t *GavelTable) GPUTypes() []string { return slices.Clone(t.gpus) }

// JobTypes returns the job types, sorted.
func (t *GavelTable) JobTypes() []string { return slices.Clone(t.jobs) }

// StepsPerSecond is the throughput of jobType on gpus GPUs of gpuType; ok is
// false when the table has no entry for that GPU count (Gavel measured 1, 2,
// 4, 8) or the entry is zero.
func (t *GavelTable) StepsPerSecond(gpuType, jobType string, gpus int) (float64, bool) {
	v := t.sps[gpuType][jobType][gpus]
	return v, v > 0
}

// Scales returns the GPU counts with an entry for jobType on every GPU type,
// ascending.
func (t *GavelTable) Scales(jobType string) []int {
	var out []int
	for _, n := range gavelScales {
		all := len(t.gpus) > 0
		for _, g := range t.gpus {
			if _, ok := t.StepsPerSecond(g, jobType, n); !ok {
				all = false
				break
			}
		}
		if all {
			out = append(out, n)
		}
	}
	return out
}

// runsAt reports whether jobType has a throughput at scale on some GPU type.
func (t *GavelTable) runsAt(jobType string, scale int) bool {
	for _, g := range t.gpus {
		if _, ok := t.StepsPerSecond(g, jobType, scale); ok {
			return true
		}
	}
	return false
}

// HeteroJob is one job of a heterogeneous (Gavel) workload.
type HeteroJob struct {
	Name    string        // unique: "<index>-<short job type>", e.g. "007-resnet50-bs64" (lower-case, no spaces or parentheses)
	Submit  time.Duration // from the start of the trace
	JobType string        // a Gavel job type, e.g. "ResNet-50 (batch size 64)"
	Scale   int           // GPUs requested (Gavel's scale factor)
	Steps   float64       // total training steps
}

// HeteroWorkload is a named list of jobs sorted by submission then name.
type HeteroWorkload struct {
	Name string
	Jobs []HeteroJob
}

// gavelFormat locates the used fields of one of Gavel's trace formats.
type gavelFormat struct {
	name                  string
	fields                int
	steps, scale, arrival int
}

var gavelFormats = []gavelFormat{
	// job_type, command, working_directory, num_steps_arg, needs_data_dir,
	// total_steps, scale_factor, priority_weight, SLO, arrival_time
	{name: "physical_cluster", fields: 10, steps: 5, scale: 6, arrival: 9},
	// job_type, command, num_steps_arg, needs_data_dir, total_steps,
	// arrival_time, scale_factor
	{name: "msr", fields: 7, steps: 4, scale: 6, arrival: 5},
	// Shockwave's (Zheng et al., NSDI'23): job_type, command,
	// working_directory, num_steps_arg, needs_data_dir, total_steps,
	// scale_factor, mode, priority_weight, SLO, duration, arrival_time.
	// The mode (a batch size that adapts during training) is not
	// simulated: jobs run their type's throughput throughout.
	{name: "shockwave", fields: 12, steps: 5, scale: 6, arrival: 11},
}

// maxGavelLine bounds one trace line (a job's command is a few hundred bytes).
const maxGavelLine = 1 << 20

// ReadGavelTrace reads a Gavel trace file (Narayanan et al., OSDI'20) in
// either format: physical_cluster (10 tab-separated fields: job_type,
// command, working_directory, num_steps_arg, needs_data_dir, total_steps,
// scale_factor, priority_weight, SLO, arrival_time) or msr (7 fields:
// job_type, command, num_steps_arg, needs_data_dir, total_steps,
// arrival_time, scale_factor). The first line sets the format for the whole
// file; blank lines are skipped. Every job type must be in the table with an
// entry at its scale factor on at least one GPU type; errors name the file
// and line. Job i (counting from 0 in file order, as Gavel numbers jobs) is
// named "<i>-<short job type>". Workload name: the file's base name without
// extension.
func ReadGavelTrace(path string, t *GavelTable) (HeteroWorkload, error) {
	if t == nil {
		return HeteroWorkload{}, errors.New("gavel trace: no throughput table")
	}
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		return HeteroWorkload{}, fmt.Errorf("gavel trace: %s is a directory: give one of its .trace files", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return HeteroWorkload{}, fmt.Errorf("gavel trace: %w", err)
	}
	defer f.Close()
	w := HeteroWorkload{Name: strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), maxGavelLine)
	var format *gavelFormat
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		rec := strings.Split(text, "\t")
		if format == nil {
			if format = pickGavelFormat(len(rec)); format == nil {
				return HeteroWorkload{}, fmt.Errorf("%s:%d: %d tab-separated fields, want 10 (physical_cluster format), 7 (msr format) or 12 (Shockwave's format)", path, line, len(rec))
			}
		}
		if len(rec) != format.fields {
			return HeteroWorkload{}, fmt.Errorf("%s:%d: %d tab-separated fields, want %d (%s format, as on the first line)", path, line, len(rec), format.fields, format.name)
		}
		if len(w.Jobs) >= maxJobs {
			return HeteroWorkload{}, fmt.Errorf("%s:%d: more than %d jobs", path, line, maxJobs)
		}
		j, err := parseGavelJob(rec, format, t)
		if err != nil {
			return HeteroWorkload{}, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		w.Jobs = append(w.Jobs, j)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return HeteroWorkload{}, fmt.Errorf("%s:%d: line longer than %d bytes", path, line+1, maxGavelLine)
		}
		return HeteroWorkload{}, fmt.Errorf("%s:%d: %w", path, line+1, err)
	}
	if len(w.Jobs) == 0 {
		return HeteroWorkload{}, fmt.Errorf("%s: no jobs", path)
	}
	nameHeteroJobs(w.Jobs)
	sortHeteroJobs(w.Jobs)
	return w, nil
}

func pickGavelFormat(fields int) *gavelFormat {
	for i := range gavelFormats {
		if gavelFormats[i].fields == fields {
			return &gavelFormats[i]
		}
	}
	return nil
}

// maxSubmitSeconds keeps a submission time within time.Duration.
const maxSubmitSeconds = float64(math.MaxInt64/int64(time.Second)) - 1

// parseGavelJob reads the fields a simulation uses; the command, directory
// and priority fields are Gavel's and not needed here.
func parseGavelJob(rec []string, format *gavelFormat, t *GavelTable) (HeteroJob, error) {
	j := HeteroJob{JobType: rec[0]}
	steps, err := strconv.ParseFloat(strings.TrimSpace(rec[format.steps]), 64)
	if err != nil || math.IsNaN(steps) || math.IsInf(steps, 0) || steps <= 0 {
		return HeteroJob{}, fmt.Errorf("total_steps %q: want a positive number of steps", rec[format.steps])
	}
	j.Steps = steps
	arrival, err := strconv.ParseFloat(strings.TrimSpace(rec[format.arrival]), 64)
	if err != nil || math.IsNaN(arrival) || arrival < 0 || arrival > maxSubmitSeconds {
		return HeteroJob{}, fmt.Errorf("arrival_time %q: want seconds from the trace start (0 to %.0f)", rec[format.arrival], maxSubmitSeconds)
	}
	j.Submit = time.Duration(math.Round(arrival * float64(time.Second)))
	scale, err := strconv.Atoi(strings.TrimSpace(rec[format.scale]))
	if err != nil || !slices.Contains(gavelScales, scale) {
		return HeteroJob{}, fmt.Errorf("scale_factor %q: want 1, 2, 4 or 8 (the GPU counts Gavel measured)", rec[format.scale])
	}
	j.Scale = scale
	if _, known := slices.BinarySearch(t.jobs, j.JobType); !known {
		return HeteroJob{}, fmt.Errorf("job type %q is not in the throughput table", j.JobType)
	}
	if !t.runsAt(j.JobType, scale) {
		return HeteroJob{}, fmt.Errorf("job type %q has no throughput at scale factor %d on any GPU type", j.JobType, scale)
	}
	return j, nil
}

// nameHeteroJobs names jobs by their index, zero-padded to the same width so
// names sort in index order.
func nameHeteroJobs(jobs []HeteroJob) {
	width := max(3, len(strconv.Itoa(len(jobs)-1)))
	for i := range jobs {
		jobs[i].Name = fmt.Sprintf("%0*d-%s", width, i, shortJobType(jobs[i].JobType))
	}
}

// shortJobType turns "ResNet-50 (batch size 64)" into "resnet50-bs64" and
// "CycleGAN" into "cyclegan".
func shortJobType(jobType string) string {
	base, rest, _ := strings.Cut(jobType, "(")
	s := alnumLower(base)
	rest = strings.TrimSuffix(strings.TrimSpace(rest), ")")
	if bs, ok := strings.CutPrefix(rest, "batch size"); ok {
		rest = "bs" + bs
	}
	switch r := alnumLower(rest); {
	case s != "" && r != "":
		return s + "-" + r
	case s != "":
		return s
	case r != "":
		return r
	}
	return "job"
}

// alnumLower keeps the ASCII letters and digits of s, lower-cased.
func alnumLower(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func sortHeteroJobs(jobs []HeteroJob) {
	slices.SortStableFunc(jobs, func(a, b HeteroJob) int {
		if c := cmp.Compare(a.Submit, b.Submit); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
}

// gavelScaleWeights is the Philly scale-factor distribution Gavel draws from.
var gavelScaleWeights = map[int]float64{1: 0.7, 2: 0.1, 4: 0.15, 8: 0.05}

// gavelReference is the GPU type job durations are drawn on.
const gavelReference = "v100"

// GenerateGavel makes n jobs the way Gavel's simulator makes its continuous
// workloads (Narayanan et al., OSDI'20; scheduler/utils.py generate_job):
// Poisson arrivals at jobsPerHour, the first one gap after time 0; a duration
// on one V100 job alone of 60·10^U(1.5,3) s with probability 0.8, else
// 60·10^U(3,4) s; a scale factor of 1, 2, 4 or 8 with probabilities 0.7,
// 0.1, 0.15, 0.05; and total_steps = duration × the V100 steps/s at that
// scale. Jobs are numbered from 0 in arrival order. The same seed gives the
// same workload.
//
// Deviations from Gavel: the job type is drawn uniformly over the table's
// job types first, and its scale factor then from the distribution above
// restricted to the type's Scales (equivalent to redrawing until the scale
// fits). Gavel draws the scale first and redraws the type until it is
// distributed, so its overall share of scale 1 is exactly 0.7 and its
// single-GPU types are rarer; here single-GPU types (A3C, CycleGAN,
// Recommendation) are as common as the others and the overall share of
// scale 1 is higher: about 0.79 with Gavel's table, where 8 of the 26 types
// get only 1. Scales requires an entry on every GPU type, so ResNet-50 at
// batch size 128, which has no multi-GPU K80 throughput, is always generated
// at scale 1. Priorities and SLOs are not generated.
func GenerateGavel(t *GavelTable, n int, jobsPerHour float64, seed uint64) (HeteroWorkload, error) {
	if t == nil {
		return HeteroWorkload{}, errors.New("gavel workload: no throughput table")
	}
	if n < 1 || n > maxJobs {
		return HeteroWorkload{}, fmt.Errorf("gavel workload: %d jobs, want 1 to %d", n, maxJobs)
	}
	if !(jobsPerHour > 0) || math.IsInf(jobsPerHour, 0) {
		return HeteroWorkload{}, fmt.Errorf("gavel workload: %v jobs per hour, want a positive rate", jobsPerHour)
	}
	var types []string
	scales := map[string][]int{}
	for _, jt := range t.jobs {
		if s := t.Scales(jt); len(s) > 0 {
			types = append(types, jt)
			scales[jt] = s
		}
	}
	if !slices.Contains(t.gpus, gavelReference) || len(types) == 0 {
		return HeteroWorkload{}, fmt.Errorf("gavel workload: the table has no job type with a throughput on every GPU type including %s", gavelReference)
	}
	r := rand.New(rand.NewPCG(seed, 0x676176656c)) // "gavel"
	w := HeteroWorkload{
		Name: fmt.Sprintf("gavel-%d-jobs-%g-per-hour-seed-%d", n, jobsPerHour, seed),
		Jobs: make([]HeteroJob, 0, n),
	}
	gap := 3600 / jobsPerHour
	at := 0.0
	for range n {
		at += r.ExpFloat64() * gap
		if at > maxSubmitSeconds {
			return HeteroWorkload{}, fmt.Errorf("gavel workload: arrivals pass %.0f s; raise the rate or lower the job count", maxSubmitSeconds)
		}
		jt := types[r.IntN(len(types))]
		duration := gavelDuration(r)
		scale := gavelScale(r, scales[jt])
		sps, _ := t.StepsPerSecond(gavelReference, jt, scale) // > 0: scale is in Scales
		w.Jobs = append(w.Jobs, HeteroJob{
			Submit:  time.Duration(math.Round(at * float64(time.Second))),
			JobType: jt,
			Scale:   scale,
			Steps:   duration * sps,
		})
	}
	nameHeteroJobs(w.Jobs)
	sortHeteroJobs(w.Jobs)
	return w, nil
}

// gavelDuration draws a job's run time alone on the reference GPU, in
// seconds, from Gavel's Philly-derived distribution.
func gavelDuration(r *rand.Rand) float64 {
	if r.Float64() < 0.8 {
		return 60 * math.Pow(10, 1.5+1.5*r.Float64())
	}
	return 60 * math.Pow(10, 3+r.Float64())
}

// gavelScale draws a scale factor among allowed (ascending, non-empty) with
// Gavel's weights renormalised over allowed.
func gavelScale(r *rand.Rand, allowed []int) int {
	if len(allowed) == 1 {
		return allowed[0]
	}
	total := 0.0
	for _, s := range allowed {
		total += gavelScaleWeights[s]
	}
	u := r.Float64() * total
	for _, s := range allowed {
		if u < gavelScaleWeights[s] {
			return s
		}
		u -= gavelScaleWeights[s]
	}
	return allowed[len(allowed)-1]
}
