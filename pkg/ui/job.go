package ui

import (
	"fmt"
	"slices"
	"time"

	"github.com/vodascheduler/voda/pkg/apis/rest"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
)

// JobEvent is an Event of a job read for its timeline: Workers is the
// job's size after it when Sized.
type JobEvent struct {
	rest.Event
	Workers int
	Sized   bool
}

// markKinds maps the controller's Event reasons to timeline marks.
var markKinds = map[string]string{
	"Submitted":   MarkSubmit,
	"Started":     MarkStart,
	"Resumed":     MarkRestart,
	"Scaled":      MarkScale,
	"Preempted":   MarkPreempt,
	"GangTimeout": MarkPreempt,
	"Migrated":    MarkMigrate,
	"Completed":   MarkEnd,
	"Failed":      MarkFail,
}

// JobTimeline draws a job's workers over time from its Events, which say
// every size it had; where they are gone (the API server keeps Events for
// an hour by default) it falls back on the times its status keeps.
func JobTimeline(tj *v1alpha1.TrainingJob, events []JobEvent, now time.Time) Timeline {
	start := submitted(tj)
	end := now
	if tj.Status.FinishTime != nil {
		end = tj.Status.FinishTime.Time
	}
	evs := slices.Clone(events)
	slices.SortStableFunc(evs, func(a, b JobEvent) int { return eventTime(a).Compare(eventTime(b)) })
	row := Row{Label: tj.Name, Steps: []Step{{At: start, Value: 0}}}
	sized := false
	for _, e := range evs {
		at := eventTime(e)
		if at.Before(start) {
			start = at
			row.Steps[0].At = at
		}
		if kind, ok := markKinds[e.Reason]; ok {
			row.Marks = append(row.Marks, Mark{At: at, Kind: kind, Title: e.Message})
		}
		if e.Sized {
			sized = true
			row.Steps = append(row.Steps, Step{At: at, Value: e.Workers})
		}
	}
	if !sized {
		// No Event left that sized the job: what the status remembers.
		st := &tj.Status
		if st.FirstStartTime != nil {
			row.Marks = append(row.Marks, Mark{At: st.FirstStartTime.Time, Kind: MarkStart, Title: "first started"})
		}
		if st.LastStartTime != nil && st.Workers > 0 {
			row.Steps = append(row.Steps, Step{At: st.LastStartTime.Time, Value: int(st.Workers)})
			if st.FirstStartTime == nil || !st.LastStartTime.Equal(st.FirstStartTime) {
				row.Marks = append(row.Marks, Mark{At: st.LastStartTime.Time, Kind: MarkRestart, Title: fmt.Sprintf("last started, with %d workers", st.Workers)})
			}
		}
		if st.FinishTime != nil {
			row.Steps = append(row.Steps, Step{At: st.FinishTime.Time, Value: 0})
			kind := MarkEnd
			if st.Phase == v1alpha1.PhaseFailed {
				kind = MarkFail
			}
			row.Marks = append(row.Marks, Mark{At: st.FinishTime.Time, Kind: kind, Title: string(st.Phase)})
		}
	}
	if end.Before(start.Add(time.Second)) {
		end = start.Add(time.Second)
	}
	return Timeline{Start: start, End: end, Rows: []Row{row}, Max: int(tj.Spec.MaxWorkers), RowHeight: 90, Clock: true}
}

func eventTime(e JobEvent) time.Time {
	if e.Count > 1 {
		return e.LastTime
	}
	return e.FirstTime
}

// JobView is the job page.
type JobView struct {
	Job      *v1alpha1.TrainingJob
	Phase    v1alpha1.Phase
	Events   []JobEvent
	Timeline Timeline
	// Queue is the job's queue entry while it waits (Position > 0).
	Queue QueueEntry
	// Remaining is the estimated remaining time at its current size, in
	// words; empty when unknown.
	Remaining string
	// Waited and Ran are the job's time without and with GPUs, at the
	// moment the page was built.
	Waited, Ran time.Duration
	// Batch is, for a job that lets Voda choose its batch size, the batch
	// in force, its efficiency and the range; empty for other jobs.
	Batch string
	// Runtime is "MPIJob" or "PyTorchJob".
	Runtime string
	// Spec is the job's spec as YAML.
	Spec string
}

// Job builds the job page.
func Job(s State, tj *v1alpha1.TrainingJob, events []JobEvent, spec string) JobView {
	v := JobView{Job: tj, Phase: phaseOf(tj), Events: events, Timeline: JobTimeline(tj, events, s.Now), Spec: spec, Runtime: "MPIJob"}
	if tj.Spec.Template.PyTorchJob != nil {
		v.Runtime = "PyTorchJob"
	}
	v.Waited, v.Ran, _ = tj.TimesAt(s.Now)
	if r := tj.Status.RemainingSeconds; r != nil && !v.Phase.Final() {
		// At one worker; at its size, as the jobs' curves go, at best.
		rem := time.Duration(*r) * time.Second
		if n := tj.Status.Workers; n > 1 && (v.Phase == v1alpha1.PhaseRunning || v.Phase == v1alpha1.PhaseStarting) {
			v.Remaining = fmt.Sprintf("%s at one worker (%s at best on %d)", Duration(rem), Duration(rem/time.Duration(n)), n)
		} else {
			v.Remaining = Duration(rem) + " at one worker"
		}
	}
	v.Batch = batchWords(tj)
	if v.Phase == v1alpha1.PhaseWaiting || v.Phase == v1alpha1.PhaseSubmitted {
		q := Queue(State{Now: s.Now, Jobs: s.Jobs, Schedulers: s.Schedulers, Viewer: Viewer{Admin: true}}, QueueFilter{GPUType: typeOf(tj)})
		for _, e := range q.Entries {
			if e.Job.Namespace == tj.Namespace && e.Job.Name == tj.Name {
				v.Queue = e
			}
		}
	}
	return v
}

// batchWords says a job's batch size: "192 (64 per GPU), 87% efficient;
// chosen from 64–1024 by a noise scale of 1180 samples"; empty for a job
// with a batch of its own.
func batchWords(tj *v1alpha1.TrainingJob) string {
	r := tj.Spec.BatchSize
	if r == nil {
		return ""
	}
	in := "none while it holds no GPUs"
	if b := tj.Status.Batch; b != nil && b.Global > 0 {
		in = fmt.Sprintf("%d (%d per GPU", b.Global, b.Local)
		if b.Accumulation > 1 {
			in += fmt.Sprintf(" × %d accumulation steps", b.Accumulation)
		}
		in += fmt.Sprintf("), %d%% efficient", b.EfficiencyPercent)
	}
	why := "no gradient statistics yet, so the initial batch"
	if p := tj.Status.Progress; p != nil && p.NoiseScale != nil {
		why = fmt.Sprintf("a noise scale of %.0f samples", p.NoiseScale.AsApproximateFloat64())
	}
	return fmt.Sprintf("%s; chosen from %d–%d by %s", in, r.Initial, r.Max, why)
}
