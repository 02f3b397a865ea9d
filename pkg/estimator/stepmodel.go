package estimator

import (
	"cmp"
	"math"
	"slices"
)

// # A job's step time at every batch, learned
//
// BatchTime's fixed shares cannot tell a job whose steps are mostly
// synchronisation (a larger batch nearly free) from one whose steps are
// mostly computation (a larger batch costs in proportion). StepModel
// learns the difference from the steps a category's jobs measured, in the
// form of Pollux's throughput model (Qiao et al., "Pollux: Co-adaptive
// Cluster Scheduling for Goodput-Optimized Deep Learning", OSDI'21,
// §3.2): a step on K GPUs at a per-GPU batch m with s micro-steps takes
//
//	T = (s−1)·Tg + (Tg^γ + Ts^γ)^(1/γ),   Tg = αg + βg·m,
//	Ts = 0 (K = 1), αl + βl·(K−2) (one node), αn + βn·(K−2) (several),
//
// γ ≥ 1 saying how far synchronisation overlaps computation. The fit
// minimises the squared error of the logarithms (as Pollux's does), over
// the logarithms of the coefficients, by the simplex method of Nelder and
// Mead. The time unit is the category's own: only ratios are used
// (Ratio), so a job may report its time per epoch times its batch.

// StepSample is a step's time: on GPUs GPUs over Nodes nodes at a global
// batch of Batch samples, Seconds (in any unit common to the category).
type StepSample struct {
	GPUs, Nodes, Batch int
	Seconds            float64
}

// StepModel is a fitted step-time model; the zero value knows nothing.
type StepModel struct {
	// p holds the logarithms of αg, βg, αl, βl, αn, βn and γ−1.
	p [7]float64
	// perGPUMax is the most samples a micro-step holds per GPU (0: no
	// limit).
	perGPUMax int
	ok        bool
	// c are the coefficients of p, computed once a fit ends.
	c coefficients
}

// Known reports whether the model was fitted.
func (m StepModel) Known() bool { return m.ok }

// Seconds is the model's time of a step on gpus GPUs over nodes nodes at
// a global batch of batch samples.
func (m StepModel) Seconds(gpus, nodes, batch int) float64 {
	if !m.ok {
		c := m.coefficients()
		return c.seconds(gpus, nodes, batch)
	}
	return m.c.seconds(gpus, nodes, batch)
}

// coefficients are a model's αg, βg, αl, βl, αn, βn and γ, and its
// per-GPU limit.
type coefficients struct {
	ag, bg, al, bl, an, bn, gamma float64
	perGPUMax                     int
}

func (m StepModel) coefficients() coefficients {
	p := &m.p
	return coefficients{math.Exp(p[0]), math.Exp(p[1]), math.Exp(p[2]), math.Exp(p[3]), math.Exp(p[4]), math.Exp(p[5]),
		min(1+math.Exp(p[6]), maxGamma), m.perGPUMax}
}

func (c *coefficients) seconds(gpus, nodes, batch int) float64 {
	gpus, batch = max(gpus, 1), max(batch, 1)
	acc := 1
	if c.perGPUMax > 0 {
		acc = max((batch+gpus*c.perGPUMax-1)/(gpus*c.perGPUMax), 1)
	}
	local := float64(batch) / float64(gpus*acc)
	tg := c.ag + c.bg*local
	ts := 0.0
	switch {
	case gpus == 1:
	case nodes <= 1:
		ts = c.al + c.bl*float64(gpus-2)
	default:
		ts = c.an + c.bn*float64(gpus-2)
	}
	g := c.gamma
	return float64(acc-1)*tg + math.Pow(math.Pow(tg, g)+math.Pow(ts, g), 1/g)
}

// maxGamma bounds γ, as Pollux bounds it.
const maxGamma = 10

// Ratio is the time of an epoch at a global batch of batch samples over
// that at initial, on gpus GPUs over nodes nodes: the batch model
// BatchRange.Time takes, from this model.
func (m StepModel) Ratio(gpus, nodes, initial, batch int) float64 {
	return ratio(m.Seconds(gpus, nodes, initial), m.Seconds(gpus, nodes, batch), initial, batch)
}

// ratio is an epoch's time at batch over that at initial, for steps of a
// and b seconds there; 1 when either is not positive and finite.
func ratio(a, b float64, initial, batch int) float64 {
	if !(a > 0) || !(b > 0) || math.IsInf(a+b, 0) {
		return 1
	}
	return b * float64(initial) / (a * float64(batch))
}

// BatchModel is Ratio as a BatchRange's Time, for a job whose n workers
// take up placed(n) GPUs over as many nodes, at an initial batch of
// initial samples. It remembers the step at the initial batch of each
// worker count (the search for the best batch asks for many batches at
// one count); not safe for concurrent use.
func (m StepModel) BatchModel(initial int, placed func(n int) (gpus, nodes int)) func(n, batch int) float64 {
	var at []float64 // by workers; 0 until computed
	return func(n, batch int) float64 {
		gpus, nodes := placed(n)
		if n < 0 || n > 1<<16 {
			return m.Ratio(gpus, nodes, initial, batch)
		}
		if n >= len(at) {
			at = append(at, make([]float64, n+1-len(at))...)
		}
		if at[n] == 0 {
			at[n] = m.Seconds(gpus, nodes, initial)
		}
		return ratio(at[n], m.Seconds(gpus, nodes, batch), initial, batch)
	}
}

// loss is the squared error of the logarithms over the samples.
func (m StepModel) loss(samples []StepSample) float64 {
	c := m.coefficients()
	s := 0.0
	for _, x := range samples {
		d := math.Log(c.seconds(x.GPUs, x.Nodes, x.Batch)) - math.Log(x.Seconds)
		s += d * d
	}
	return s
}

// FitStepModel fits the model to samples (those without a positive time
// are left out), micro-steps holding at most perGPUMax samples per GPU (0:
// no limit). It starts from startOf and runs the simplex twice, the
// second from the first's result. Without a sample it returns the zero
// model.
func FitStepModel(samples []StepSample, perGPUMax int) StepModel {
	samples = usable(samples)
	if len(samples) == 0 {
		return StepModel{}
	}
	m := StepModel{p: startOf(samples), perGPUMax: perGPUMax, ok: true}
	for range 2 {
		m = m.refit(samples, fitIterations)
	}
	return m
}

// startOf is where a fit to samples, all usable, starts: every α at a
// tenth of the fastest step, βg at the largest time per sample seen, the
// other β at a hundredth of the fastest step and γ = 2.
func startOf(samples []StepSample) [7]float64 {
	fast, slow := samples[0], samples[0]
	for _, x := range samples {
		if x.Seconds < fast.Seconds {
			fast = x
		}
		if x.Seconds/float64(x.Batch) > slow.Seconds/float64(slow.Batch) {
			slow = x
		}
	}
	a, b := math.Log(fast.Seconds/10), math.Log(fast.Seconds/100)
	return [7]float64{a, math.Log(slow.Seconds / float64(slow.Batch)), a, b, a, b, 0}
}

// fitIterations is how many steps of the simplex one fit takes.
const fitIterations = 3000

// usable are the samples with a positive, finite time, GPUs and batch.
func usable(samples []StepSample) []StepSample {
	out := make([]StepSample, 0, len(samples))
	for _, x := range samples {
		if usableStep(x) {
			k := keyOf(x)
			out = append(out, StepSample{GPUs: k[0], Nodes: k[1], Batch: k[2], Seconds: x.Seconds})
		}
	}
	return out
}

// refit runs the simplex from m over the samples for iterations steps:
// reflection 1, expansion 2, contraction and shrinkage ½ (Nelder and
// Mead, 1965), the first simplex one unit from m in each coordinate.
func (m StepModel) refit(samples []StepSample, iterations int) StepModel {
	const d = len(m.p)
	type vertex struct {
		p [d]float64
		v float64
	}
	f := func(p [d]float64) float64 {
		x := m
		x.p = p
		return x.loss(samples)
	}
	s := make([]vertex, d+1)
	for i := range s {
		s[i].p = m.p
		if i > 0 {
			s[i].p[i-1]++
		}
		s[i].v = f(s[i].p)
	}
	along := func(c, worst [d]float64, t float64) [d]float64 {
		var p [d]float64
		for j := range p {
			p[j] = c[j] + t*(worst[j]-c[j])
		}
		return p
	}
	for range iterations {
		slices.SortStableFunc(s, func(a, b vertex) int { return cmp.Compare(a.v, b.v) })
		var c [d]float64
		for _, v := range s[:d] {
			for j := range c {
				c[j] += v.p[j] / float64(d)
			}
		}
		worst := s[d].p
		r := along(c, worst, -1)
		fr := f(r)
		switch {
		case fr < s[0].v:
			e := along(c, worst, -2)
			if fe := f(e); fe < fr {
				s[d] = vertex{e, fe}
			} else {
				s[d] = vertex{r, fr}
			}
		case fr < s[d-1].v:
			s[d] = vertex{r, fr}
		default:
			in := along(c, worst, 0.5)
			if fi := f(in); fi < s[d].v {
				s[d] = vertex{in, fi}
				continue
			}
			for i := 1; i <= d; i++ {
				s[i].p = along(s[0].p, s[i].p, 0.5)
				s[i].v = f(s[i].p)
			}
		}
	}
	best := s[0]
	for _, v := range s[1:] {
		if v.v < best.v {
			best = v
		}
	}
	m.p = best.p
	m.c = m.coefficients()
	return m
}
