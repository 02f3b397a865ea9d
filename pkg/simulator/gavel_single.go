package simulator

import (
	"fmt"
	"math"
)

// gavelModel is one job of a Gavel-format trace on one GPU type, as a
// model of the single-type simulation: its measured throughput by GPU
// count (interpolated between the counts Gavel measured, and flat past the
// fastest) and its own work.
type gavelModel struct {
	curve []float64 // steps/s at n GPUs, n = 1..len−1
	top   int       // the fastest GPU count
	steps float64
}

func (m *gavelModel) StepSeconds(shape []int, _ int) float64 {
	n := 0
	for _, g := range shape {
		n += g
	}
	if n < 1 {
		return math.Inf(1)
	}
	return 1 / m.curve[min(n, m.top)]
}

func (m *gavelModel) FastestStepSeconds(n, _, _, batch int) float64 {
	return m.StepSeconds([]int{n}, batch)
}

func (m *gavelModel) Steps(int) float64  { return m.steps }
func (m *gavelModel) MaxWorkers(int) int { return m.top }

// gavelCatalog finds a trace's jobs by name.
type gavelCatalog map[string]*gavelModel

func (c gavelCatalog) Lookup(name string) (Model, error) {
	if m, ok := c[name]; ok {
		return m, nil
	}
	return nil, fmt.Errorf("job %q is not in the trace", name)
}

// SingleType turns a Gavel-format trace into a workload of the single-type
// simulation on gpuType, with the catalog that holds its jobs' throughputs
// there: every job's model is the job itself (its type's throughput, its
// own steps), its GPUs its scale factor, its batch the type's (unused).
func SingleType(w HeteroWorkload, t *GavelTable, gpuType string) (Workload, Catalog, error) {
	out := Workload{Name: w.Name}
	cat := gavelCatalog{}
	for _, j := range w.Jobs {
		curve := gavelCurve(t, gpuType, j.JobType, 8)
		if curve[1] <= 0 {
			return Workload{}, nil, fmt.Errorf("job %s: type %q has no throughput on %s", j.Name, j.JobType, gpuType)
		}
		top := 1
		for n := 2; n < len(curve); n++ {
			if curve[n] > curve[top] {
				top = n
			}
		}
		cat[j.Name] = &gavelModel{curve: curve, top: top, steps: j.Steps}
		out.Jobs = append(out.Jobs, Job{Name: j.Name, Submit: j.Submit, Model: j.Name, GPUs: j.Scale, Batch: 1})
	}
	return out, cat, nil
}

// gavelCurve is a job type's steps/s on gpuType at 1 to most GPUs: the
// measured counts, monotone (more GPUs never run slower: Voda would not use
// them), the unmeasured counts between two measured ones interpolated. All
// zero when the type does not run there.
func gavelCurve(table *GavelTable, gpuType, jobType string, most int) []float64 {
	curve := make([]float64, most+1)
	best := 0.0
	for n := 1; n <= most; n++ {
		if v, ok := table.StepsPerSecond(gpuType, jobType, n); ok && v > best {
			best = v
		}
		curve[n] = best
	}
	for n := 1; n <= most; n++ {
		if _, ok := table.StepsPerSecond(gpuType, jobType, n); ok || curve[n] == 0 {
			continue
		}
		lo, hi := n-1, n+1
		for hi <= most {
			if _, ok := table.StepsPerSecond(gpuType, jobType, hi); ok {
				break
			}
			hi++
		}
		if hi <= most && curve[hi] > curve[lo] {
			curve[n] = curve[lo] + (curve[hi]-curve[lo])*float64(n-lo)/float64(hi-lo)
		}
	}
	return curve
}
