package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vodascheduler/voda/pkg/apis/rest"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
)

// describeEvents is how many of a job's most recent events describe shows.
const describeEvents = 10

func newDescribeCmd() *cobra.Command {
	var cf clientFlags
	describe := groupCmd("describe (job NAME | queue NAME)", "Show a training job or a queue in detail",
		"Show a training job or a queue in detail.\n"+clientHelp, "job NAME or queue NAME", &cf)
	job := &cobra.Command{
		Use:     "job NAME",
		Aliases: []string{"jobs", "tj"},
		Short:   "Show a training job: spec, status, placement, estimates, recent events and why it waits",
		Long:    "Show a training job: spec, status, placement, estimated remaining time, recent events, and why it waits.\n" + clientHelp,
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.client()
			if err != nil {
				return err
			}
			tj, err := c.GetJob(cmd.Context(), args[0])
			if err != nil {
				return apiError(err)
			}
			events, err := c.JobEvents(cmd.Context(), args[0])
			if err != nil {
				return apiError(err)
			}
			return describeJob(cmd.OutOrStdout(), tj, events, now())
		},
		ValidArgsFunction: cf.completeJobs,
	}
	describe.AddCommand(job, newDescribeQueueCmd(&cf))
	return describe
}

// describeJob writes the human view of a job.
func describeJob(w io.Writer, tj *v1alpha1.TrainingJob, events []rest.Event, at time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 8, 1, ' ', 0)
	line := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	s, st := tj.Spec, tj.Status
	phase := st.Phase
	if phase == "" {
		phase = v1alpha1.PhaseSubmitted
	}
	line("Name", tj.Name)
	line("Namespace", tj.Namespace)
	line("Submitter", orDefault(s.Submitter, "-"))
	line("GPU type", schedulerColumn(tj))
	if len(s.GPUTypes) > 1 {
		var speeds []string
		for _, t := range s.GPUTypes {
			if q, ok := s.GPUTypeSpeeds[t]; ok {
				speeds = append(speeds, t+"="+q.String())
			}
		}
		line("Accepted types", strings.Join(s.GPUTypes, ", ")+" (in order of preference)")
		if len(speeds) > 0 {
			line("Speeds", strings.Join(speeds, ", "))
		}
	}
	if s.QueueName != "" || st.ClusterQueue != "" {
		q := orDefault(s.QueueName, v1alpha1.DefaultLocalQueue+" (the namespace's)")
		if st.ClusterQueue != "" {
			q += ", ClusterQueue " + st.ClusterQueue
		}
		line("Queue", q)
	}
	workers := fmt.Sprintf("min %d, max %d", s.MinWorkers, s.MaxWorkers)
	if s.RequestedWorkers > 0 {
		workers += fmt.Sprintf(", requested %d", s.RequestedWorkers)
	}
	line("Worker range", workers)
	line("Runtime", orDefault(s.Template.Runtime(), "-"))
	k, kErr := s.WorkerGPUs()
	if kErr != nil {
		line("GPUs per worker", "invalid: "+kErr.Error())
	} else {
		line("GPUs per worker", fmt.Sprint(k))
	}
	line("Priority", fmt.Sprint(s.Priority))
	line("Epochs", orDefault(positive(s.Epochs), "-"))
	line("Category", orDefault(s.Category, "-"))
	line("Status", string(phase))
	if st.Message != "" {
		label := "Message"
		switch phase {
		case v1alpha1.PhaseWaiting, v1alpha1.PhaseSubmitted:
			label = "Why waiting"
		}
		line(label, st.Message)
	}
	held := fmt.Sprint(st.Workers)
	if kErr == nil && k > 1 {
		held += fmt.Sprintf(" (%d GPUs)", int(st.Workers)*k)
	}
	if phase == v1alpha1.PhaseStarting || phase == v1alpha1.PhaseRunning {
		held += fmt.Sprintf(", %d running", st.RunningWorkers)
	}
	line("Workers", held)
	if len(st.Placement) > 0 {
		var parts []string
		for i, n := range st.Placement {
			parts = append(parts, fmt.Sprintf("%d→%s", i, n))
		}
		line("Placement", strings.Join(parts, " "))
	}
	line("Tiresias queue", fmt.Sprint(st.Queue))
	line("Submitted", when(st.SubmitTime, &tj.CreationTimestamp, at))
	line("First started", when(st.FirstStartTime, nil, at))
	line("Last started", when(st.LastStartTime, nil, at))
	line("Finished", when(st.FinishTime, nil, at))
	waiting, running, gpu := tj.TimesAt(at)
	line("Waiting", waiting.Round(time.Second).String())
	line("Running", running.Round(time.Second).String())
	line("GPU time", gpu.Round(time.Second).String())
	line("Rescales", fmt.Sprint(st.Rescales))
	line("Restarts", fmt.Sprint(st.Restarts))
	line("Preemptions", fmt.Sprint(st.Preemptions))
	remaining := "unknown (no runtime measurements yet)"
	if st.RemainingSeconds != nil {
		remaining = (time.Duration(*st.RemainingSeconds) * time.Second).String() + " at one GPU (estimate)"
	}
	if phase.Final() {
		remaining = "-"
	}
	line("Remaining", remaining)
	if p := st.Progress; p != nil {
		of := ""
		if s.Epochs > 0 {
			of = fmt.Sprintf(" of %d", s.Epochs)
		}
		var times []string
		for _, et := range p.EpochTimes {
			at := fmt.Sprintf("%s at %d workers", (time.Duration(et.Millis) * time.Millisecond).Round(100*time.Millisecond), et.Workers)
			switch {
			case et.Nodes == 1:
				at += " on 1 node"
			case et.Nodes > 1:
				at += fmt.Sprintf(" on %d nodes", et.Nodes)
			}
			if s.BatchSize != nil && et.Batch > 0 {
				at += fmt.Sprintf(" (batch %d)", et.Batch)
			}
			times = append(times, at)
		}
		worth := ""
		if e := p.EquivalentEpochs; e != nil && s.BatchSize != nil {
			worth = fmt.Sprintf(" (worth %.1f at the initial batch)", e.AsApproximateFloat64())
		}
		line("Progress", fmt.Sprintf("epoch %d%s%s, %d reports; epoch time %s", p.Epoch, of, worth, p.Reports, strings.Join(times, ", ")))
	} else if !phase.Final() {
		line("Progress", "no reports yet")
	}
	if b := s.BatchSize; b != nil {
		describeBatch(line, b, st)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "Events:")
	if len(events) == 0 {
		_, err := fmt.Fprintln(w, "  <none>")
		return err
	}
	if len(events) > describeEvents {
		events = events[len(events)-describeEvents:]
	}
	tw = tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "  AGE\tTYPE\tREASON\tMESSAGE")
	for _, e := range events {
		age := ago(e.LastTime, at)
		if e.Count > 1 {
			age += fmt.Sprintf(" (x%d)", e.Count)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", age, e.Type, e.Reason, e.Message)
	}
	return tw.Flush()
}

func positive(n int32) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprint(n)
}

// when writes a time and how long ago it was; fallback is used when t is
// not set.
func when(t, fallback *metav1.Time, at time.Time) string {
	if t == nil || t.IsZero() {
		t = fallback
	}
	if t == nil || t.IsZero() {
		return "-"
	}
	return fmt.Sprintf("%s (%s ago)", t.UTC().Format(time.RFC3339), ago(t.Time, at))
}

// ago is the time since t, rounded to a readable unit.
func ago(t, at time.Time) string {
	d := at.Sub(t)
	switch {
	case d < 0:
		return "0s"
	case d < time.Hour:
		return d.Round(time.Second).String()
	case d < 48*time.Hour:
		return d.Round(time.Minute).String()
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// describeBatch writes the lines of a job that lets Voda choose its batch
// size: the range, the batch in force and its efficiency, the noise scale
// it rests on.
func describeBatch(line func(k, v string), b *v1alpha1.BatchSizeSpec, st v1alpha1.TrainingJobStatus) {
	rng := fmt.Sprintf("%d to %d, chosen by Voda", b.Initial, b.Max)
	if b.PerGPUMax > 0 {
		rng += fmt.Sprintf("; at most %d per GPU and micro-step", b.PerGPUMax)
	}
	line("Batch range", rng)
	in := "-"
	if bs := st.Batch; bs != nil && bs.Global > 0 {
		in = fmt.Sprintf("%d (%d per GPU", bs.Global, bs.Local)
		if bs.Accumulation > 1 {
			in += fmt.Sprintf(" × %d accumulation steps", bs.Accumulation)
		}
		in += fmt.Sprintf("), %d%% efficient", bs.EfficiencyPercent)
		if bs.Retunes > 0 {
			in += fmt.Sprintf("; restarted %d× for a batch change", bs.Retunes)
		}
	}
	line("Batch size", in)
	noise := "unknown (no gradient statistics reported yet): the initial batch"
	if p := st.Progress; p != nil && p.NoiseScale != nil {
		noise = fmt.Sprintf("%.0f samples", p.NoiseScale.AsApproximateFloat64())
	}
	line("Noise scale", noise)
}
