package simulator

import (
	"fmt"
	"math"

	"github.com/vodascheduler/voda/pkg/cluster/sim"
	"github.com/vodascheduler/voda/pkg/estimator"
)

// # Where the estimate loses
//
// Config.Ablation changes one part of what an adapting job's estimate
// knows, to measure what that part costs (docs/evaluation.md). Three of
// them replace the estimator's batch model, the time of an epoch at a
// batch M against the initial batch M0 at n workers, which is otherwise
// Pollux's model of a step's time learned as jobs run, from the steps the
// category's jobs measured, and brought to their means at a worker count
// where they measured two batches or more (estimator.StepModels), as the
// controller learns it (BatchTime's fixed shares until a category has
// measured estimator.MinStepPoints points):
//
//   - AblateBatchTime: the profiles' own ratio on packed placements, the
//     exact model;
//   - AblatePolluxFit: the step model fitted to every profiled point of
//     the job's model on packed placements, the best that form could
//     learn;
//   - AblateFixedShares: BatchTime's fixed shares alone, never learned.
//
// AblateCurve replaces, instead, the estimator's fit of an adapting job's
// time per unit of work at its own batch (curveFit).

// batchModel is the batch model an adapting job of model name and k GPUs
// per worker gets (nil for the fixed shares), and the step times at its
// initial batch that bound its speedup curve where it was not measured
// (nil for none; estimator.BatchRange.Steps). The ablations that replace
// the learned step model replace it in both.
func (r *run) batchModel(name string, a *adaptation, k int) (func(n, batch int) float64, func(n int) float64) {
	per := r.cfg.GPUsPerNode
	packed := func(n int) (gpus, nodes int) { return n * k, len(sim.PackedShape(n*k, per)) }
	switch r.cfg.Ablation {
	case AblateFixedShares:
		return nil, nil
	case AblateBatchTime:
		steps := func(n int) float64 { return a.model.StepSeconds(sim.PackedShape(n*k, per), a.lo) }
		timeAt := func(n, batch int) float64 {
			shape := sim.PackedShape(n*k, per)
			return a.model.StepSeconds(shape, batch) * float64(a.lo) / (float64(batch) * a.model.StepSeconds(shape, a.lo))
		}
		return timeAt, steps
	case AblatePolluxFit:
		key := curveKey{model: name, lo: a.lo, hi: a.hi, k: k}
		m, ok := r.fits[key]
		if !ok {
			m = estimator.FitStepModel(profiledSteps(a, k, per, r.cfg.Nodes*per), a.model.MaxLocal())
			r.fits[key] = m
		}
		return m.BatchModel(a.lo, packed), func(n int) float64 {
			gpus, nodes := packed(n)
			return m.Seconds(gpus, nodes, a.lo)
		}
	}
	a.steps = fmt.Sprintf("%s/%d-%d/%d", name, a.lo, a.hi, k)
	most := r.cfg.Nodes * per / max(k, 1)
	version := -1
	var model func(n, batch int) float64
	timeAt := func(n, batch int) float64 {
		m := r.steps.Model(a.steps)
		if !m.Known() {
			// Two batches measured at these GPUs tell a step's fixed
			// part from its per-sample part there.
			gpus, nodes := packed(n)
			if l, ok := r.steps.Line(a.steps, gpus, nodes); ok {
				return l.Ratio(a.lo, batch)
			}
			return estimator.BatchTime(n, a.lo, batch)
		}
		// The model, and the means it is brought to where they were
		// measured, change only with the category's points.
		if v := r.steps.Version(a.steps); model == nil || v != version {
			version, model = v, r.steps.BatchModel(a.steps, a.lo, most, packed)
		}
		return model(n, batch)
	}
	steps := func(n int) float64 {
		m := r.steps.Model(a.steps)
		if !m.Known() {
			return 0 // bounds nothing
		}
		gpus, nodes := packed(n)
		return m.Seconds(gpus, nodes, a.lo)
	}
	return timeAt, steps
}

// learnSteps adds what an adapting job's step measured to its category's
// step model (none for the ablations that do not learn it), on the nodes
// its workers ran on, as the controller learns them (EpochTime.Nodes).
func (r *run) learnSteps(a *adaptation, n, nodes int, seconds float64) {
	if a.steps == "" {
		return
	}
	r.steps.Observe(a.steps, a.model.MaxLocal(), estimator.StepSample{GPUs: n * a.gpusPW, Nodes: nodes, Batch: a.batch, Seconds: seconds})
}

// profiledSteps are an adapting job's steps on packed placements of up to
// 64 GPUs (the profiled testbed's size) and of the cluster's, at batches
// from its initial to its largest, four per doubling, where each GPU gets
// at least the model's smallest per-GPU batch.
func profiledSteps(a *adaptation, k, perNode, gpus int) []estimator.StepSample {
	var out []estimator.StepSample
	for _, n := range []int{1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64} {
		g := n * k
		if g > min(gpus, 64) {
			break
		}
		shape := sim.PackedShape(g, perNode)
		for i := 0; ; i++ {
			b := int(math.Round(float64(a.lo) * math.Exp2(float64(i)/4)))
			if b > a.hi {
				break
			}
			if b < g*a.model.MinLocal() {
				continue
			}
			if t := a.model.StepSeconds(shape, b); t > 0 && !math.IsInf(t, 1) {
				out = append(out, estimator.StepSample{GPUs: g, Nodes: len(shape), Batch: b, Seconds: t})
			}
		}
	}
	return out
}

// curveFit is the fit an adapting job's estimate starts from: the
// estimator's, or with AblateCurve the profiles' time per unit of work (a
// step at the job's own batch) at every worker count, on packed
// placements, as if each had been measured.
func (r *run) curveFit(ji *jobInfo, fit estimator.Fit) estimator.Fit {
	if r.cfg.Ablation != AblateCurve {
		return fit
	}
	a, k := ji.adapt, ji.spec.K()
	key := curveKey{model: ji.Model, lo: a.lo, hi: a.hi, k: k, n: ji.spec.MaxWorkers}
	if f, ok := r.exact[key]; ok {
		return f
	}
	est := estimator.New()
	for n := 1; n <= ji.spec.MaxWorkers; n++ {
		if s := a.model.StepSeconds(sim.PackedShape(n*k, r.cfg.GPUsPerNode), a.lo); s > 0 && !math.IsInf(s, 1) {
			est.Observe("exact", "exact", estimator.Observation{Workers: n, Seconds: s})
		}
	}
	f := est.Estimate("exact", "exact")
	r.exact[key] = f
	return f
}
