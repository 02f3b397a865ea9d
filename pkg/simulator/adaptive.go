package simulator

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/cluster/sim"
	"github.com/vodascheduler/voda/pkg/estimator"
	"github.com/vodascheduler/voda/pkg/scheduler"
)

// Jobs that let Voda choose their batch size (Config.AdaptiveBatch, or a
// workload's max_batch_size column) are scheduled by goodput
// (pkg/model's Goodput: throughput times statistical efficiency). Their
// work is statistical progress, in steps at the model's smallest traced
// batch; the policies see, at every worker count, the goodput of the best
// batch there in the job's current epoch (Speedup, relative to one worker)
// and the work left over the goodput at one worker (Remaining). Every
// start or resize runs at the best batch for the new placement and epoch,
// held until the next restart; a batch change alone restarts the job only
// when it pays: when the time it saves on the job's current placement
// exceeds twice the restart delay, the break-even HeSRPT applies to
// resizes (the restart itself and as much again against flapping).

// AdaptiveModel is a Model whose statistical efficiency is known epoch by
// epoch (pkg/model's catalogs: the profiles' statistics, or the built-in
// summary of them), so that its jobs may adapt their batch size.
type AdaptiveModel interface {
	Model
	Adaptive() bool
	MaxBatch() int
	Work() float64
	Epoch(progress float64) (e int, end float64)
	Efficiency(e, batch int) float64
	BestBatch(shape []int, e, lo, hi int) (batch int, goodput float64)
	NoiseScale(e, batch int) float64
	InitBatch() int
	MinLocal() int
	MaxLocal() int
}

// adaptation is what the simulator keeps for a job that adapts its batch.
type adaptation struct {
	model  AdaptiveModel
	lo, hi int // the batch range
	epoch  int // the epoch as of the last round
	batch  int // in force; 0 before the first start
	// changes counts the batch changes; retunes the restarts for a batch
	// change alone.
	changes, retunes int

	// With estimated information (learn): the batch range as the
	// estimator takes it, the noise scale the job's reports measured
	// (samples; negative before the first), and the latest estimate, which
	// chooses the batch at each start and resize.
	rng    *estimator.BatchRange
	noise  float64
	best   estimator.Adaptive
	gpusPW int
	// oracleBatch (AblateBatch) chooses the batch by the profiles, as
	// with oracle information, while the policies see the estimate.
	oracleBatch bool
	// steps names the job's category in the learned batch models.
	steps string
	// reports sums, per worker count and batch, the job's time per unit
	// of work at the batch in force (a step's time over its share of a
	// step at the initial batch) and how many reports gave it: brought
	// back to the initial batch by the batch model in force at each
	// estimate, as the controller brings back the epoch times it keeps in
	// the job's status.
	reports map[[2]int][2]float64
}

// adaptiveOf returns the adaptation of a job that adapts its batch, nil for
// one that does not; an error for one that would but cannot.
func (r *run) adaptiveOf(j Job, m Model) (*adaptation, error) {
	if !r.cfg.AdaptiveBatch && j.MaxBatch == 0 {
		return nil, nil
	}
	am, ok := m.(AdaptiveModel)
	if !ok || !am.Adaptive() {
		return nil, fmt.Errorf("model %s has no gradient statistics to adapt its batch size by", j.Model)
	}
	a := &adaptation{model: am, lo: j.Batch, hi: j.MaxBatch}
	if a.hi == 0 {
		a.hi = max(am.MaxBatch(), a.lo)
	}
	if a.hi < a.lo {
		return nil, fmt.Errorf("max_batch_size %d is below batch_size %d", a.hi, a.lo)
	}
	return a, nil
}

// curveKey names one goodput curve: a model's batch range in one epoch on
// packed placements of workers of k GPUs.
type curveKey struct {
	model     string
	lo, hi, e int
	k, n      int
}

// goodputs returns the best goodput of a job at every worker count up to
// its maximum, on packed placements, in epoch e; memoised, as jobs of one
// model and range share them.
func (r *run) goodputs(ji *jobInfo, e int) []float64 {
	a, k := ji.adapt, ji.spec.K()
	key := curveKey{model: ji.Model, lo: a.lo, hi: a.hi, e: e, k: k, n: ji.spec.MaxWorkers}
	if c, ok := r.curves[key]; ok {
		return c
	}
	c := make([]float64, ji.spec.MaxWorkers+1)
	for n := 1; n <= ji.spec.MaxWorkers; n++ {
		_, c[n] = a.model.BestBatch(sim.PackedShape(n*k, r.cfg.GPUsPerNode), e, a.lo, a.hi)
	}
	r.curves[key] = c
	return c
}

// adaptiveView is what the policies are told of an adaptive job in epoch
// e with work left: the work left over the goodput at one worker, and the
// goodput at each count relative to one worker.
func (r *run) adaptiveView(ji *jobInfo, e int, left float64) (float64, algorithm.Speedup) {
	c := r.goodputs(ji, e)
	one := c[1]
	if !(one > 0) {
		// One worker cannot hold the smallest batch: relative to the
		// first count that can.
		for _, g := range c[1:] {
			if g > 0 {
				one = g
				break
			}
		}
	}
	curve := make([]float64, len(c))
	for n := range c {
		curve[n] = c[n] / one
	}
	return left / one, func(n int) float64 {
		if n < 1 || n >= len(curve) {
			return 0
		}
		return curve[n]
	}
}

// plan is the cluster's Plan for an adaptive job: the best batch for the
// placement in the current epoch, held until the next restart, and the
// job's speed there epoch by epoch.
func (ji *jobInfo) plan(shape []int, done float64) ([]sim.Segment, float64) {
	a := ji.adapt
	e, _ := a.model.Epoch(done)
	b, _ := a.model.BestBatch(shape, e, a.lo, a.hi)
	if a.rng != nil && !a.oracleBatch {
		// Estimated information: the estimate's best at this many
		// workers, as the controller renders it.
		gpus := 0
		for _, g := range shape {
			gpus += g
		}
		b = a.best.Batch(gpus / a.gpusPW).Global
	}
	if b == 0 {
		return nil, 0
	}
	if a.batch != 0 && b != a.batch {
		a.changes++
	}
	a.batch = b
	return segments(a.model, shape, b, done), a.model.StepSeconds(shape, b)
}

// segments is a job's speed at a fixed batch on a placement, epoch by
// epoch from the work done on.
func segments(m AdaptiveModel, shape []int, batch int, done float64) []sim.Segment {
	step := m.StepSeconds(shape, batch)
	var segs []sim.Segment
	for p := done; ; {
		e, end := m.Epoch(p)
		segs = append(segs, sim.Segment{End: end, Rate: m.Efficiency(e, batch) / step})
		if end <= p || end >= m.Work() {
			return segs
		}
		p = end
	}
}

// learnAdaptive is estimate's part for a job that adapts its batch, with
// estimated information, as the controller learns it (pkg/cluster/kube):
// a productive job reports its time per unit of work at its batch in
// force, and every report so far is brought back to the work's batch by
// the batch model of the moment (its category's learned step model,
// ablation.go), as the controller brings back the epoch times the job's
// status keeps; it also reports the noise scale it measures there, each
// report weighing as much as all earlier ones. The policies get the
// goodput curve of the estimate, which also chooses the batch of the
// job's next start or resize.
func (r *run) learnAdaptive(id api.JobID, ji *jobInfo, t time.Time) error {
	a := ji.adapt
	m0 := a.rng.Initial
	done := r.cluster.Done(id, t)
	e, _ := a.model.Epoch(done)
	if r.cluster.Productive(id, t) && a.batch > 0 {
		n, where := r.cluster.Workers(id)
		r.learnSteps(a, n, api.NodesSpanned(where), r.cluster.StepSeconds(id))
		if a.reports == nil {
			a.reports = map[[2]int][2]float64{}
		}
		key := [2]int{n, a.batch}
		acc := a.reports[key]
		a.reports[key] = [2]float64{acc[0] + r.cluster.StepSeconds(id)*float64(m0)/float64(a.batch), acc[1] + 1}
		b := a.model.NoiseScale(e, a.batch)
		if a.noise >= 0 {
			b = (a.noise + b) / 2
		}
		a.noise = b
	}
	if len(a.reports) > 0 {
		obs := make([]estimator.Observation, 0, len(a.reports))
		for _, key := range slices.SortedFunc(maps.Keys(a.reports), func(x, y [2]int) int { return cmp.Or(x[0]-y[0], x[1]-y[1]) }) {
			acc := a.reports[key]
			obs = append(obs, estimator.Observation{Workers: key[0], Seconds: acc[0] / acc[1] / a.rng.TimeAt(key[0], key[1]), Weight: acc[1]})
		}
		r.est.Replace(ji.Name, ji.category, obs)
	}
	fit := r.curveFit(ji, r.est.Estimate(ji.Name, ji.category))
	a.best = fit.Adapt(*a.rng, a.gpusPW, ji.spec.MaxWorkers, a.noise)
	rem := a.best.Remaining(a.leftAtInitial(ji.steps, done))
	return r.engine.Step(scheduler.Progress{ID: id, Remaining: rem, Speedup: a.best.Speedup, Measured: fit.KnownAt})
}

// estimatedRange is the batch range of an adaptive job as the estimator
// takes it: its own batch up to its most, at least the model's smallest
// per-GPU batch on each GPU.
func estimatedRange(a *adaptation) *estimator.BatchRange {
	return &estimator.BatchRange{Initial: a.lo, Max: a.hi, PerGPUMin: a.model.MinLocal()}
}

// leftAtInitial is an adaptive job's work left in steps at its own batch
// (the estimator's unit), as the job counts it: the steps a run at its own
// batch would take from here, each epoch's work (in steps at the model's
// smallest batch) over what a step at its own batch makes in that epoch.
// That is what spec.epochs less the reported equivalentEpochs are in the
// controller.
func (a *adaptation) leftAtInitial(steps, done float64) float64 {
	left := 0.0
	for p := done; p < steps; {
		e, end := a.model.Epoch(p)
		end = min(end, steps)
		if end <= p {
			end = steps
		}
		left += (end - p) / a.model.Efficiency(e, a.lo)
		p = end
	}
	return left
}

// tellAdaptive gives the policies every adaptive job's view as of t.
func (r *run) tellAdaptive(t time.Time) error {
	for _, id := range slices.Sorted(maps.Keys(r.live)) {
		ji := r.live[id]
		if ji.adapt == nil || ji.adapt.rng != nil {
			continue // estimated information: learnAdaptive
		}
		done := r.cluster.Done(id, t)
		ji.adapt.epoch, _ = ji.adapt.model.Epoch(done)
		rem, speedup := r.adaptiveView(ji, ji.adapt.epoch, max(ji.steps-done, 0))
		if err := r.engine.Step(scheduler.Progress{ID: id, Remaining: max(rem, 1e-9), Speedup: speedup}); err != nil {
			return err
		}
	}
	return nil
}

// retune restarts, at t, each running adaptive job whose best batch on its
// placement has changed enough to pay for the restart: by the true
// throughput and efficiency with oracle information, by the estimate with
// estimated information (as the controller decides).
func (r *run) retune(t time.Time) error {
	delay := r.cfg.RestartDelay.Seconds()
	for _, id := range slices.Sorted(maps.Keys(r.live)) {
		ji := r.live[id]
		a := ji.adapt
		if a == nil || !r.cluster.Productive(id, t) {
			continue
		}
		_, nodes := r.cluster.Workers(id)
		done := r.cluster.Done(id, t)
		var saved float64
		if a.rng != nil && !a.oracleBatch {
			n := len(nodes)
			if b := a.best.Batch(n).Global; b == 0 || b == a.batch || !(a.best.Speedup(n) > 0) {
				continue
			}
			left := a.best.Remaining(a.leftAtInitial(ji.steps, done)) / a.best.Speedup(n)
			saved = a.best.RetuneSaving(n, a.batch, left)
		} else {
			shape := sim.Shape(nodes, ji.spec.K())
			e, _ := a.model.Epoch(done)
			b, _ := a.model.BestBatch(shape, e, a.lo, a.hi)
			if b == 0 || b == a.batch {
				continue
			}
			keep := r.cluster.SecondsLeft(id, t)
			saved = keep - sim.PlanSeconds(segments(a.model, shape, b, done), done, ji.steps)
		}
		if saved <= 2*delay {
			continue
		}
		was := a.batch
		if err := r.cluster.Restart(id, t); err != nil {
			return err
		}
		a.retunes++
		r.event(t, id, EventBatch, len(nodes)*ji.spec.K(), fmt.Sprintf("batch size %d→%d: %.0f s sooner on this placement", was, a.batch, saved-delay))
	}
	return nil
}

// adaptiveAlone is an adaptive job's time alone on a packed placement of
// workers: each epoch at its best batch there, with no restarts.
func adaptiveAlone(ji *jobInfo, shape []int) float64 {
	a := ji.adapt
	secs := 0.0
	for p := 0.0; p < ji.steps; {
		e, end := a.model.Epoch(p)
		_, g := a.model.BestBatch(shape, e, a.lo, a.hi)
		if !(g > 0) {
			return math.Inf(1)
		}
		end = min(end, ji.steps)
		if end <= p {
			end = ji.steps
		}
		secs += (end - p) / g
		p = end
	}
	return secs
}
