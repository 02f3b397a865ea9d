package simulator

import (
	"fmt"
	"math"
	"slices"

	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/cluster/sim"
	"github.com/vodascheduler/voda/pkg/estimator"
)

// # Where the estimate loses
//
// Config.Ablation changes one part of what an adapting job's estimate
// knows, to measure what that part costs (docs/evaluation.md). Three of
// them replace the estimator's batch model, the time of an epoch at a
// batch M against the initial batch M0 at n workers (estimator.BatchTime:
// fixed shares of per-sample and per-step work):
//
//   - AblateBatchTime: the profiles' own ratio on packed placements, the
//     exact model;
//   - AblatePolluxFit: Pollux's model of a step's time
//     (estimator.StepModel) fitted to every profiled point of the job's
//     model on packed placements, the best that form could learn;
//   - AblateLearnedSteps: the same model learned as jobs run, from the
//     steps the category's jobs measured (estimator.StepModels).

// batchModel is the batch model an ablation gives an adapting job of
// model name and k GPUs per worker; nil for the estimator's own.
func (r *run) batchModel(name string, a *adaptation, k int) func(n, batch int) float64 {
	per := r.cfg.GPUsPerNode
	packed := func(n int) (gpus, nodes int) { return n * k, len(sim.PackedShape(n*k, per)) }
	switch r.cfg.Ablation {
	case AblateBatchTime:
		return func(n, batch int) float64 {
			shape := sim.PackedShape(n*k, per)
			return a.model.StepSeconds(shape, batch) * float64(a.lo) / (float64(batch) * a.model.StepSeconds(shape, a.lo))
		}
	case AblatePolluxFit:
		key := curveKey{model: name, lo: a.lo, hi: a.hi, k: k}
		m, ok := r.fits[key]
		if !ok {
			m = estimator.FitStepModel(profiledSteps(a, k, per, r.cfg.Nodes*per), a.model.MaxLocal())
			r.fits[key] = m
		}
		return func(n, batch int) float64 {
			gpus, nodes := packed(n)
			return m.Ratio(gpus, nodes, a.lo, batch)
		}
	case AblateLearnedSteps:
		a.steps = fmt.Sprintf("%s/%d-%d/%d", name, a.lo, a.hi, k)
		return func(n, batch int) float64 {
			m := r.steps.Model(a.steps)
			if !m.Known() {
				return estimator.BatchTime(n, a.lo, batch)
			}
			gpus, nodes := packed(n)
			return m.Ratio(gpus, nodes, a.lo, batch)
		}
	}
	return nil
}

// learnSteps adds what an adapting job's step measured to its category's
// step model (AblateLearnedSteps).
func (r *run) learnSteps(a *adaptation, n int, nodes []api.NodeName, seconds float64) {
	if a.steps == "" {
		return
	}
	distinct := len(slices.Compact(slices.Sorted(slices.Values(nodes))))
	r.steps.Observe(a.steps, a.model.MaxLocal(), estimator.StepSample{GPUs: n * a.gpusPW, Nodes: distinct, Batch: a.batch, Seconds: seconds})
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
