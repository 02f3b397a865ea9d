package scheduler

import (
	"math"
	"time"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/api"
)

// updateQueues applies Tiresias demotions (attained service past the
// queue's threshold) and promotions (starved for PromoteKnob times the last
// run; the since-start counter restarts). It reports whether any queue
// changed.
func (e *Engine) updateQueues() bool {
	cfg := e.algo.Tiresias
	changed := false
	for _, j := range e.active {
		if q := cfg.Demote(j.Queue, e.service(j)); q != j.Queue {
			j.Queue, changed = q, true
		}
		if j.Phase == api.PhaseWaiting && cfg.Promote(j.Queue, j.WaitingSinceRunSeconds, j.LastRunSeconds) {
			j.Queue, j.SinceStartGPUSeconds, changed = 0, 0, true
		}
	}
	return changed
}

// service is a job's attained service under the configured measure.
func (e *Engine) service(j *job) float64 {
	switch e.algo.Tiresias.Service {
	case algorithm.ServiceTotal:
		return j.GPUSeconds
	case algorithm.ServiceExecutedTimesRequested:
		return j.RunningSeconds * float64(j.Spec.Requested())
	}
	return j.SinceStartGPUSeconds
}

// nextQueueChange returns when the next demotion or promotion falls due,
// computed from the rates at which the counters grow, so no polling ticker
// is needed. It rounds up to the next millisecond so that at the returned
// time the change has certainly happened.
func (e *Engine) nextQueueChange() (time.Time, bool) {
	cfg := e.algo.Tiresias
	best := math.Inf(1)
	for _, j := range e.active {
		switch {
		case j.Phase == api.PhaseRunning && j.Queue < len(cfg.Thresholds):
			service, rate := e.service(j), float64(j.Workers*j.Spec.K())
			if cfg.Service == algorithm.ServiceExecutedTimesRequested {
				rate = float64(j.Spec.Requested() * j.Spec.K())
			}
			if rate > 0 {
				best = min(best, (cfg.Thresholds[j.Queue]-service)/rate)
			}
		case j.Phase == api.PhaseWaiting && j.Queue > 0 && cfg.PromoteKnob > 0 && j.LastRunSeconds > 0:
			best = min(best, cfg.PromoteKnob*j.LastRunSeconds-j.WaitingSinceRunSeconds)
		}
	}
	if math.IsInf(best, 1) {
		return time.Time{}, false
	}
	ms := math.Ceil(max(best, 0)*1000) + 1
	return e.now.Add(time.Duration(ms) * time.Millisecond), true
}
