package estimator

import (
	"cmp"
	"math"
	"slices"
)

// StepModels learns a StepModel per category from its jobs' steps: the
// mean time at each distinct (GPUs, nodes, batch), refitted when a new
// one comes, once there are MinStepPoints. Steps arrive one at a time
// (Observe, the simulator's way) or as each job's latest means (Replace,
// the controller's: a job's status sums up all it reported). Not safe for
// concurrent use.
type StepModels struct {
	categories map[string]*stepCategory
	// jobs is the category of each job Replace was given.
	jobs map[string]string
	// changes counts the changes to every category's points and jobs.
	changes int
	// Deferred leaves the refits that Replace makes due to the caller
	// (Due, StepFit.Run, Install), so that they can run outside the lock
	// that guards the models; Observe and Load fit at once.
	Deferred bool
}

// MinStepPoints is how many distinct (GPUs, nodes, batch) a category's
// jobs must have measured before its model replaces BatchTime. Chosen
// among 2, 3, 5 and 8 on workloads 1–4 of the Pollux traces with
// estimated information (docs/evaluation.md, "Where the estimate loses"):
// 3 and 5 did best, within 0.2% of each other.
const MinStepPoints = 3

// refitIterations is how many steps of the simplex a refit takes, from
// the category's last model.
const refitIterations = 1500

type stepCategory struct {
	// points are the steps observed and those of retired jobs; jobs the
	// latest means of each running job Replace was given.
	points    map[stepKey]*stepMean
	jobs      map[string]map[stepKey]float64
	model     StepModel
	perGPUMax int
	// fitted is how many distinct points the model was fitted to.
	fitted int
	// version is StepModels.changes at the last change to points or
	// jobs.
	version int
}

// stepKey is a point's GPUs, nodes and batch.
type stepKey [3]int

type stepMean struct {
	sum float64
	n   int
}

func (s *StepModels) category(name string, perGPUMax int) *stepCategory {
	if s.categories == nil {
		s.categories = map[string]*stepCategory{}
	}
	c := s.categories[name]
	if c == nil {
		c = &stepCategory{points: map[stepKey]*stepMean{}, perGPUMax: perGPUMax}
		s.categories[name] = c
	}
	return c
}

// usableStep reports whether a step has GPUs, a batch and a positive,
// finite time.
func usableStep(x StepSample) bool {
	return x.GPUs >= 1 && x.Batch >= 1 && x.Seconds > 0 && !math.IsInf(x.Seconds, 0)
}

func keyOf(x StepSample) stepKey { return stepKey{x.GPUs, max(x.Nodes, 1), x.Batch} }

// Observe adds a step of a category whose micro-steps hold at most
// perGPUMax samples per GPU (0: no limit; the category keeps the one its
// first step came with). A step without a positive, finite time, GPUs or
// batch is left out.
func (s *StepModels) Observe(category string, perGPUMax int, x StepSample) {
	if !usableStep(x) {
		return
	}
	c := s.category(category, perGPUMax)
	s.changed(c)
	key := keyOf(x)
	if p, ok := c.points[key]; ok {
		p.sum += x.Seconds
		p.n++
		return
	}
	c.points[key] = &stepMean{x.Seconds, 1}
	c.update()
}

// Replace sets a job's steps in a category: the mean time it measured at
// each point, in place of what it gave before. A job given in another
// category before (one moved to another GPU type) leaves there what it
// gave, as Retire does. Each job's mean at a point counts as one step
// there. Steps that are not usable (see Observe) are left out; two at one
// point count as their mean.
func (s *StepModels) Replace(job, category string, perGPUMax int, steps []StepSample) {
	if old, ok := s.jobs[job]; ok && old != category {
		s.Retire(job)
	}
	mine := map[stepKey]*stepMean{}
	for _, x := range steps {
		if !usableStep(x) {
			continue
		}
		if m := mine[keyOf(x)]; m != nil {
			m.sum += x.Seconds
			m.n++
		} else {
			mine[keyOf(x)] = &stepMean{x.Seconds, 1}
		}
	}
	if len(mine) == 0 && s.jobs[job] == "" {
		return
	}
	if s.jobs == nil {
		s.jobs = map[string]string{}
	}
	s.jobs[job] = category
	c := s.category(category, perGPUMax)
	if c.jobs == nil {
		c.jobs = map[string]map[stepKey]float64{}
	}
	means := make(map[stepKey]float64, len(mine))
	for k, m := range mine {
		means[k] = m.sum / float64(m.n)
	}
	c.jobs[job] = means
	s.changed(c)
	if !s.Deferred {
		c.update()
	}
}

// Retire keeps a job's last steps in its category for good, and forgets
// the job: what it measured stays true of the category whether it
// completed or not.
func (s *StepModels) Retire(job string) {
	cat, ok := s.jobs[job]
	if !ok {
		return
	}
	delete(s.jobs, job)
	c := s.categories[cat]
	for k, v := range c.jobs[job] {
		if p := c.points[k]; p != nil {
			p.sum += v
			p.n++
		} else {
			c.points[k] = &stepMean{v, 1}
		}
	}
	delete(c.jobs, job)
	s.changed(c)
}

// changed marks a category's points or jobs changed.
func (s *StepModels) changed(c *stepCategory) {
	s.changes++
	c.version = s.changes
}

// Version changes whenever a category's points or model do (Load and
// Install included).
func (s *StepModels) Version(category string) int {
	if c := s.categories[category]; c != nil {
		return c.version
	}
	return 0
}

// samples are the category's points, each the mean of its steps, in a
// fixed order (it decides the float sums of the fit).
func (c *stepCategory) samples() []StepSample {
	all := make(map[stepKey]stepMean, len(c.points))
	for k, p := range c.points {
		all[k] = *p
	}
	for _, means := range c.jobs {
		for k, v := range means {
			m := all[k]
			m.sum += v
			m.n++
			all[k] = m
		}
	}
	out := make([]StepSample, 0, len(all))
	for k, p := range all {
		out = append(out, StepSample{GPUs: k[0], Nodes: k[1], Batch: k[2], Seconds: p.sum / float64(p.n)})
	}
	slices.SortFunc(out, func(a, b StepSample) int {
		return cmp.Or(cmp.Compare(a.GPUs, b.GPUs), cmp.Compare(a.Nodes, b.Nodes), cmp.Compare(a.Batch, b.Batch))
	})
	return out
}

// update refits the category's model when it has more distinct points
// than the model was fitted to, and at least MinStepPoints (see
// StepFit.Run).
func (c *stepCategory) update() {
	if f, ok := c.due(); ok {
		f.Run()
		c.install(f)
	}
}

// StepFit is a refit of one category's model: made due under the lock
// that guards the models (StepModels.Due), run without it (Run),
// installed under it again (StepModels.Install).
type StepFit struct {
	category  string
	samples   []StepSample
	from      StepModel
	perGPUMax int
	model     StepModel
}

// Due returns the refit a category needs, if any: when it has more
// distinct points than its model was fitted to, and at least
// MinStepPoints.
func (s *StepModels) Due(category string) (StepFit, bool) {
	c := s.categories[category]
	if c == nil {
		return StepFit{}, false
	}
	f, ok := c.due()
	f.category = category
	return f, ok
}

func (c *stepCategory) due() (StepFit, bool) {
	samples := c.samples()
	if len(samples) < MinStepPoints || len(samples) <= c.fitted {
		return StepFit{}, false
	}
	return StepFit{samples: samples, from: c.model, perGPUMax: c.perGPUMax}, true
}

// Run fits the model: from scratch the category's first time; after that,
// from its last model and from scratch alike, keeping the fit with the
// smaller loss. A first fit to a few points is one of many that fit them
// exactly, some of them degenerate, and a simplex started only from there
// could stay in that hollow however many points came later (on the
// Pollux traces, YOLOv3's steps at eight times its batch were taken to
// cost the same as at its own). It touches nothing of the StepModels.
func (f *StepFit) Run() {
	if !f.from.Known() {
		f.model = FitStepModel(f.samples, f.perGPUMax)
		return
	}
	warm := f.from.refit(f.samples, refitIterations)
	fresh := StepModel{p: startOf(f.samples), perGPUMax: f.perGPUMax, ok: true}.refit(f.samples, refitIterations)
	f.model = warm
	if fresh.loss(f.samples) < warm.loss(f.samples) {
		f.model = fresh
	}
}

// Install makes a refit that ran the category's model, unless one over
// as many points or more was installed since it was made due.
func (s *StepModels) Install(f StepFit) {
	if c := s.categories[f.category]; c != nil && c.install(f) {
		s.changed(c)
	}
}

// install makes a refit the category's model, as Install says, and
// reports whether it did.
func (c *stepCategory) install(f StepFit) bool {
	if f.model.Known() && len(f.samples) > c.fitted {
		c.fitted, c.model = len(f.samples), f.model
		return true
	}
	return false
}

// Model is the category's model; Known is false until it has
// MinStepPoints distinct points.
func (s *StepModels) Model(category string) StepModel {
	if c := s.categories[category]; c != nil {
		return c.model
	}
	return StepModel{}
}

// SavedSteps is what a category's model was learnt from, as it is saved:
// the mean time at each point over Steps steps (a running job's counting
// as one), and the per-GPU limit of its micro-steps.
type SavedSteps struct {
	PerGPUMax int         `json:"perGPUMax,omitempty"`
	Points    []StepPoint `json:"points"`
}

// StepPoint is a category's mean step time at a point.
type StepPoint struct {
	GPUs    int     `json:"gpus"`
	Nodes   int     `json:"nodes"`
	Batch   int     `json:"batch"`
	Seconds float64 `json:"seconds"`
	Steps   int     `json:"steps"`
}

// Saved is every category's points, running jobs' included, to be saved.
func (s *StepModels) Saved() map[string]SavedSteps {
	out := make(map[string]SavedSteps, len(s.categories))
	for name, c := range s.categories {
		counts := map[stepKey]int{}
		for k, p := range c.points {
			counts[k] = p.n
		}
		for _, means := range c.jobs {
			for k := range means {
				counts[k]++
			}
		}
		saved := SavedSteps{PerGPUMax: c.perGPUMax, Points: make([]StepPoint, 0, len(counts))}
		for _, x := range c.samples() {
			saved.Points = append(saved.Points, StepPoint{GPUs: x.GPUs, Nodes: x.Nodes, Batch: x.Batch, Seconds: x.Seconds, Steps: counts[keyOf(x)]})
		}
		out[name] = saved
	}
	return out
}

// Load replaces every category with saved points and fits their models;
// points that do not make sense (no GPUs, batch or steps, a time that is
// not positive and finite, a negative per-GPU limit) are dropped. Jobs
// given before are forgotten: they give their steps again (Replace).
func (s *StepModels) Load(saved map[string]SavedSteps) {
	s.categories, s.jobs = nil, nil
	for name, sv := range saved {
		if sv.PerGPUMax < 0 {
			continue
		}
		for _, p := range sv.Points {
			x := StepSample{GPUs: p.GPUs, Nodes: p.Nodes, Batch: p.Batch, Seconds: p.Seconds}
			if !usableStep(x) || p.Steps < 1 || p.Nodes < 1 || p.Nodes > p.GPUs {
				continue
			}
			c := s.category(name, sv.PerGPUMax)
			c.points[keyOf(x)] = &stepMean{p.Seconds * float64(p.Steps), p.Steps}
			s.changed(c)
		}
	}
	for _, c := range s.categories {
		c.update()
	}
}

// StepLine is a step's time against the batch at one placement, seconds
// = PerStep + PerSample·batch (StepModels.Line). The zero StepLine is no
// line.
type StepLine struct {
	PerStep, PerSample float64
}

// Ratio is an epoch's time at batch over that at initial on the line
// (StepModel.Ratio's meaning); 1 for the zero line.
func (l StepLine) Ratio(initial, batch int) float64 {
	if !(l.PerSample > 0) {
		return 1
	}
	return ratio(l.PerStep+l.PerSample*float64(initial), l.PerStep+l.PerSample*float64(batch), initial, batch)
}

// Line is a category's step time against the batch at gpus GPUs over nodes
// nodes, fitted by least squares to the points it measured there, for a
// category whose model is not known yet (its batch model is otherwise
// BatchTime's fixed shares): ok only with two distinct batches or more
// and a positive per-sample time. A negative fixed part is taken as zero.
func (s *StepModels) Line(category string, gpus, nodes int) (StepLine, bool) {
	c := s.categories[category]
	if c == nil {
		return StepLine{}, false
	}
	return lineAt(c.samples(), gpus, nodes)
}

// Lines is Line at every worker count from 1 to most, the workers placed
// on placed(n) GPUs and nodes, indexed by workers (the zero StepLine where
// there is none); nil when there is none at all.
func (s *StepModels) Lines(category string, most int, placed func(n int) (gpus, nodes int)) []StepLine {
	c := s.categories[category]
	if c == nil {
		return nil
	}
	at := byPlacement(c.samples())
	var lines []StepLine
	for n := 1; n <= most; n++ {
		gpus, nodes := placed(n)
		if l, ok := lineAt(at[[2]int{gpus, nodes}], gpus, nodes); ok {
			if lines == nil {
				lines = make([]StepLine, most+1)
			}
			lines[n] = l
		}
	}
	return lines
}

// byPlacement are samples by their GPUs and nodes, each placement's in
// the order given (samples gives them in batch order).
func byPlacement(samples []StepSample) map[[2]int][]StepSample {
	out := map[[2]int][]StepSample{}
	for _, x := range samples {
		k := [2]int{x.GPUs, x.Nodes}
		out[k] = append(out[k], x)
	}
	return out
}

// lineAt is Line over samples.
func lineAt(samples []StepSample, gpus, nodes int) (StepLine, bool) {
	var n, sx, sy, sxx, sxy float64
	for _, x := range samples {
		if x.GPUs != gpus || x.Nodes != nodes {
			continue
		}
		b := float64(x.Batch)
		n, sx, sy, sxx, sxy = n+1, sx+b, sy+x.Seconds, sxx+b*b, sxy+b*x.Seconds
	}
	den := n*sxx - sx*sx
	if n < 2 || !(den > 0) {
		return StepLine{}, false
	}
	l := StepLine{PerSample: (n*sxy - sx*sy) / den}
	l.PerStep = (sy - l.PerSample*sx) / n
	if l.PerStep < 0 {
		l = StepLine{PerSample: sxy / sxx}
	}
	if !(l.PerSample > 0) || math.IsInf(l.PerSample, 0) {
		return StepLine{}, false
	}
	return l, true
}

// # Where the category measured, its measurements
//
// The step model's form cannot follow every model's steps: fitted to
// every profiled point of the Pollux traces it still costs 2% of the mean
// JCT at 1.0× load against the profiles' exact times (docs/evaluation.md,
// "Where the estimate loses"). Where a category's jobs measured steps at
// several batches on one placement, those means are closer to the truth
// than the model, and the batches a job is likely to be given are the
// ones measured.

// residual is, at one batch, the logarithm of a category's mean step time
// over its model's there.
type residual struct{ logBatch, log float64 }

// BatchModel is the category's model as a BatchRange's Time
// (StepModel.BatchModel) for a job of an initial batch whose n workers
// take up placed(n) GPUs and nodes, with its step times at up to most
// workers brought to what the category measured there: at a measured
// batch the measured mean, between two measured batches the model times
// their ratios to it interpolated in the logarithm of the batch, beyond
// them the model times the nearest's ratio. Where fewer than two batches
// were measured the model is left as it is (a ratio at one batch changes
// no ratio of two). Nil until the model is known. It reads the points
// once, so it can be used after the caller lets go of the lock that
// guards the models; not safe for concurrent use.
func (s *StepModels) BatchModel(category string, initial, most int, placed func(n int) (gpus, nodes int)) func(n, batch int) float64 {
	c := s.categories[category]
	if c == nil || !c.model.Known() {
		return nil
	}
	model := c.model.BatchModel(initial, placed)
	residuals := c.residuals(most, placed)
	if residuals == nil {
		return model
	}
	return func(n, batch int) float64 {
		t := model(n, batch)
		if n < 1 || n >= len(residuals) || residuals[n] == nil {
			return t
		}
		r := residuals[n]
		return t * math.Exp(residualAt(r, batch)-residualAt(r, initial))
	}
}

// residuals are, at each worker count up to most, the category's
// residuals against its model at the batches measured on placed(n), where
// two batches or more were; nil where fewer were.
func (c *stepCategory) residuals(most int, placed func(n int) (gpus, nodes int)) [][]residual {
	m := c.model
	at := byPlacement(c.samples())
	var out [][]residual // by workers
	for n := 1; n <= most; n++ {
		gpus, nodes := placed(n)
		measured := at[[2]int{gpus, nodes}]
		r := make([]residual, 0, len(measured))
		for _, x := range measured {
			if v := m.Seconds(gpus, nodes, x.Batch); v > 0 && !math.IsInf(v, 0) {
				r = append(r, residual{math.Log(float64(x.Batch)), math.Log(x.Seconds / v)})
			}
		}
		if len(r) < 2 {
			continue
		}
		if out == nil {
			out = make([][]residual, most+1)
		}
		out[n] = r
	}
	return out
}

// residualAt interpolates residuals, in batch order, at a batch.
func residualAt(r []residual, batch int) float64 {
	x := math.Log(float64(max(batch, 1)))
	if x <= r[0].logBatch {
		return r[0].log
	}
	for i := 1; i < len(r); i++ {
		if x <= r[i].logBatch {
			a, b := r[i-1], r[i]
			return a.log + (x-a.logBatch)/(b.logBatch-a.logBatch)*(b.log-a.log)
		}
	}
	return r[len(r)-1].log
}
