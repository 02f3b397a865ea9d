package simulator

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"text/tabwriter"
)

// Summary is one run's metrics, as printed by `voda simulate --output json`.
type Summary struct {
	Policy         string  `json:"policy"`
	Workload       string  `json:"workload"`
	Jobs           int     `json:"jobs"`
	AvgJCT         float64 `json:"avg_jct_s"`
	P50JCT         float64 `json:"p50_jct_s"`
	P99JCT         float64 `json:"p99_jct_s"`
	Makespan       float64 `json:"makespan_s"`
	AvgQueue       float64 `json:"avg_queue_s"`
	GPUUtil        float64 `json:"gpu_util"`
	EffUtil        float64 `json:"eff_util"`
	RescalesPerJob float64 `json:"rescales_per_job"`
	RestartsPerJob float64 `json:"restarts_per_job"`
	LowerBound     float64 `json:"lower_bound_s"`
	JCTOverBound   float64 `json:"jct_over_bound"`
	SimWall        float64 `json:"sim_wall_s"`
	// GPUsPerWorker is the jobs' worker size: "1", "4", or a range such
	// as "1-8" when they differ.
	GPUsPerWorker string `json:"gpus_per_worker"`
	// WorstRho is the largest finish-time fairness ρ of a job
	// (JobResult.Rho); ShareRhoAbove105 the share of jobs with ρ > 1.05.
	WorstRho         float64 `json:"worst_rho"`
	ShareRhoAbove105 float64 `json:"share_rho_above_1_05"`
	// Queues is, with queues, how each queue's jobs fared.
	Queues []QueueSummary `json:"queues,omitempty"`
	// Reclaims counts, with queues, the times a queue gave GPUs back;
	// ReclaimsByShrinkShare the share of those done by shrinking jobs
	// alone (absent when there were none); StoppedByReclaim the jobs
	// stopped.
	Reclaims              int      `json:"reclaims,omitempty"`
	ReclaimsByShrinkShare *float64 `json:"reclaims_by_shrink_share,omitempty"`
	StoppedByReclaim      int      `json:"stopped_by_reclaim,omitempty"`
	// AdaptiveJobs counts the jobs that adapted their batch size; with
	// some, BatchChangesPerJob and RetunesPerJob are their changes of
	// batch size and restarts for a batch change alone, per adaptive job,
	// and there is no lower bound (lower_bound_s is 0).
	AdaptiveJobs       int     `json:"adaptive_jobs,omitempty"`
	BatchChangesPerJob float64 `json:"batch_changes_per_job,omitempty"`
	RetunesPerJob      float64 `json:"retunes_per_job,omitempty"`
}

// QueueSummary is one queue's part of a run's metrics.
type QueueSummary struct {
	Name    string  `json:"name"`
	Jobs    int     `json:"jobs"`
	MeanJCT float64 `json:"mean_jct_s"`
	// AloneJCT and SharingIncentive are absent when some job of the
	// queue cannot run on its nominal quota alone.
	AloneJCT         *float64 `json:"alone_jct_s"`
	SharingIncentive *float64 `json:"sharing_incentive"`
	BelowNominal     float64  `json:"below_nominal_with_demand_s"`
}

// Mean averages one policy's summaries over workloads.
type Mean struct {
	Policy     string  `json:"policy"`
	Workloads  int     `json:"workloads"`
	AvgJCT     float64 `json:"avg_jct_s"`
	P99JCT     float64 `json:"p99_jct_s"`
	Makespan   float64 `json:"makespan_s"`
	LowerBound float64 `json:"lower_bound_s"`
}

// Report is the whole output of a simulation command.
type Report struct {
	Results []Summary `json:"results"`
	Mean    []Mean    `json:"mean"`
	// Estimates is the estimator's accuracy per run with estimated
	// information; the table shows it, the JSON contract does not.
	Estimates []EstimateAccuracy `json:"-"`
}

// EstimateAccuracy is, for one run, the relative error of the estimated
// remaining time at one GPU after 1, 3 and 10 reports: median and p90 over
// the jobs that made that many.
type EstimateAccuracy struct {
	Policy, Workload string
	Median, P90      [3]float64
	Jobs             [3]int
}

// Summarise computes a run's metrics.
func Summarise(r Result) Summary {
	s := Summary{Policy: r.Policy, Workload: r.Workload, Jobs: len(r.Jobs), Makespan: r.Makespan,
		LowerBound: r.LowerBound, SimWall: r.WallSeconds}
	if len(r.Jobs) == 0 {
		return s
	}
	jcts := make([]float64, 0, len(r.Jobs))
	var gpuSec float64
	lo, hi := math.MaxInt, 0
	for _, j := range r.Jobs {
		lo, hi = min(lo, max(j.GPUsPerWorker, 1)), max(hi, j.GPUsPerWorker, 1)
		jcts = append(jcts, j.JCT)
		s.AvgJCT += j.JCT
		s.AvgQueue += j.Queue
		gpuSec += j.GPUSeconds
		s.RescalesPerJob += float64(j.Rescales)
		s.RestartsPerJob += float64(j.Restarts)
		if j.Adaptive {
			s.AdaptiveJobs++
			s.BatchChangesPerJob += float64(j.BatchChanges)
			s.RetunesPerJob += float64(j.Retunes)
		}
	}
	if s.AdaptiveJobs > 0 {
		s.BatchChangesPerJob = round(s.BatchChangesPerJob/float64(s.AdaptiveJobs), 1e-3)
		s.RetunesPerJob = round(s.RetunesPerJob/float64(s.AdaptiveJobs), 1e-3)
	}
	s.GPUsPerWorker = strconv.Itoa(lo)
	if hi > lo {
		s.GPUsPerWorker += "-" + strconv.Itoa(hi)
	}
	above := 0
	for _, j := range r.Jobs {
		s.WorstRho = max(s.WorstRho, j.Rho)
		if j.Rho > 1.05 {
			above++
		}
	}
	n := float64(len(r.Jobs))
	s.ShareRhoAbove105 = float64(above) / n
	for _, q := range r.Queues {
		qs := QueueSummary{Name: q.Name, Jobs: q.Jobs, MeanJCT: round(q.MeanJCT, 0.1), BelowNominal: round(q.BelowNominal, 0.1)}
		if !math.IsNaN(q.AloneJCT) && q.AloneJCT > 0 {
			alone, si := round(q.AloneJCT, 0.1), round(q.SharingIncentive(), 1e-3)
			qs.AloneJCT, qs.SharingIncentive = &alone, &si
		}
		s.Queues = append(s.Queues, qs)
	}
	if r.Quota.Reclaims > 0 {
		share := round(float64(r.Quota.ByShrinking)/float64(r.Quota.Reclaims), 1e-3)
		s.Reclaims, s.ReclaimsByShrinkShare, s.StoppedByReclaim = r.Quota.Reclaims, &share, r.Quota.Stopped
	}
	s.AvgJCT /= n
	s.AvgQueue /= n
	s.RescalesPerJob /= n
	s.RestartsPerJob /= n
	slices.Sort(jcts)
	s.P50JCT, s.P99JCT = Percentile(jcts, 50), Percentile(jcts, 99)
	if capacity := float64(r.GPUs) * r.Makespan; capacity > 0 {
		s.GPUUtil = gpuSec / capacity
		s.EffUtil = r.UsefulGPUSeconds / capacity
	}
	if s.LowerBound > 0 {
		s.JCTOverBound = s.AvgJCT / s.LowerBound
	}
	return s.rounded()
}

// Percentile is the nearest-rank percentile of sorted values.
func Percentile(sorted []float64, p float64) float64 {
	k := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[max(0, min(k, len(sorted)-1))]
}

func round(x, unit float64) float64 { return math.Round(x/unit) * unit }

// rounded trims noise so printed numbers are stable and readable.
func (s Summary) rounded() Summary {
	s.AvgJCT, s.P50JCT, s.P99JCT = round(s.AvgJCT, 0.1), round(s.P50JCT, 0.1), round(s.P99JCT, 0.1)
	s.Makespan, s.AvgQueue, s.LowerBound = round(s.Makespan, 0.1), round(s.AvgQueue, 0.1), round(s.LowerBound, 0.1)
	s.GPUUtil, s.EffUtil, s.JCTOverBound = round(s.GPUUtil, 1e-4), round(s.EffUtil, 1e-4), round(s.JCTOverBound, 1e-3)
	s.RescalesPerJob, s.RestartsPerJob = round(s.RescalesPerJob, 1e-3), round(s.RestartsPerJob, 1e-3)
	s.SimWall = round(s.SimWall, 1e-3)
	s.WorstRho, s.ShareRhoAbove105 = round(s.WorstRho, 1e-3), round(s.ShareRhoAbove105, 1e-4)
	return s
}

// NewReport summarises results and averages them per policy, keeping the
// policies in the order they first appear.
func NewReport(results []Result) Report {
	var rep Report
	idx := map[string]int{}
	for _, r := range results {
		s := Summarise(r)
		rep.Results = append(rep.Results, s)
		i, ok := idx[s.Policy]
		if !ok {
			i = len(rep.Mean)
			idx[s.Policy] = i
			rep.Mean = append(rep.Mean, Mean{Policy: s.Policy})
		}
		m := &rep.Mean[i]
		m.Workloads++
		m.AvgJCT += s.AvgJCT
		m.P99JCT += s.P99JCT
		m.Makespan += s.Makespan
		m.LowerBound += s.LowerBound
	}
	for _, r := range results {
		if r.EstimateErrors == nil {
			continue
		}
		a := EstimateAccuracy{Policy: r.Policy, Workload: r.Workload}
		for i, k := range EstimateCheckpoints {
			errs := slices.Sorted(slices.Values(r.EstimateErrors[k]))
			a.Jobs[i] = len(errs)
			if len(errs) > 0 {
				a.Median[i], a.P90[i] = Percentile(errs, 50), Percentile(errs, 90)
			}
		}
		if !slices.ContainsFunc(a.Jobs[:], func(n int) bool { return n > 0 }) {
			continue // no job's one-GPU time to compare (jobs that adapt their batch count their work otherwise)
		}
		rep.Estimates = append(rep.Estimates, a)
	}
	for i := range rep.Mean {
		m := &rep.Mean[i]
		n := float64(m.Workloads)
		m.AvgJCT, m.P99JCT = round(m.AvgJCT/n, 0.1), round(m.P99JCT/n, 0.1)
		m.Makespan, m.LowerBound = round(m.Makespan/n, 0.1), round(m.LowerBound/n, 0.1)
	}
	return rep
}

// WriteJSON prints the report as exactly one JSON object.
func (rep Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// WriteTable prints the report for people.
func (rep Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	// The worker size is shown when some job's workers hold more than one
	// GPU, so the table states what it measured.
	perWorker := slices.ContainsFunc(rep.Results, func(s Summary) bool { return s.GPUsPerWorker != "1" && s.GPUsPerWorker != "" })
	// With jobs that adapt their batch size, their batch changes are
	// shown, and the bound, which those jobs can beat, is not.
	adaptive := slices.ContainsFunc(rep.Results, func(s Summary) bool { return s.AdaptiveJobs > 0 })
	head := "POLICY\tWORKLOAD\tJOBS\t"
	if perWorker {
		head += "GPUS/WORKER\t"
	}
	head += "AVG JCT\tP50 JCT\tP99 JCT\tMAKESPAN\tQUEUE\tGPU UTIL\tEFF UTIL\tRESCALES/JOB\tRESTARTS/JOB\t"
	if adaptive {
		head += "ADAPTIVE\tBATCH CHANGES/JOB\tOF THEM RESTARTS\t"
	} else {
		head += "BOUND\tJCT/BOUND\t"
	}
	fmt.Fprintln(tw, head)
	for _, s := range rep.Results {
		fmt.Fprintf(tw, "%s\t%s\t%d\t", s.Policy, s.Workload, s.Jobs)
		if perWorker {
			fmt.Fprintf(tw, "%s\t", s.GPUsPerWorker)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.0f%%\t%.0f%%\t%.2f\t%.2f\t",
			dur(s.AvgJCT), dur(s.P50JCT), dur(s.P99JCT), dur(s.Makespan),
			dur(s.AvgQueue), 100*s.GPUUtil, 100*s.EffUtil, s.RescalesPerJob, s.RestartsPerJob)
		if adaptive {
			fmt.Fprintf(tw, "%d\t%.2f\t%.2f\t\n", s.AdaptiveJobs, s.BatchChangesPerJob, s.RetunesPerJob)
		} else {
			fmt.Fprintf(tw, "%s\t%.2f\t\n", dur(s.LowerBound), s.JCTOverBound)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := rep.writeQueues(w); err != nil {
		return err
	}
	if len(rep.Estimates) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ESTIMATOR ERROR (remaining time at one GPU)	WORKLOAD	AFTER 1 REPORT (median, p90)	AFTER 3	AFTER 10	")
		for _, a := range rep.Estimates {
			fmt.Fprintf(tw, "%s	%s", a.Policy, a.Workload)
			for i := range a.Jobs {
				fmt.Fprintf(tw, "	%.0f%%, %.0f%% (%d jobs)", 100*a.Median[i], 100*a.P90[i], a.Jobs[i])
			}
			fmt.Fprintln(tw, "	")
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(rep.Results) == len(rep.Mean) {
		return nil
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if adaptive {
		fmt.Fprintln(tw, "MEAN OVER WORKLOADS\tWORKLOADS\tAVG JCT\tP99 JCT\tMAKESPAN\t")
	} else {
		fmt.Fprintln(tw, "MEAN OVER WORKLOADS\tWORKLOADS\tAVG JCT\tP99 JCT\tMAKESPAN\tBOUND\t")
	}
	for _, m := range rep.Mean {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t", m.Policy, m.Workloads, dur(m.AvgJCT), dur(m.P99JCT), dur(m.Makespan))
		if !adaptive {
			fmt.Fprintf(tw, "%s\t", dur(m.LowerBound))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// dur formats seconds for people, with their unit: "4038s" under ten
// hours, "40.2h" from there.
func dur(sec float64) string {
	if sec >= 10*3600 {
		return strconv.FormatFloat(sec/3600, 'f', 1, 64) + "h"
	}
	return strconv.FormatFloat(sec, 'f', 0, 64) + "s"
}

// WriteCSV prints one row per run with the JSON field names as header.
func (rep Report) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"policy", "workload", "jobs", "avg_jct_s", "p50_jct_s", "p99_jct_s", "makespan_s", "avg_queue_s",
		"gpu_util", "eff_util", "rescales_per_job", "restarts_per_job", "lower_bound_s", "jct_over_bound", "gpus_per_worker", "sim_wall_s"})
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	for _, s := range rep.Results {
		cw.Write([]string{s.Policy, s.Workload, strconv.Itoa(s.Jobs), f(s.AvgJCT), f(s.P50JCT), f(s.P99JCT), f(s.Makespan),
			f(s.AvgQueue), f(s.GPUUtil), f(s.EffUtil), f(s.RescalesPerJob), f(s.RestartsPerJob), f(s.LowerBound),
			f(s.JCTOverBound), s.GPUsPerWorker, f(s.SimWall)})
	}
	cw.Flush()
	return cw.Error()
}

// WritePerJob prints one row per job of every run.
func WritePerJob(w io.Writer, results []Result) error {
	cw := csv.NewWriter(w)
	// With jobs that adapt their batch size, four more columns say how.
	adaptive := slices.ContainsFunc(results, func(r Result) bool { return r.Adaptive > 0 })
	head := []string{"policy", "workload", "job", "model", "gpus_requested", "batch", "min_workers", "max_workers",
		"submit_s", "start_s", "finish_s", "jct_s", "queue_s", "gpu_seconds", "rescales", "restarts", "gpus_per_worker"}
	if adaptive {
		head = append(head, "adaptive", "final_batch", "batch_changes", "retunes")
	}
	cw.Write(head)
	f := func(x float64) string { return strconv.FormatFloat(round(x, 0.001), 'f', -1, 64) }
	for _, r := range results {
		for _, j := range r.Jobs {
			row := []string{r.Policy, r.Workload, j.Name, j.Model, strconv.Itoa(j.GPUs), strconv.Itoa(j.Batch),
				strconv.Itoa(j.Min), strconv.Itoa(j.Max), f(j.Submit), f(j.Start), f(j.Finish), f(j.JCT), f(j.Queue),
				f(j.GPUSeconds), strconv.Itoa(j.Rescales), strconv.Itoa(j.Restarts), strconv.Itoa(max(j.GPUsPerWorker, 1))}
			if adaptive {
				row = append(row, strconv.FormatBool(j.Adaptive), strconv.Itoa(j.FinalBatch), strconv.Itoa(j.BatchChanges), strconv.Itoa(j.Retunes))
			}
			cw.Write(row)
		}
	}
	cw.Flush()
	return cw.Error()
}

// writeQueues prints, for runs with queues, each queue's figures.
func (rep Report) writeQueues(w io.Writer) error {
	if !slices.ContainsFunc(rep.Results, func(s Summary) bool { return len(s.Queues) > 0 }) {
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POLICY\tWORKLOAD\tQUEUE\tJOBS\tAVG JCT\tALONE\tSHARING INCENTIVE\tBELOW QUOTA\tRECLAIMS (BY SHRINKING)\tWORST RHO\tRHO>1.05\t")
	for _, s := range rep.Results {
		for i, q := range s.Queues {
			alone, si := "-", "-"
			if q.AloneJCT != nil {
				alone, si = dur(*q.AloneJCT), strconv.FormatFloat(*q.SharingIncentive, 'f', 2, 64)
			}
			reclaims, rho, share := "", "", ""
			if i == 0 {
				reclaims = "0"
				if s.ReclaimsByShrinkShare != nil {
					reclaims = fmt.Sprintf("%d (%.0f%%)", s.Reclaims, 100**s.ReclaimsByShrinkShare)
				}
				rho, share = strconv.FormatFloat(s.WorstRho, 'f', 2, 64), fmt.Sprintf("%.1f%%", 100*s.ShareRhoAbove105)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", s.Policy, s.Workload, q.Name, q.Jobs,
				dur(q.MeanJCT), alone, si, dur(q.BelowNominal), reclaims, rho, share)
		}
	}
	return tw.Flush()
}
