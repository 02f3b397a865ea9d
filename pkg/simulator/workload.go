package simulator

import (
	"cmp"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Model is what the simulator needs from a model catalog entry.
type Model interface {
	// StepSeconds is the time of one optimizer step at a global batch on a
	// placement with shape[i] GPUs on node i.
	StepSeconds(shape []int, batch int) float64
	// FastestStepSeconds is at most StepSeconds over every placement of n
	// GPUs on at most maxNodes nodes of perNode GPUs: the lower bounds need
	// it, as a spread placement is not always slower.
	FastestStepSeconds(n, perNode, maxNodes, batch int) float64
	// Steps is the work to finish at a fixed global batch.
	Steps(batch int) float64
	// MaxWorkers is the largest useful GPU count at a global batch.
	MaxWorkers(batch int) int
}

// Catalog finds models by name.
type Catalog interface {
	Lookup(name string) (Model, error)
}

// Job is one job of a workload.
type Job struct {
	Name   string
	Submit time.Duration // from the start of the trace
	Model  string
	GPUs   int // the size a rigid scheduler gives it
	Batch  int // global batch size, fixed for the whole run
	// GPUsPerWorker is the GPUs each worker holds (the optional
	// gpus_per_worker column); 0 takes Config.GPUsPerWorker.
	GPUsPerWorker int
	// Rigid jobs run at GPUs only, under every policy: their minimum and
	// maximum are their size (the synthetic workload's RigidShare).
	Rigid bool
	// QueueName is the ClusterQueue whose quota the job counts against
	// (the optional queue column, or SpreadQueues); empty without queues.
	QueueName string
	// MaxBatch, when set (the optional max_batch_size column), lets the
	// job adapt its batch size between Batch and it (adaptive.go); 0
	// keeps Batch fixed unless Config.AdaptiveBatch says otherwise.
	MaxBatch int
}

// Workload is a named list of jobs, sorted by submission time then name.
type Workload struct {
	Name string
	Jobs []Job
}

// maxJobs bounds a workload so a malformed or hostile file cannot exhaust
// memory.
const maxJobs = 1_000_000

// ReadWorkload reads a Pollux-artifact workload CSV
// (name,time,application,num_replicas,batch_size), optionally with the
// columns gpus_per_worker, queue and max_batch_size. Errors name the file
// and line. Every application must be in the catalog.
func ReadWorkload(path string, cat Catalog) (Workload, error) {
	f, err := os.Open(path)
	if err != nil {
		return Workload{}, fmt.Errorf("workload: %w", err)
	}
	defer f.Close()
	name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	w, err := ParseWorkload(f, name, cat)
	if err != nil {
		return Workload{}, fmt.Errorf("%s:%w", path, err)
	}
	return w, nil
}

var header = []string{"name", "time", "application", "num_replicas", "batch_size"}

// The optional columns, after the five of the header, in any order.
const (
	perWorkerColumn = "gpus_per_worker"
	queueColumn     = "queue"
	maxBatchColumn  = "max_batch_size"
)

// columns locates the optional columns of a workload file; -1 when absent.
type columns struct{ total, perWorker, queue, maxBatch int }

// parseHeader checks the header line and finds the optional columns.
func parseHeader(rec []string) (columns, error) {
	got := trimAll(rec)
	c := columns{total: len(got), perWorker: -1, queue: -1, maxBatch: -1}
	ok := len(got) >= len(header) && slices.Equal(got[:len(header)], header)
	for i := len(header); ok && i < len(got); i++ {
		switch {
		case got[i] == perWorkerColumn && c.perWorker < 0:
			c.perWorker = i
		case got[i] == queueColumn && c.queue < 0:
			c.queue = i
		case got[i] == maxBatchColumn && c.maxBatch < 0:
			c.maxBatch = i
		default:
			ok = false
		}
	}
	if !ok {
		return c, fmt.Errorf("1: header is %q, want %q and optionally %s, %s and %s: the Pollux artifact's workload format (docs/simulator.md); Gavel's traces are read with --gpu-types and --gavel, and traces of durations alone (Tiresias', Philly's) have no throughputs to simulate",
			strings.Join(rec, ","), strings.Join(header, ","), perWorkerColumn, queueColumn, maxBatchColumn)
	}
	return c, nil
}

// ParseWorkload parses a workload CSV from r. Errors start with the line
// number ("3: …").
func ParseWorkload(r io.Reader, name string, cat Catalog) (Workload, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	w := Workload{Name: name}
	seen := map[string]int{}
	var cols columns
	for line := 1; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return Workload{}, fmt.Errorf("%d: %v", pe.Line, pe.Err)
			}
			return Workload{}, fmt.Errorf("%d: %w", line, err)
		}
		if line == 1 {
			if cols, err = parseHeader(rec); err != nil {
				return Workload{}, err
			}
			continue
		}
		if len(rec) != cols.total {
			return Workload{}, fmt.Errorf("%d: %d fields, want %d as the header has", line, len(rec), cols.total)
		}
		j, err := parseJob(trimAll(rec), cols, cat)
		if err != nil {
			return Workload{}, fmt.Errorf("%d: %w", line, err)
		}
		if prev, dup := seen[j.Name]; dup {
			return Workload{}, fmt.Errorf("%d: job %q already appears on line %d", line, j.Name, prev)
		}
		seen[j.Name] = line
		if len(w.Jobs) >= maxJobs {
			return Workload{}, fmt.Errorf("%d: more than %d jobs", line, maxJobs)
		}
		w.Jobs = append(w.Jobs, j)
	}
	if len(w.Jobs) == 0 {
		return Workload{}, errors.New("0: the workload has no jobs")
	}
	sortJobs(w.Jobs)
	return w, nil
}

func trimAll(rec []string) []string {
	out := make([]string, len(rec))
	for i, f := range rec {
		out[i] = strings.TrimSpace(f)
	}
	return out
}

func parseJob(rec []string, cols columns, cat Catalog) (Job, error) {
	j := Job{Name: rec[0], Model: rec[2]}
	if j.Name == "" {
		return Job{}, errors.New("name is empty")
	}
	sec, err := strconv.ParseFloat(rec[1], 64)
	if err != nil || !(sec >= 0 && sec <= 1e9) { // NaN too
		return Job{}, fmt.Errorf("time %q: want seconds from the trace start (0 to 1e9)", rec[1])
	}
	j.Submit = time.Duration(sec * float64(time.Second))
	if j.GPUs, err = strconv.Atoi(rec[3]); err != nil || j.GPUs < 1 || j.GPUs > 100_000 {
		return Job{}, fmt.Errorf("num_replicas %q: want a positive number of GPUs", rec[3])
	}
	if j.Batch, err = strconv.Atoi(rec[4]); err != nil || j.Batch < 1 || j.Batch > 100_000_000 {
		return Job{}, fmt.Errorf("batch_size %q: want a positive global batch size", rec[4])
	}
	if c := cols.perWorker; c >= 0 && rec[c] != "" {
		k, err := strconv.Atoi(rec[c])
		if err != nil || k < 1 || k > 64 {
			return Job{}, fmt.Errorf("%s %q: want the GPUs of one worker, 1 to 64 (empty for the default)", perWorkerColumn, rec[c])
		}
		j.GPUsPerWorker = k
	}
	if c := cols.queue; c >= 0 {
		j.QueueName = rec[c]
	}
	if c := cols.maxBatch; c >= 0 && rec[c] != "" {
		m, err := strconv.Atoi(rec[c])
		if err != nil || m < j.Batch || m > 100_000_000 {
			return Job{}, fmt.Errorf("%s %q: want the largest global batch the job may adapt to, at least its batch_size %d (empty keeps the batch size fixed)", maxBatchColumn, rec[c], j.Batch)
		}
		j.MaxBatch = m
	}
	if _, err := cat.Lookup(j.Model); err != nil {
		return Job{}, fmt.Errorf("application %q: %w", j.Model, err)
	}
	return j, nil
}

func sortJobs(jobs []Job) {
	slices.SortStableFunc(jobs, func(a, b Job) int {
		if c := cmp.Compare(a.Submit, b.Submit); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
}

// ReadWorkloads reads one CSV file, or every *.csv file of a directory in
// name order.
func ReadWorkloads(path string, cat Catalog) ([]Workload, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	if !info.IsDir() {
		w, err := ReadWorkload(path, cat)
		if err != nil {
			return nil, err
		}
		return []Workload{w}, nil
	}
	files, err := filepath.Glob(filepath.Join(path, "*.csv"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("workload: %s holds no *.csv files (Gavel's .trace files are read with --gpu-types and --gavel)", path)
	}
	slices.Sort(files)
	var out []Workload
	for _, f := range files {
		w, err := ReadWorkload(f, cat)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}
