package kube

import (
	"context"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/estimator"
	"github.com/vodascheduler/voda/pkg/progress"
	"github.com/vodascheduler/voda/pkg/scheduler"
)

// progressEnv is what a job's pods need to report their progress: the URL
// and the job's token. Empty without a progress URL.
// childEnv is the environment every container of a job's pods gets: the
// GPUs per worker (for scripts that turn ranks into workers) and, when
// progress reports are on, where and how to report.
func (c *Controller) childEnv(tj *v1alpha1.TrainingJob) []corev1.EnvVar {
	k, _ := c.workerUnits(tj)
	env := append([]corev1.EnvVar{{Name: progress.EnvGPUsPerWorker, Value: strconv.Itoa(k)}}, batchEnv(tj)...)
	return append(env, c.progressEnv(tj)...)
}

func (c *Controller) progressEnv(tj *v1alpha1.TrainingJob) []corev1.EnvVar {
	if c.opts.ProgressURL == "" || c.progressKey == nil {
		return nil
	}
	// The namespace rides along: the API finds jobs elsewhere than its
	// own namespace by it (kubectl users' jobs in their namespaces).
	url := strings.TrimSuffix(c.opts.ProgressURL, "/") + "/api/v1/jobs/" + tj.Name + "/progress?namespace=" + tj.Namespace
	return []corev1.EnvVar{
		{Name: progress.EnvURL, Value: url},
		{Name: progress.EnvToken, Value: progress.Token(c.progressKey, tj.Namespace, tj.Name, tj.UID)},
	}
}

// category is the history a job shares: its spec's category, else its own.
func category(tj *v1alpha1.TrainingJob) string {
	return categoryOf(jobID(client.ObjectKeyFromObject(tj)), tj.Spec.Category)
}

// categoryOf is category for a job known by its ID and spec category.
func categoryOf(id api.JobID, specCategory string) string {
	key := jobKey(id)
	if specCategory != "" {
		return key.Namespace + "/" + specCategory
	}
	return key.Namespace + "/" + key.Name
}

// learn feeds a job's progress reports, as its status sums them up, to the
// estimator, and the estimate to the engine: the remaining epochs' time at
// one GPU (when the spec gives epochs) and the speedup curve. It does
// nothing when no report arrived since the last time.
func (e *engine) learn(ctx context.Context, tj *v1alpha1.TrainingJob) error {
	p := tj.Status.Progress
	if p == nil {
		return nil
	}
	c := e.c
	id := jobID(client.ObjectKeyFromObject(tj))
	k, _ := c.workerUnits(tj)
	perNode := c.nodeGPUs(string(e.gpuType))
	c.estMu.Lock()
	if c.learned[id] == p.Reports {
		c.estMu.Unlock()
		return nil
	}
	c.learned[id] = p.Reports
	var r *estimator.BatchRange
	if b := tj.Spec.BatchSize; b != nil {
		cat := stepCategory(tj, string(e.gpuType))
		c.steps.Replace(string(id), cat, int(b.PerGPUMax), stepsOf(tj, string(e.gpuType), k, perNode))
		if f, due := c.steps.Due(cat); due {
			c.estMu.Unlock()
			c.fitMu.Lock()
			f.Run()
			c.fitMu.Unlock()
			c.estMu.Lock()
			c.steps.Install(f)
			if _, ok := c.learned[id]; !ok {
				c.estMu.Unlock()
				return nil // it ended meanwhile (finished)
			}
		}
		r = c.batchRangeOf(tj, string(e.gpuType), k, perNode)
	}
	obs := make([]estimator.Observation, 0, len(p.EpochTimes))
	for _, et := range p.EpochTimes {
		// Only this type's epochs: a job of several types runs at
		// another speed on each.
		if et.GPUType != "" && et.GPUType != string(e.gpuType) {
			continue
		}
		secs := float64(et.Millis) / 1000
		if r != nil && et.Batch > 0 {
			// At the initial batch, for a job that lets Voda choose it.
			secs /= r.TimeAt(int(et.Workers), int(et.Batch))
		}
		obs = append(obs, estimator.Observation{Workers: int(et.Workers), Seconds: secs, Weight: float64(et.Epochs)})
	}
	c.est.Replace(string(id), category(tj), obs)
	fit := c.est.Estimate(string(id), category(tj))
	speedup, remaining := fit.Speedup, -1.0
	if b := c.adapt(tj, r, k, fit); b != nil {
		speedup = b.best.Speedup
		if tj.Spec.Epochs > 0 {
			done := float64(p.Epoch)
			if p.EquivalentEpochs != nil {
				done = p.EquivalentEpochs.AsApproximateFloat64()
			}
			remaining = b.best.Remaining(max(float64(tj.Spec.Epochs)-done, 0))
		}
		restart := restartSeconds(tj)
		if restart <= 0 {
			restart = defaultRestart.Seconds()
		}
		// convergeRunning, next in this reconcile, restarts the job.
		b.retune, b.retuneAt = b.retuneWorth(int(tj.Status.Workers), remaining, restart), int(tj.Status.Workers)
	} else if tj.Spec.Epochs > 0 {
		remaining = fit.Remaining(float64(max(tj.Spec.Epochs-p.Epoch, 0)))
	}
	c.estMu.Unlock()
	if m := c.opts.Metrics; m != nil && fit.Known() && tj.Status.Workers > 0 {
		m.Throughput(e.gpuType, tj.Namespace, tj.Name, 3600/fit.Seconds(int(tj.Status.Workers)))
	}
	return e.loop.Do(ctx, func(en *scheduler.Engine) error {
		if _, ok := en.Job(id); !ok {
			return nil
		}
		return en.Step(scheduler.Progress{ID: id, Remaining: remaining, Speedup: speedup, Measured: fit.KnownAt})
	})
}

// defaultRestart is what a restart is taken to cost a job whose runtime's
// figure is unknown (restartSeconds): the simulator's default restart
// delay, whose double is HeSRPT's default restart cost.
const defaultRestart = 30 * time.Second

// prior is what the estimator expects of a new job before it reports: its
// category's history (remaining time at one GPU, when the spec gives
// epochs, and speedup), else unknown and the default curve.
func (c *Controller) prior(tj *v1alpha1.TrainingJob) (float64, estimator.Fit) {
	c.estMu.Lock()
	defer c.estMu.Unlock()
	return c.priorOf(jobID(client.ObjectKeyFromObject(tj)), category(tj), int(tj.Spec.Epochs))
}

// priorOf is prior for a job known by its ID, category and epochs. The
// caller holds estMu.
func (c *Controller) priorOf(id api.JobID, cat string, epochs int) (float64, estimator.Fit) {
	fit := c.est.Estimate(string(id), cat)
	remaining := -1.0
	if epochs > 0 {
		remaining = fit.Remaining(float64(epochs))
	}
	return remaining, fit
}

// relearn gives every job of the engine in the finished job's category
// that has not reported yet the prior the category's history now makes: a
// job that waits would otherwise keep the guess it was submitted with
// (often none) until it runs, and wait behind jobs whose length is known.
func (e *engine) relearn(en *scheduler.Engine, done scheduler.Job) error {
	cat := categoryOf(done.ID, done.Spec.Category)
	c := e.c
	for _, j := range en.Jobs() {
		if j.Phase.Final() || categoryOf(j.ID, j.Spec.Category) != cat {
			continue
		}
		c.estMu.Lock()
		_, reported := c.learned[j.ID]
		var rem float64
		var fit estimator.Fit
		if !reported { // else its own reports say more
			rem, fit = c.priorOf(j.ID, cat, j.Spec.Epochs)
		}
		c.estMu.Unlock()
		if reported {
			continue
		}
		if err := en.Step(scheduler.Progress{ID: j.ID, Remaining: rem, Speedup: fit.Speedup, Measured: fit.KnownAt}); err != nil {
			return err
		}
	}
	return nil
}

// finished tells the estimator a job ended: a completed job's curve joins
// its category's history, which is saved; any other is forgotten. It
// reports whether the history changed.
func (c *Controller) finished(ctx context.Context, id api.JobID, completed bool) bool {
	c.estMu.Lock()
	defer c.estMu.Unlock()
	_, reported := c.learned[id]
	delete(c.learned, id)
	delete(c.batches, id)
	// A job's steps stay true of its category however it ended.
	c.steps.Retire(string(id))
	if !completed || !reported {
		c.est.Forget(string(id))
		return false
	}
	c.est.Finish(string(id))
	c.saveHistory(ctx)
	return true
}

// disruption is a job's start, resize or migration that has not yet
// settled: since when, on how many workers, and when Voda last let its
// workers' pods be bound (ungated them). tookOver says since is when this
// controller first saw the job settling, not when the job was placed (it
// was placed before a restart or by another leader).
type disruption struct {
	since    time.Time
	workers  int
	released time.Time
	tookOver bool
}

// clock is when the gang clock started and, in words for the job's
// Event, from what: the last time Voda let the job's gated workers go to
// their nodes, if later than the start, resize or migration.
func (d disruption) clock() (time.Time, string) {
	switch {
	case d.released.After(d.since):
		return d.released, "after they were let go to their nodes"
	case d.tookOver:
		return d.since, "after this controller took over"
	}
	return d.since, "after they were placed"
}

// ungated notes that a job's last gated workers were let go to their nodes
// now: the gang clock counts from here (checkGang).
func (c *Controller) ungated(id api.JobID) {
	c.estMu.Lock()
	defer c.estMu.Unlock()
	if d, ok := c.disrupted[id]; ok {
		d.released = time.Now()
		c.disrupted[id] = d
	}
}

// restarting notes that a job's workers restart from now.
func (c *Controller) restarting(id api.JobID, workers int) {
	c.noteDisruption(id, workers, false)
}

// takingOver notes that a job placed before this controller took over
// has not settled: its gang clock counts from now.
func (c *Controller) takingOver(id api.JobID, workers int) {
	c.noteDisruption(id, workers, true)
}

// noteDisruption starts a job's disruption now, or updates its workers if
// one is under way.
func (c *Controller) noteDisruption(id api.JobID, workers int, tookOver bool) {
	c.estMu.Lock()
	defer c.estMu.Unlock()
	if _, ok := c.disrupted[id]; !ok {
		c.disrupted[id] = disruption{since: time.Now(), workers: workers, tookOver: tookOver}
	} else {
		d := c.disrupted[id]
		d.workers = workers
		c.disrupted[id] = d
	}
}

// runningAgain ends a job's disruption: if settled, its GPU time counts as
// lost to restarting.
func (c *Controller) runningAgain(id api.JobID, gpuType api.GPUType, settled bool) {
	c.estMu.Lock()
	d, ok := c.disrupted[id]
	delete(c.disrupted, id)
	c.estMu.Unlock()
	if ok && settled && c.opts.Metrics != nil {
		c.opts.Metrics.RestartLost(gpuType, time.Since(d.since).Seconds()*float64(d.workers))
	}
}
