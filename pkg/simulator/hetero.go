package simulator

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/cluster/sim"
	"github.com/vodascheduler/voda/pkg/scheduler"
	"github.com/vodascheduler/voda/pkg/typechoice"
)

// How jobs of a heterogeneous run get their GPU type.
const (
	// ChoiceRandom pins each job to a type drawn at random among those it
	// runs on, as users guessing would.
	ChoiceRandom = "random"
	// ChoiceFastest pins each job to the type where it runs fastest.
	ChoiceFastest = "fastest"
	// ChoiceVoda lets pkg/typechoice choose each job's type, and move it
	// while it waits (a job holding GPUs keeps its type), as the controller
	// does.
	ChoiceVoda = "voda"
)

// Choices lists the ways of choosing types, in report order.
var Choices = []string{ChoiceRandom, ChoiceFastest, ChoiceVoda}

// TypeNodes is one GPU type of a heterogeneous cluster.
type TypeNodes struct {
	Name        string
	Nodes       int
	GPUsPerNode int
}

// ParseTypes reads the GPU types of a cluster written TYPE=NODESxGPUS,
// comma-separated (v100=2x4,k80=6x4), as voda simulate --gpu-types takes
// them; Validate checks the sizes.
func ParseTypes(s string) ([]TypeNodes, error) {
	var out []TypeNodes
	for _, part := range strings.Split(s, ",") {
		name, size, ok := strings.Cut(strings.TrimSpace(part), "=")
		nodes, gpus, ok2 := strings.Cut(size, "x")
		n, err1 := strconv.Atoi(nodes)
		g, err2 := strconv.Atoi(gpus)
		if !ok || !ok2 || name == "" || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("--gpu-types %q: want TYPE=NODESxGPUS, comma-separated, e.g. v100=2x4,k80=6x4", part)
		}
		out = append(out, TypeNodes{Name: name, Nodes: n, GPUsPerNode: g})
	}
	return out, nil
}

// HeteroConfig describes one run on a cluster of several GPU types: one
// engine per type, each with the same policy, and a way of choosing every
// job's type.
type HeteroConfig struct {
	Policy       string
	Types        []TypeNodes
	RestartDelay time.Duration
	// Runtime is Config.Runtime.
	Runtime   string
	RateLimit time.Duration
	Tiresias  algorithm.TiresiasConfig
	// HeSRPT holds HeSRPT's parameters; the zero value means its defaults.
	HeSRPT algorithm.HeSRPTConfig
	Choice string
	// Seed draws the random choices.
	Seed uint64
	// TypeChoice configures ChoiceVoda; the zero value means
	// typechoice.DefaultConfig with the restart delay as the restart cost.
	TypeChoice typechoice.Config
	// Every is how often, besides arrivals and completions, ChoiceVoda
	// looks again at the types (0: 5 minutes).
	Every time.Duration
}

// Validate reports configuration errors in user terms.
func (c HeteroConfig) Validate() error {
	var errs []error
	if len(c.Types) == 0 {
		errs = append(errs, errors.New("no GPU types: give at least one TYPE=NODESxGPUS"))
	}
	seen := map[string]bool{}
	for _, t := range c.Types {
		if seen[t.Name] {
			errs = append(errs, fmt.Errorf("GPU type %s given twice", t.Name))
		}
		seen[t.Name] = true
		if t.Nodes < 1 || t.Nodes > 100_000 || t.GPUsPerNode < 1 || t.GPUsPerNode > 64 {
			errs = append(errs, fmt.Errorf("GPU type %s: %d nodes of %d GPUs, want 1–100000 nodes of 1–64 GPUs", t.Name, t.Nodes, t.GPUsPerNode))
		}
	}
	if !slices.Contains(Choices, c.Choice) {
		errs = append(errs, fmt.Errorf("type choice %q: want %s", c.Choice, strings.Join(Choices, ", ")))
	}
	if _, err := algorithm.Canonical(c.Policy); err != nil {
		errs = append(errs, err)
	}
	if err := c.Tiresias.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := checkRuntime(c.Runtime); err != nil {
		errs = append(errs, err)
	}
	if c.RestartDelay < 0 || c.RateLimit < 0 || c.Every < 0 {
		errs = append(errs, errors.New("negative durations"))
	}
	return errors.Join(errs...)
}

// HeteroJobResult is what happened to one job of a heterogeneous run.
type HeteroJobResult struct {
	Name, JobType string
	Scale         int
	Submit        float64
	Start         float64
	Finish        float64
	JCT           float64
	// Types are the types the job was on, in order; Moves is len(Types)−1.
	Types []string
	Moves int
	// Estimate is, for Voda's choice, the JCT the rule estimated when it
	// gave the job its first type.
	Estimate float64
}

// HeteroResult is the outcome of one heterogeneous run.
type HeteroResult struct {
	Policy, Workload, Choice string
	Jobs                     []HeteroJobResult
	Makespan                 float64
	// GPUs is each type's GPU count.
	GPUs map[string]int
	// Busy is each type's GPU-seconds held by jobs.
	Busy map[string]float64
	// LowerBound is a lower bound on the mean JCT of any policy of the
	// run's class on this workload and cluster, whatever the choice of
	// types (heteroRun.bound).
	LowerBound  float64
	WallSeconds float64
}

// MeanJCT, P99JCT and MovesPerJob summarise a result.
func (r HeteroResult) MeanJCT() float64 {
	s := 0.0
	for _, j := range r.Jobs {
		s += j.JCT
	}
	return s / float64(max(len(r.Jobs), 1))
}

// P99JCT is the 99th percentile of the JCTs (nearest rank).
func (r HeteroResult) P99JCT() float64 {
	v := make([]float64, len(r.Jobs))
	for i, j := range r.Jobs {
		v[i] = j.JCT
	}
	slices.Sort(v)
	if len(v) == 0 {
		return 0
	}
	return Percentile(v, 99)
}

// MovesPerJob is the mean number of moves between types.
func (r HeteroResult) MovesPerJob() float64 {
	s := 0
	for _, j := range r.Jobs {
		s += j.Moves
	}
	return float64(s) / float64(max(len(r.Jobs), 1))
}

// hjob is a job's state in a heterogeneous run.
type hjob struct {
	HeteroJob
	// thr[t][n] is steps/s on n GPUs of type t (n = 0..8), the measured
	// points made monotone and filled in between.
	thr     map[string][]float64
	max     map[string]int // largest useful GPU count per type
	ok      []string       // the types it runs on, by preference
	typ     string         // the type it is on ("" before arrival)
	since   time.Time
	ran     bool
	start   float64
	visited []string
	// steps left when it last left a type (0: all of them).
	left     float64
	estimate float64
	// restart is what the policies are told a restart costs it (0: their
	// own assumption).
	restart float64
}

type heteroRun struct {
	cfg      HeteroConfig
	w        HeteroWorkload
	clock    *virtualClock
	engines  map[string]*scheduler.Engine
	cluster  map[string]*sim.Cluster
	gpus     map[string]int
	jobs     map[api.JobID]*hjob
	live     map[api.JobID]*hjob
	next     int
	done     int
	finish   map[api.JobID]float64
	busy     map[string]float64
	last     time.Time // when busy was last brought up to date
	rng      *rand.Rand
	nextLook time.Time
	ref      string
}

// RunHetero simulates a workload on a cluster of several GPU types with
// the throughputs of table.
func RunHetero(cfg HeteroConfig, w HeteroWorkload, table *GavelTable) (HeteroResult, error) {
	if err := cfg.Validate(); err != nil {
		return HeteroResult{}, err
	}
	if cfg.TypeChoice == (typechoice.Config{}) {
		cfg.TypeChoice = typechoice.DefaultConfig()
		cfg.TypeChoice.RestartCost = cfg.RestartDelay.Seconds()
	}
	if cfg.Every == 0 {
		cfg.Every = 5 * time.Minute
	}
	began := time.Now()
	r := &heteroRun{cfg: cfg, w: w, clock: &virtualClock{t: epoch}, engines: map[string]*scheduler.Engine{},
		cluster: map[string]*sim.Cluster{}, gpus: map[string]int{}, jobs: map[api.JobID]*hjob{}, live: map[api.JobID]*hjob{},
		finish: map[api.JobID]float64{}, busy: map[string]float64{}, last: epoch, rng: rand.New(rand.NewPCG(cfg.Seed, 0x6a7e1)),
		nextLook: epoch}
	for _, t := range cfg.Types {
		ecfg := scheduler.DefaultConfig(api.GPUType(t.Name), r.clock)
		ecfg.Policy, ecfg.RateLimit = cfg.Policy, cfg.RateLimit
		ecfg.Algorithm.Tiresias = cfg.Tiresias
		ecfg.Algorithm.HeSRPT = cfg.HeSRPT
		e, err := scheduler.New(ecfg)
		if err != nil {
			return HeteroResult{}, err
		}
		for i := range t.Nodes {
			if err := e.Step(scheduler.NodeSet{Node: api.Node{Name: api.NodeName(fmt.Sprintf("%s-%03d", t.Name, i)), GPUs: t.GPUsPerNode}}); err != nil {
				return HeteroResult{}, err
			}
		}
		r.engines[t.Name], r.cluster[t.Name] = e, sim.New(cfg.RestartDelay)
		r.gpus[t.Name] = t.Nodes * t.GPUsPerNode
	}
	// The reference type of the work the rule counts: the first given.
	r.ref = cfg.Types[0].Name
	for _, j := range w.Jobs {
		hj, err := r.prepare(j, table)
		if err != nil {
			return HeteroResult{}, fmt.Errorf("workload %s, job %s: %w", w.Name, j.Name, err)
		}
		r.jobs[api.JobID(j.Name)] = hj
	}
	if err := r.loop(); err != nil {
		return HeteroResult{}, fmt.Errorf("%s, %s choice, on %s: %w", cfg.Policy, cfg.Choice, w.Name, err)
	}
	res := r.result()
	res.WallSeconds = time.Since(began).Seconds()
	return res, nil
}

// prepare reads a job's throughput on every type of the cluster.
func (r *heteroRun) prepare(j HeteroJob, table *GavelTable) (*hjob, error) {
	hj := &hjob{HeteroJob: j, thr: map[string][]float64{}, max: map[string]int{},
		restart: restartSeconds(r.cfg.Runtime, r.cfg.RestartDelay)}
	for _, t := range r.cfg.Types {
		curve := gavelCurve(table, t.Name, j.JobType, 8)
		if curve[1] <= 0 {
			continue // the job does not run on this type (Gavel measured no throughput)
		}
		top := 1
		for n := 2; n <= min(8, t.GPUsPerNode*t.Nodes); n++ {
			if curve[n] > curve[top] {
				top = n
			}
		}
		hj.thr[t.Name], hj.max[t.Name] = curve, top
		hj.ok = append(hj.ok, t.Name)
	}
	if len(hj.ok) == 0 {
		return nil, fmt.Errorf("job type %q runs on none of the cluster's GPU types", j.JobType)
	}
	if j.Scale < 1 || !(j.Steps > 0) {
		return nil, fmt.Errorf("scale %d, steps %v", j.Scale, j.Steps)
	}
	return hj, nil
}

// spec is a job's worker range on type t: one GPU per worker, from one to
// its most useful count, asking for its scale factor.
func (hj *hjob) spec(t string) api.JobSpec {
	hi := hj.max[t]
	return api.JobSpec{MinWorkers: 1, MaxWorkers: hi, RequestedWorkers: min(hj.Scale, hi), RestartSeconds: hj.restart}
}

func (hj *hjob) speedup(t string) algorithm.Speedup {
	curve := hj.thr[t]
	return func(n int) float64 {
		if n < 1 || n >= len(curve) {
			return 0
		}
		return curve[n] / curve[1]
	}
}

func (r *heteroRun) loop() error {
	for iter := 0; r.done < len(r.w.Jobs); iter++ {
		if iter > maxIterations {
			return errors.New("the simulation does not converge")
		}
		t, ok := r.nextEvent()
		if !ok {
			return fmt.Errorf("%d jobs never finish", len(r.w.Jobs)-r.done)
		}
		r.account(t)
		r.clock.t = t
		changed, err := r.finishJobs(t)
		if err != nil {
			return err
		}
		arrived, err := r.arrive(t)
		if err != nil {
			return err
		}
		if r.cfg.Choice == ChoiceVoda && (changed || arrived || !t.Before(r.nextLook)) {
			if err := r.choose(t); err != nil {
				return err
			}
			r.nextLook = t.Add(r.cfg.Every)
		}
		for _, tn := range r.typeNames() {
			if err := r.schedule(tn, t); err != nil {
				return err
			}
		}
	}
	return nil
}

func (r *heteroRun) typeNames() []string {
	out := make([]string, len(r.cfg.Types))
	for i, t := range r.cfg.Types {
		out[i] = t.Name
	}
	return out
}

func (r *heteroRun) nextEvent() (time.Time, bool) {
	var best time.Time
	ok := false
	consider := func(t time.Time) {
		if !ok || t.Before(best) {
			best, ok = t, true
		}
	}
	if r.next < len(r.w.Jobs) {
		consider(epoch.Add(r.w.Jobs[r.next].Submit))
	}
	for _, tn := range r.typeNames() {
		if t, found := r.cluster[tn].NextFinish(); found {
			consider(t)
		}
		if t, found := r.engines[tn].Due(); found {
			consider(later(t, r.clock.t))
		}
	}
	if r.cfg.Choice == ChoiceVoda && ok && len(r.live) > 0 {
		consider(later(r.nextLook, r.clock.t))
	}
	return best, ok
}

// account charges the GPUs held since the last event.
func (r *heteroRun) account(t time.Time) {
	dt := t.Sub(r.last).Seconds()
	if dt > 0 {
		for tn, c := range r.cluster {
			r.busy[tn] += dt * float64(c.Allocated())
		}
	}
	r.last = t
}

func (r *heteroRun) finishJobs(t time.Time) (bool, error) {
	any := false
	for _, tn := range r.typeNames() {
		for _, id := range r.cluster[tn].Finished(t) {
			if err := r.engines[tn].Step(scheduler.JobCompleted{ID: id}); err != nil {
				return false, err
			}
			r.finish[id] = t.Sub(epoch).Seconds()
			delete(r.live, id)
			r.done++
			any = true
		}
	}
	return any, nil
}

func (r *heteroRun) arrive(t time.Time) (bool, error) {
	any := false
	for r.next < len(r.w.Jobs) && !epoch.Add(r.w.Jobs[r.next].Submit).After(t) {
		j := r.w.Jobs[r.next]
		r.next++
		hj := r.jobs[api.JobID(j.Name)]
		r.live[api.JobID(j.Name)] = hj
		any = true
		var typ string
		switch r.cfg.Choice {
		case ChoiceRandom:
			typ = hj.ok[r.rng.IntN(len(hj.ok))]
		case ChoiceFastest:
			typ = hj.fastest()
		case ChoiceVoda:
			continue // choose places it
		}
		if err := r.place(hj, typ, t, nil); err != nil {
			return false, err
		}
	}
	return any, nil
}

// fastest is the type where the job runs its scale factor fastest.
func (hj *hjob) fastest() string {
	best := hj.ok[0]
	for _, t := range hj.ok[1:] {
		if hj.thr[t][min(hj.Scale, 8)] > hj.thr[best][min(hj.Scale, 8)] {
			best = t
		}
	}
	return best
}

// place puts a job on type t, with the engine record rec it had on its
// previous type (nil for a new job): its submission time and counters
// carry over, so a move does not send it to the back of FIFO queues.
func (r *heteroRun) place(hj *hjob, t string, now time.Time, rec *scheduler.Job) error {
	id := api.JobID(hj.Name)
	steps := hj.Steps
	if hj.left > 0 {
		steps = hj.left
	}
	thr := hj.thr[t]
	if err := r.cluster[t].Add(sim.Job{ID: id, Steps: steps,
		StepSeconds: func(shape []int) float64 {
			n := 0
			for _, g := range shape {
				n += g
			}
			return 1 / thr[min(n, len(thr)-1)]
		}}); err != nil {
		return err
	}
	spec := hj.spec(t)
	rem := steps / thr[1]
	if rec == nil {
		if err := r.engines[t].Step(scheduler.JobSubmitted{ID: id, Spec: spec, Remaining: rem, Speedup: hj.speedup(t)}); err != nil {
			return err
		}
	} else {
		j := *rec
		j.Spec, j.Phase, j.Workers, j.Nodes = spec, api.PhaseWaiting, 0, nil
		j.Remaining, j.Speedup = rem, hj.speedup(t)
		if err := r.engines[t].Restore([]scheduler.Job{j}); err != nil {
			return err
		}
	}
	hj.typ, hj.since = t, now
	hj.visited = append(hj.visited, t)
	return nil
}

// move takes a job off its type and places it on t.
func (r *heteroRun) move(hj *hjob, t string, now time.Time) error {
	id := api.JobID(hj.Name)
	from := hj.typ
	rec, ok := r.engines[from].Job(id)
	if !ok {
		return fmt.Errorf("job %s is not on %s", id, from)
	}
	left, err := r.cluster[from].Remove(id, now)
	if err != nil {
		return err
	}
	if err := r.engines[from].Step(scheduler.JobDeleted{ID: id}); err != nil {
		return err
	}
	hj.left = left
	return r.place(hj, t, now, &rec)
}

// choose runs the type rule over every live job.
func (r *heteroRun) choose(now time.Time) error {
	types := make([]typechoice.Type, 0, len(r.cfg.Types))
	for _, t := range r.cfg.Types {
		types = append(types, typechoice.Type{Name: t.Name, GPUs: r.gpus[t.Name], Elastic: !algorithm.Rigid(r.cfg.Policy)})
	}
	ids := make([]api.JobID, 0, len(r.live))
	for id := range r.live {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	jobs := make([]typechoice.Job, 0, len(ids))
	for _, id := range ids {
		hj := r.live[id]
		left := hj.Steps
		if hj.typ != "" {
			left = r.cluster[hj.typ].Remaining(id, now)
		}
		speed := map[string]float64{}
		runs := map[string]typechoice.Run{}
		for _, t := range hj.ok {
			speed[t] = hj.thr[t][1] / r.refThroughput(hj)
			spec := hj.spec(t)
			runs[t] = typechoice.Run{GPUs: spec.RequestedWorkers, Speedup: hj.thr[t][spec.RequestedWorkers] / hj.thr[t][1],
				Most: spec.MaxWorkers, MostSpeedup: hj.thr[t][spec.MaxWorkers] / hj.thr[t][1],
				Least: spec.MinWorkers, LeastSpeedup: hj.thr[t][spec.MinWorkers] / hj.thr[t][1]}
		}
		types := hj.ok
		if hj.typ != "" {
			// As the controller does: a job that holds GPUs keeps its type.
			if n, _ := r.cluster[hj.typ].Workers(id); n > 0 {
				types = []string{hj.typ}
			}
		}
		jobs = append(jobs, typechoice.Job{ID: string(id), Types: types, Speed: speed,
			Work: left / r.refThroughput(hj), Current: hj.typ, Ran: hj.ran, Since: hj.since, Moves: max(len(hj.visited)-1, 0), Submitted: epoch.Add(hj.Submit), Runs: runs})
	}
	decisions := typechoice.Assign(types, jobs, now, typechoice.OrderOf(r.cfg.Policy), r.cfg.TypeChoice)
	for _, id := range ids {
		hj := r.live[id]
		d := decisions[string(id)]
		switch {
		case hj.typ == "":
			hj.estimate = now.Sub(epoch).Seconds() - hj.Submit.Seconds() + d.Done
			if err := r.place(hj, d.Type, now, nil); err != nil {
				return err
			}
		case d.Type != hj.typ:
			if err := r.move(hj, d.Type, now); err != nil {
				return err
			}
		}
	}
	return nil
}

// refThroughput is the job's one-GPU steps/s on the reference type, else
// on its first type: the unit of the work the rule counts.
func (r *heteroRun) refThroughput(hj *hjob) float64 {
	if c, ok := hj.thr[r.ref]; ok {
		return c[1]
	}
	return hj.thr[hj.ok[0]][1]
}

func (r *heteroRun) schedule(tn string, t time.Time) error {
	e := r.engines[tn]
	if due, ok := e.Due(); !ok || due.After(t) {
		return nil
	}
	if readsRemaining(e.Policy()) {
		for _, j := range e.Jobs() {
			if j.Phase.Final() {
				continue
			}
			hj := r.jobs[j.ID]
			rem := r.cluster[tn].Remaining(j.ID, t) / hj.thr[tn][1]
			if err := e.Step(scheduler.Progress{ID: j.ID, Remaining: max(rem, 1e-9)}); err != nil {
				return err
			}
		}
	}
	plan, err := e.Tick()
	if err != nil {
		return err
	}
	for _, a := range plan.Actions {
		if err := r.cluster[tn].Apply(a, t); err != nil {
			return fmt.Errorf("apply %s: %w", a, err)
		}
		if hj := r.jobs[a.Job]; a.Kind == api.ActionStart && !hj.ran {
			hj.ran, hj.start = true, t.Sub(epoch).Seconds()
		}
	}
	return nil
}

func (r *heteroRun) result() HeteroResult {
	res := HeteroResult{Policy: r.cfg.Policy, Workload: r.w.Name, Choice: r.cfg.Choice, GPUs: r.gpus, Busy: r.busy}
	for _, j := range r.w.Jobs {
		hj := r.jobs[api.JobID(j.Name)]
		f := r.finish[api.JobID(j.Name)]
		sub := j.Submit.Seconds()
		res.Jobs = append(res.Jobs, HeteroJobResult{Name: j.Name, JobType: j.JobType, Scale: j.Scale, Submit: sub,
			Start: hj.start, Finish: f, JCT: f - sub, Types: hj.visited, Moves: max(len(hj.visited)-1, 0), Estimate: hj.estimate})
		res.Makespan = max(res.Makespan, f)
	}
	res.LowerBound = r.bound(algorithm.Rigid(r.cfg.Policy))
	return res
}

// bound is a lower bound on the mean JCT of the policy's class for a
// heterogeneous run, whatever the choice of types. The partition bound:
// a job alone takes at least one restart delay plus its least time over
// the types and the sizes its class allows (rigid: its scale factor, as
// spec asks for it), and per GPU-second of any type it does at most the
// work of one GPU-second at its least GPU-seconds over types and sizes,
// so the jobs together are never done faster than on one server of all
// the cluster's GPUs processing those least GPU-seconds; partitionBound
// combines the two. The fluid bound (fluid.go) gives every type its own
// capacity: jobs share each type's GPUs, each on one type at a time along
// its curve there, so the GPUs of the fastest type are not counted for
// all the jobs that would like them. Moves between types only add
// restarts, so both hold for every choice of types; the bound is the
// larger.
func (r *heteroRun) bound(rigid bool) float64 {
	names := slices.Sorted(maps.Keys(r.gpus))
	caps := make([]float64, len(names))
	total := 0
	for i, t := range names {
		caps[i] = float64(r.gpus[t])
		total += r.gpus[t]
	}
	delay := r.cfg.RestartDelay.Seconds()
	iso := make([]float64, 0, len(r.w.Jobs))
	tasks := make([]srptTask, 0, len(r.w.Jobs))
	fluid := make([]fluidJob, 0, len(r.w.Jobs))
	rest := 0.0 // Σ t_j/2 − r_j: from the fluid minimum to a flow time bound
	var gpus, speed []float64
	for _, j := range r.w.Jobs {
		hj := r.jobs[api.JobID(j.Name)]
		best, least := math.Inf(1), math.Inf(1)
		fj := fluidJob{R: j.Submit.Seconds() + delay}
		for ti, t := range names {
			if !slices.Contains(hj.ok, t) {
				continue
			}
			spec := hj.spec(t)
			lo, hi := spec.MinWorkers, spec.MaxWorkers
			if rigid {
				lo, hi = spec.RequestedWorkers, spec.RequestedWorkers
			}
			gpus, speed = gpus[:0], speed[:0]
			for n := lo; n <= min(hi, r.gpus[t]); n++ {
				sec := j.Steps / hj.thr[t][n]
				best, least = min(best, sec), min(least, float64(n)*sec)
				gpus, speed = append(gpus, float64(n)), append(speed, 1/sec)
			}
			fj.segs = append(fj.segs, onType(fluidHull(gpus, speed), ti)...)
		}
		iso = append(iso, delay+best)
		tasks = append(tasks, srptTask{release: j.Submit.Seconds(), size: least / float64(total)})
		fluid = append(fluid, fj)
		rest += best/2 - j.Submit.Seconds()
	}
	pb := partitionBound(iso, tasks)
	if fb, ok := fluidBoundTypes(fluid, caps); ok {
		return max(pb, (fb+rest)/float64(len(fluid)))
	}
	return pb
}
