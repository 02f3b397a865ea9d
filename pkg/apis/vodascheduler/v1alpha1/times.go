package v1alpha1

import "time"

// TimesAt returns the job's waiting, running and GPU time at the instant
// at: its status counters, brought forward from AccountedTime (when they
// were accounted; if they never were, from its submission, else its
// creation) at the rates its
// phase and workers give them. Every view (the CLI, the dashboard) reads
// the counters through it, so all show the same live value between two
// status writes.
func (tj *TrainingJob) TimesAt(at time.Time) (waiting, running, gpu time.Duration) {
	st := tj.Status
	waiting = time.Duration(st.WaitingMillis) * time.Millisecond
	running = time.Duration(st.RunningMillis) * time.Millisecond
	gpu = time.Duration(st.GPUMillis) * time.Millisecond
	since := tj.CreationTimestamp.Time
	switch {
	case st.AccountedTime != nil:
		since = st.AccountedTime.Time
	case st.SubmitTime != nil:
		since = st.SubmitTime.Time
	}
	if since.IsZero() || !at.After(since) {
		return waiting, running, gpu
	}
	switch d := at.Sub(since); st.Phase {
	case PhaseRunning, PhaseStarting:
		running += d
		gpu += time.Duration(st.Workers) * time.Duration(max(st.GPUsPerWorker, 1)) * d
	case PhaseWaiting, PhaseSubmitted, "":
		waiting += d
	}
	return waiting, running, gpu
}
