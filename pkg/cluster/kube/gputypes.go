package kube

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/estimator"
	"github.com/vodascheduler/voda/pkg/scheduler"
	"github.com/vodascheduler/voda/pkg/typechoice"
)

// Jobs that accept several GPU types (spec.gpuTypes) get one type at a
// time, chosen by pkg/typechoice above the per-type engines: a new job when
// the reconciler first sees it, and waiting jobs again every
// TypeChoiceEvery, when the rule may move one to another type. A running
// job keeps its type until it is preempted or ends, so that a job never
// runs on two types at once and a move never throws away work in
// progress. The type is kept in status.gpuType, so restarts and new leaders
// keep it.

// DefaultTypeChoiceEvery is how often waiting jobs of several GPU types
// are looked at again.
const DefaultTypeChoiceEvery = 30 * time.Second

// candidates are the types of a job this controller schedules, in the
// job's order of preference.
func (c *Controller) candidates(tj *v1alpha1.TrainingJob) []string {
	var out []string
	for _, t := range tj.Spec.AcceptedGPUTypes() {
		if c.handles(api.GPUType(t)) {
			out = append(out, t)
		}
	}
	if len(out) < 2 {
		return out
	}
	return c.withinQueue(tj, out)
}

// withinQueue keeps, on a cluster with queues, the types where the job's
// queue may ever hold its minimum (its nominal quota there plus what it may
// borrow); all of them when none is, or when its queue is not known (the
// job then waits and says why).
func (c *Controller) withinQueue(tj *v1alpha1.TrainingJob, types []string) []string {
	v := c.currentQueues()
	if !v.hasQueues() {
		return types
	}
	q, err := c.resolveQueue(context.Background(), tj, v)
	cq, ok := v.cqs[q.clusterQueue]
	if err != nil || q.problem != "" || !ok {
		return types
	}
	gpus := map[string]int{}
	c.mu.Lock()
	for _, n := range c.nodes {
		if n.usable() {
			gpus[string(n.gpuType)] += n.gpus
		}
	}
	c.mu.Unlock()
	k, _ := tj.Spec.WorkerAccelerators(c.resourceOf(tj))
	return typesWithin(cq, v.cqs, types, gpus, int(tj.Spec.MinWorkers)*max(k, 1))
}

// typesWithin keeps the types where cq may ever hold need GPUs, or all of
// them when it may on none.
func typesWithin(cq *v1alpha1.ClusterQueue, all map[string]*v1alpha1.ClusterQueue, types []string, gpus map[string]int, need int) []string {
	var out []string
	for _, t := range types {
		if cq.Reach(all, t, gpus[t]) >= need {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return types
	}
	return out
}

// sameResource refuses a job whose types schedule different node resources
// (nvidia.com/gpu and amd.com/gpu, say): its template asks for one.
func (c *Controller) sameResource(tj *v1alpha1.TrainingJob) error {
	acc := tj.Spec.AcceptedGPUTypes()
	for _, t := range acc[1:] {
		if a, b := c.opts.Accelerators.Of(acc[0]), c.opts.Accelerators.Of(t); a != b {
			return fmt.Errorf("spec.gpuTypes: %s schedules %s but %s schedules %s; a job's types must schedule one resource, which its template asks for", acc[0], a, t, b)
		}
	}
	return nil
}

// typeState is what the rule needs of the types a job may run on.
type typeState struct {
	types  []typechoice.Type
	jobs   []typechoice.Job
	order  string
	byName map[string]*v1alpha1.TrainingJob
}

// readTypes gathers the GPUs of the given types and every unfinished job
// on them, for the rule.
func (c *Controller) readTypes(ctx context.Context, names []string) (*typeState, error) {
	st := &typeState{order: typechoice.ByArrival, byName: map[string]*v1alpha1.TrainingJob{}}
	for _, t := range names {
		e := c.engineFor(api.GPUType(t))
		var gpus int
		var policy string
		if err := e.loop.Do(ctx, func(en *scheduler.Engine) error {
			gpus, policy = en.GPUs(), en.Policy()
			return nil
		}); err != nil {
			return nil, err
		}
		st.types = append(st.types, typechoice.Type{Name: t, GPUs: gpus, Elastic: !algorithm.Rigid(policy)})
		switch o := typechoice.OrderOf(policy); {
		case o == typechoice.ByWork:
			st.order = o // the order of most policies
		case o == typechoice.ByService && st.order == typechoice.ByArrival:
			st.order = o
		}
	}
	var l v1alpha1.TrainingJobList
	if err := c.client.List(ctx, &l); err != nil {
		return nil, err
	}
	for i := range l.Items {
		tj := &l.Items[i]
		cur := tj.CurrentGPUType()
		if tj.Status.Phase.Final() || cur == "" || !slices.Contains(names, cur) {
			continue
		}
		st.byName[string(jobID(client.ObjectKeyFromObject(tj)))] = tj
		st.jobs = append(st.jobs, c.choiceJob(tj, cur))
	}
	return st, nil
}

// choiceJob is a job as the rule sees it, on type cur ("" for a new job).
func (c *Controller) choiceJob(tj *v1alpha1.TrainingJob, cur string) typechoice.Job {
	id := jobID(client.ObjectKeyFromObject(tj))
	j := typechoice.Job{ID: string(id), Current: cur, Ran: tj.Status.FirstStartTime != nil,
		Submitted: tj.CreationTimestamp.Time, Speed: map[string]float64{}}
	switch {
	case tj.Status.SubmitTime != nil:
		j.Submitted = tj.Status.SubmitTime.Time
	case cur == "":
		// A new job is submitted to its type's engine when it is admitted,
		// after every job already there (status times are in seconds).
		j.Submitted = time.Now()
	}
	if tj.Status.GPUTypeTime != nil {
		j.Since = tj.Status.GPUTypeTime.Time
	}
	j.Moves = int(tj.Status.GPUTypeMoves)
	types := tj.Spec.AcceptedGPUTypes()
	if len(types) > 1 {
		types = c.candidates(tj)
	}
	j.Types = types
	j.Speed = Speeds(tj)
	j.Runs = c.runs(tj, types)
	k := 1
	if cur != "" {
		k, _ = tj.Spec.WorkerAccelerators(c.opts.Accelerators.Of(cur))
	}
	// Remaining work: at one worker on its type, times its GPUs and its
	// speed there, in GPU-seconds of a type of speed 1; unknown is 0 (the
	// rule takes the median).
	if r := tj.Status.RemainingSeconds; r != nil && cur != "" {
		j.Work = float64(*r) * float64(max(k, 1)) * tj.Spec.Speed(cur)
	} else if cur == "" {
		if rem, _ := c.prior(tj); rem > 0 {
			j.Work = rem * float64(max(k, 1))
		}
	}
	return j
}

// runs is how the job runs on each of its types, for the rule: on its
// requested workers' GPUs there, at the speedup the estimator expects of
// it (its own reports, else its category's, else the default curve), and
// on an elastic type up to its most workers. A worker of k GPUs counts as
// k GPUs' speed, as the remaining work does (choiceJob).
func (c *Controller) runs(tj *v1alpha1.TrainingJob, types []string) map[string]typechoice.Run {
	_, fit := c.prior(tj)
	out := make(map[string]typechoice.Run, len(types))
	for _, t := range types {
		k, err := tj.Spec.WorkerAccelerators(c.opts.Accelerators.Of(t))
		if err != nil || k < 1 {
			k = 1
		}
		s := api.JobSpec{MinWorkers: int(tj.Spec.MinWorkers), MaxWorkers: int(tj.Spec.MaxWorkers), RequestedWorkers: int(tj.Spec.RequestedWorkers)}
		n, most, least := max(s.Requested(), 1), max(s.MaxWorkers, 1), max(s.MinWorkers, 1)
		out[t] = typechoice.Run{GPUs: n * k, Speedup: float64(k) * max(fit.Speedup(n), 1),
			Most: most * k, MostSpeedup: float64(k) * max(fit.Speedup(most), 1),
			Least: least * k, LeastSpeedup: float64(k) * max(fit.Speedup(least), 1)}
	}
	return out
}

// Speeds are a job's relative speeds per GPU on each of its types: measured
// where it has reported epochs on two or more types (the ratio of its
// one-worker epoch times, scaled to the user's speed of one of them, else
// 1), else the user's spec.gpuTypeSpeeds, else 1.
func Speeds(tj *v1alpha1.TrainingJob) map[string]float64 {
	out := map[string]float64{}
	for _, t := range tj.Spec.AcceptedGPUTypes() {
		out[t] = tj.Spec.Speed(t)
	}
	if tj.Status.Progress == nil {
		return out
	}
	byType := map[string][]estimator.Observation{}
	for _, et := range tj.Status.Progress.EpochTimes {
		if _, ok := out[et.GPUType]; ok {
			byType[et.GPUType] = append(byType[et.GPUType], estimator.Observation{Workers: int(et.Workers), Seconds: float64(et.Millis) / 1000, Weight: float64(et.Epochs)})
		}
	}
	oneWorker := map[string]float64{}
	for t, obs := range byType {
		est := estimator.New()
		est.Replace("job", "job", obs)
		if f := est.Estimate("job", "job"); f.Known() {
			oneWorker[t] = f.OneWorker
		}
	}
	if len(oneWorker) < 2 {
		return out
	}
	// The reference: the first measured type the user gave a speed for,
	// else the first measured.
	ref := ""
	for _, t := range tj.Spec.AcceptedGPUTypes() {
		if _, ok := oneWorker[t]; !ok {
			continue
		}
		if ref == "" {
			ref = t
		}
		if _, hinted := tj.Spec.GPUTypeSpeeds[t]; hinted {
			ref = t
			break
		}
	}
	for t, s := range oneWorker {
		out[t] = out[ref] * oneWorker[ref] / s
	}
	return out
}

// chooseType gives a new job of several types its first type.
func (c *Controller) chooseType(ctx context.Context, tj *v1alpha1.TrainingJob) error {
	cands := c.candidates(tj)
	if len(cands) == 0 {
		return nil // another controller's job
	}
	rt, err := runtimeOf(tj)
	if err != nil {
		return err
	}
	if err := c.sameResource(tj); err != nil {
		return c.refuse(ctx, tj, err)
	}
	st, err := c.readTypes(ctx, cands)
	if err != nil {
		return err
	}
	// Every other job is held on its type: only this job's type is chosen
	// here (moving waiting jobs is the periodic pass's), so it sees the
	// types as they are, and the rule schedules each type's list once.
	for i := range st.jobs {
		st.jobs[i].Types = []string{st.jobs[i].Current}
	}
	me := c.choiceJob(tj, "")
	d := typechoice.Assign(st.types, append(st.jobs, me), time.Now(), st.order, c.typeChoice())[me.ID]
	probe := tj.DeepCopy()
	probe.Status.GPUType = d.Type
	if err := c.admissible(probe, rt); err != nil {
		return c.refuse(ctx, tj, err)
	}
	if err := c.setType(ctx, tj, d.Type, "chose "+d.Reason, false); err != nil {
		return err
	}
	c.event(jobID(client.ObjectKeyFromObject(tj)), corev1.EventTypeNormal, "GPUTypeChosen", fmt.Sprintf("GPU type %s chosen among %v: %s", d.Type, cands, d.Reason))
	return nil
}

func (c *Controller) typeChoice() typechoice.Config {
	cfg := typechoice.DefaultConfig()
	if c.opts.TypeChoiceDwell > 0 {
		cfg.MinDwell = c.opts.TypeChoiceDwell
	}
	return cfg
}

// setType writes a job's type into its status, counting a move.
func (c *Controller) setType(ctx context.Context, tj *v1alpha1.TrainingJob, t, why string, moved bool) error {
	patch := client.MergeFrom(tj.DeepCopy())
	tj.Status.GPUType = t
	if moved {
		tj.Status.GPUTypeMoves++
	}
	now := metav1.Now()
	tj.Status.GPUTypeTime = &now
	if tj.Status.Phase == "" || tj.Status.Phase == v1alpha1.PhaseSubmitted || tj.Status.Phase == v1alpha1.PhaseWaiting {
		tj.Status.Message = "waiting: " + why
	}
	return c.client.Status().Patch(ctx, tj, patch)
}

// moveWaiting runs the rule over the waiting jobs of several types and
// moves those it says to move.
func (c *Controller) moveWaiting(ctx context.Context) error {
	var l v1alpha1.TrainingJobList
	if err := c.client.List(ctx, &l); err != nil {
		return err
	}
	types := map[string]bool{}
	var movable []*v1alpha1.TrainingJob
	for i := range l.Items {
		tj := &l.Items[i]
		if len(tj.Spec.GPUTypes) < 2 || tj.Status.Phase != v1alpha1.PhaseWaiting || tj.CurrentGPUType() == "" {
			continue
		}
		movable = append(movable, tj)
		for _, t := range c.candidates(tj) {
			types[t] = true
		}
	}
	if len(movable) == 0 {
		return nil
	}
	st, err := c.readTypes(ctx, slices.Sorted(maps.Keys(types)))
	if err != nil {
		return err
	}
	// Only the waiting jobs of several types may move: every other job is
	// held where it is.
	for i := range st.jobs {
		tj := st.byName[st.jobs[i].ID]
		if len(tj.Spec.GPUTypes) < 2 || tj.Status.Phase != v1alpha1.PhaseWaiting {
			st.jobs[i].Types = []string{st.jobs[i].Current}
		}
	}
	decisions := typechoice.Assign(st.types, st.jobs, time.Now(), st.order, c.typeChoice())
	for _, tj := range movable {
		id := jobID(client.ObjectKeyFromObject(tj))
		d, ok := decisions[string(id)]
		if !ok || !d.Moved {
			continue
		}
		if err := c.move(ctx, tj, d); err != nil {
			c.log.Error(err, "move to another GPU type", "job", id, "to", d.Type)
		}
	}
	return nil
}

// move takes a waiting job off its type's engine and puts it on another:
// the old engine forgets it first (so it cannot start it meanwhile), then
// the status names the new type, whose reconcile admits it there with its
// counters. A job that started in between stays.
func (c *Controller) move(ctx context.Context, tj *v1alpha1.TrainingJob, d typechoice.Decision) error {
	id := jobID(client.ObjectKeyFromObject(tj))
	from := api.GPUType(tj.CurrentGPUType())
	e := c.engineFor(from)
	waiting := false
	c.mu.Lock()
	c.moving[id] = api.GPUType(d.Type)
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.moving, id)
		c.mu.Unlock()
	}()
	err := e.loop.Do(ctx, func(en *scheduler.Engine) error {
		j, ok := en.Job(id)
		if !ok || j.Phase != api.PhaseWaiting {
			return nil
		}
		waiting = true
		e.forgetWritten(id)
		e.setKnown(id, false)
		return en.Step(scheduler.JobDeleted{ID: id})
	})
	if err != nil || !waiting {
		return err
	}
	fresh := &v1alpha1.TrainingJob{}
	if err := c.client.Get(ctx, client.ObjectKeyFromObject(tj), fresh); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	if err := c.setType(ctx, fresh, d.Type, d.Reason, true); err != nil {
		return err
	}
	if m := c.opts.Metrics; m != nil {
		m.TypeMoved(from, api.GPUType(d.Type))
	}
	c.mu.Lock()
	c.jobTypes[id] = api.GPUType(d.Type)
	c.mu.Unlock()
	c.event(id, corev1.EventTypeNormal, "GPUTypeMoved", fmt.Sprintf("Moved from GPU type %s to %s while waiting: %s", from, d.Type, d.Reason))
	return nil
}

// runTypeChoice looks at the waiting jobs of several types every
// TypeChoiceEvery until ctx ends.
func (c *Controller) runTypeChoice(ctx context.Context) {
	every := c.opts.TypeChoiceEvery
	if every <= 0 {
		every = DefaultTypeChoiceEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := c.moveWaiting(ctx); err != nil && ctx.Err() == nil {
			c.log.Error(err, "choose GPU types")
		}
	}
}
