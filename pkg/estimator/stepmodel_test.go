package estimator_test

import (
	"math"
	"reflect"
	"testing"

	"github.com/vodascheduler/voda/pkg/estimator"
)

// pollux is a step time of Pollux's form with known coefficients: the
// truth the fits below must find again.
type pollux struct{ ag, bg, al, bl, an, bn, gamma float64 }

func (p pollux) seconds(gpus, nodes, batch, perGPUMax int) float64 {
	acc := max((batch+gpus*perGPUMax-1)/(gpus*perGPUMax), 1)
	tg := p.ag + p.bg*float64(batch)/float64(gpus*acc)
	ts := 0.0
	switch {
	case gpus == 1:
	case nodes == 1:
		ts = p.al + p.bl*float64(gpus-2)
	default:
		ts = p.an + p.bn*float64(gpus-2)
	}
	return float64(acc-1)*tg + math.Pow(math.Pow(tg, p.gamma)+math.Pow(ts, p.gamma), 1/p.gamma)
}

func (p pollux) ratio(gpus, nodes, initial, batch, perGPUMax int) float64 {
	return p.seconds(gpus, nodes, batch, perGPUMax) * float64(initial) / (p.seconds(gpus, nodes, initial, perGPUMax) * float64(batch))
}

// samples are the truth's steps on packed nodes of 4 GPUs, at batches
// from initial up, doubling, where each GPU gets at least 4 samples.
func (p pollux) samples(initial, most, perGPUMax int) []estimator.StepSample {
	var out []estimator.StepSample
	for _, g := range []int{1, 2, 4, 8, 16} {
		for b := initial; b <= most; b *= 2 {
			if b >= 4*g {
				out = append(out, estimator.StepSample{GPUs: g, Nodes: (g + 3) / 4, Batch: b, Seconds: p.seconds(g, (g+3)/4, b, perGPUMax)})
			}
		}
	}
	return out
}

func TestFitStepModelFindsTheRatios(t *testing.T) {
	for _, tc := range []struct {
		name  string
		truth pollux
	}{
		// Steps mostly synchronisation on several GPUs: a larger batch
		// nearly free there.
		{"sync-bound", pollux{ag: 0.01, bg: 0.002, al: 0.2, bl: 0.01, an: 0.8, bn: 0.05, gamma: 3}},
		// Steps mostly computation: a larger batch costs in proportion.
		{"compute-bound", pollux{ag: 0.002, bg: 0.05, al: 0.005, bl: 0.0005, an: 0.01, bn: 0.001, gamma: 1.5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const initial, most, perGPUMax = 64, 1024, 128
			m := estimator.FitStepModel(tc.truth.samples(initial, most, perGPUMax), perGPUMax)
			if !m.Known() {
				t.Fatal("fitted model not known")
			}
			for _, g := range []int{2, 4, 8, 16} {
				for _, b := range []int{128, 256, 1024} {
					nodes := (g + 3) / 4
					want := tc.truth.ratio(g, nodes, initial, b, perGPUMax)
					if got := m.Ratio(g, nodes, initial, b); math.Abs(got-want) > 0.05*want {
						t.Errorf("%d GPUs, batch %d: ratio %.3f, want %.3f", g, b, got, want)
					}
				}
			}
		})
	}
	// The two truths differ where it matters: the fixed model cannot be
	// right for both.
	sync := pollux{ag: 0.01, bg: 0.002, al: 0.2, bl: 0.01, an: 0.8, bn: 0.05, gamma: 3}.ratio(16, 4, 64, 256, 128)
	compute := pollux{ag: 0.002, bg: 0.05, al: 0.005, bl: 0.0005, an: 0.01, bn: 0.001, gamma: 1.5}.ratio(16, 4, 64, 256, 128)
	fixed := estimator.BatchTime(16, 64, 256)
	if !(sync < 0.5 && compute > 0.85 && sync < fixed && fixed < compute) {
		t.Fatalf("the test's truths do not bracket BatchTime's %v: %v, %v", fixed, sync, compute)
	}
}

func TestFitStepModelWithoutSamples(t *testing.T) {
	bad := []estimator.StepSample{
		{GPUs: 0, Nodes: 1, Batch: 64, Seconds: 1},
		{GPUs: 1, Nodes: 1, Batch: 0, Seconds: 1},
		{GPUs: 1, Nodes: 1, Batch: 64, Seconds: math.NaN()},
		{GPUs: 1, Nodes: 1, Batch: 64, Seconds: -1},
		{GPUs: 1, Nodes: 1, Batch: 64, Seconds: math.Inf(1)},
	}
	if m := estimator.FitStepModel(bad, 0); m.Known() {
		t.Error("a model fitted to no usable sample")
	}
	if (estimator.StepModel{}).Known() {
		t.Error("the zero model is known")
	}
}

func TestStepModelsWaitForDistinctPoints(t *testing.T) {
	truth := pollux{ag: 0.01, bg: 0.002, al: 0.2, bl: 0.01, an: 0.8, bn: 0.05, gamma: 3}
	var s estimator.StepModels
	add := func(g, b int) {
		s.Observe("c", 128, estimator.StepSample{GPUs: g, Nodes: (g + 3) / 4, Batch: b, Seconds: truth.seconds(g, (g+3)/4, b, 128)})
	}
	add(1, 64)
	add(2, 64)
	add(2, 64) // the same point again
	s.Observe("c", 128, estimator.StepSample{GPUs: 4, Nodes: 1, Batch: 64, Seconds: math.NaN()})
	s.Observe("c", 128, estimator.StepSample{GPUs: 0, Nodes: 1, Batch: 64, Seconds: 1})
	if s.Model("c").Known() {
		t.Fatalf("known after 2 distinct points (and a repeat and bad samples), want %d", estimator.MinStepPoints)
	}
	for _, g := range []int{4, 8, 16} {
		for _, b := range []int{64, 128, 256} {
			add(g, b)
		}
	}
	m := s.Model("c")
	if !m.Known() {
		t.Fatal("not known after 11 distinct points")
	}
	if s.Model("other").Known() {
		t.Error("another category has a model")
	}
	// Learned from the points: at 16 GPUs four times the batch costs
	// little more per step.
	want := truth.ratio(16, 4, 64, 256, 128)
	if got := m.Ratio(16, 4, 64, 256); math.Abs(got-want) > 0.05*want {
		t.Errorf("16 GPUs, batch 256: ratio %.3f, want %.3f", got, want)
	}
}

func TestBatchRangeTime(t *testing.T) {
	// A batch four times the initial one makes an epoch worth 0.91 of
	// one at the initial batch (noise scale 1 856 at M0 = 64). With
	// steps that cost the same at any batch, epochs at 256 take a quarter
	// of the time: the largest batch is best. With steps that cost in
	// proportion to the batch, no larger batch saves time: the initial
	// one is best.
	const noise = 1856
	free := estimator.BatchRange{Initial: 64, Max: 256, Time: func(n, b int) float64 { return 64 / float64(b) }}
	same := estimator.BatchRange{Initial: 64, Max: 256, Time: func(n, b int) float64 { return 1 }}
	var f estimator.Fit
	if b, _, ok := f.Best(free, 4, 1, noise); !ok || b.Global != 256 {
		t.Errorf("steps that cost the same at any batch: batch %d (%v), want 256", b.Global, ok)
	}
	if b, _, ok := f.Best(same, 4, 1, noise); !ok || b.Global != 64 {
		t.Errorf("steps that cost in proportion: batch %d (%v), want 64", b.Global, ok)
	}
	if got, want := free.TimeAt(4, 128), 0.5; got != want {
		t.Errorf("TimeAt = %v, want the range's Time, %v", got, want)
	}
	if got, want := (estimator.BatchRange{Initial: 64, Max: 256}).TimeAt(4, 128), estimator.BatchTime(4, 64, 128); got != want {
		t.Errorf("TimeAt without Time = %v, want BatchTime's %v", got, want)
	}
	a := f.Adapt(free, 1, 4, noise)
	if got := a.Relative(4, 64); !(got > 0 && got < 1) {
		t.Errorf("Relative at the initial batch with free steps: %v, want in (0, 1)", got)
	}
}

// A job's steps given again replace what it gave before; a retired job's
// steps stay in its category; a job that moves category leaves the old
// one; what is saved loads back into the same model.
func TestStepModelsReplace(t *testing.T) {
	truth := pollux{ag: 0.01, bg: 0.002, al: 0.2, bl: 0.01, an: 0.8, bn: 0.05, gamma: 3}
	step := func(g, b int, scale float64) estimator.StepSample {
		return estimator.StepSample{GPUs: g, Nodes: (g + 3) / 4, Batch: b, Seconds: scale * truth.seconds(g, (g+3)/4, b, 128)}
	}
	var s estimator.StepModels
	// The status sums a job's reports up: each time, every point so far.
	s.Replace("j1", "c", 128, []estimator.StepSample{step(4, 64, 1)})
	s.Replace("j1", "c", 128, []estimator.StepSample{step(4, 64, 1), step(4, 128, 1)})
	if s.Model("c").Known() {
		t.Fatalf("known after one job's 2 distinct points given twice, want %d", estimator.MinStepPoints)
	}
	s.Replace("j1", "c", 128, []estimator.StepSample{step(4, 64, 1), step(4, 128, 1), step(8, 64, 1), step(8, 256, 1), step(16, 256, 1)})
	if !s.Model("c").Known() {
		t.Fatal("not known after 5 distinct points")
	}
	saved := s.Saved()["c"]
	if len(saved.Points) != 5 || saved.PerGPUMax != 128 {
		t.Fatalf("saved %+v, want 5 points of one step each, per-GPU limit 128", saved)
	}
	for _, p := range saved.Points {
		if p.Steps != 1 {
			t.Errorf("point %+v counts %d steps: a job given again counts once", p, p.Steps)
		}
	}

	// A second job at the same points, twice as slow: each point is the
	// mean of the two jobs' means, 1.5 × the truth.
	s.Replace("j2", "c", 128, []estimator.StepSample{step(4, 64, 2), step(4, 128, 2), step(8, 64, 2)})
	s.Retire("j1")
	s.Retire("j2")
	s.Retire("unknown") // nothing to keep
	for _, p := range s.Saved()["c"].Points {
		want, steps := truth.seconds(p.GPUs, p.Nodes, p.Batch, 128), 1
		if p.GPUs < 8 || p.Batch == 64 {
			want, steps = 1.5*want, 2
		}
		if math.Abs(p.Seconds-want) > 1e-12*want || p.Steps != steps {
			t.Errorf("retired point %+v, want %.6f s over %d steps", p, want, steps)
		}
	}

	// A job moving to another category (another GPU type) leaves what it
	// measured in the old one and counts anew in the new one.
	s.Replace("j3", "c", 128, []estimator.StepSample{step(32, 512, 1)})
	s.Replace("j3", "d", 128, []estimator.StepSample{step(32, 256, 3)})
	s.Replace("j3", "d", 128, []estimator.StepSample{step(32, 256, 3), step(32, 512, 3)})
	if n := len(s.Saved()["c"].Points); n != 6 {
		t.Errorf("c has %d points after j3 left it, want 6 (its own kept)", n)
	}
	if got := s.Saved()["d"].Points; len(got) != 2 || got[0].Steps != 1 || got[1].Steps != 1 {
		t.Errorf("d has points %+v, want j3's 2, one step each", got)
	}

	// Saved, loaded: the same model, nothing of bad points.
	out := s.Saved()
	c := out["c"]
	c.Points = append(c.Points,
		estimator.StepPoint{GPUs: 0, Nodes: 1, Batch: 64, Seconds: 1, Steps: 1},
		estimator.StepPoint{GPUs: 2, Nodes: 3, Batch: 64, Seconds: 1, Steps: 1},
		estimator.StepPoint{GPUs: 2, Nodes: 1, Batch: 64, Seconds: math.Inf(1), Steps: 1},
		estimator.StepPoint{GPUs: 2, Nodes: 1, Batch: 64, Seconds: 1, Steps: 0})
	out["c"] = c
	out["bad"] = estimator.SavedSteps{PerGPUMax: -1, Points: c.Points}
	var back estimator.StepModels
	back.Load(out)
	if got := back.Saved(); len(got) != 2 || !reflect.DeepEqual(got["c"], s.Saved()["c"]) || !reflect.DeepEqual(got["d"], s.Saved()["d"]) {
		t.Errorf("loaded back %+v, want %+v without the bad points and category", got, s.Saved())
	}
	if !back.Model("c").Known() {
		t.Fatal("loaded category c has no model")
	}
	want := truth.ratio(16, 4, 64, 256, 128)
	if got := back.Model("c").Ratio(16, 4, 64, 256); math.Abs(got-want) > 0.05*want {
		t.Errorf("loaded model: 16 GPUs, batch 256: ratio %.3f, want %.3f", got, want)
	}
	if back.Model("d").Known() {
		t.Error("d is known from one point")
	}
}

// BenchmarkAdapt times a job's curves when it reports (16 workers, batch
// 64 to 4 096), with the fixed shares, with a learned batch model, which
// searches every batch of the grid, and with that model's steps bounding
// the curve where nothing was measured, as the controller builds them.
func BenchmarkAdapt(b *testing.B) {
	truth := pollux{ag: 0.01, bg: 0.002, al: 0.2, bl: 0.01, an: 0.8, bn: 0.05, gamma: 3}
	m := estimator.FitStepModel(truth.samples(64, 4096, 128), 128)
	fit := estimator.New()
	fit.Replace("j", "c", []estimator.Observation{{Workers: 1, Seconds: 100, Weight: 1}, {Workers: 4, Seconds: 30, Weight: 1}, {Workers: 8, Seconds: 17, Weight: 1}})
	f := fit.Estimate("j", "c")
	placed := func(n int) (int, int) { return n, (n + 3) / 4 }
	// The same steps learned by a category, which measured several
	// batches at 1, 2, 4, 8 and 16 workers: the model follows them there.
	var steps estimator.StepModels
	for _, x := range truth.samples(64, 4096, 128) {
		steps.Observe("c", 128, x)
	}
	for _, name := range []string{"fixed-shares", "learned", "learned-bounded", "learned-measured"} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				r := estimator.BatchRange{Initial: 64, Max: 4096, PerGPUMax: 128}
				switch name {
				case "learned", "learned-bounded":
					r.Time = m.BatchModel(64, placed)
				case "learned-measured":
					r.Time = steps.BatchModel("c", 64, 16, placed)
				}
				if name == "learned-bounded" {
					r.Steps = func(n int) float64 {
						gpus, nodes := placed(n)
						return m.Seconds(gpus, nodes, 64)
					}
				}
				f.Adapt(r, 1, 16, 2000)
			}
		})
	}
}

// BenchmarkStepModelFit times a category's first fit and a refit when a
// point is added, at 12 points.
func BenchmarkStepModelFit(b *testing.B) {
	truth := pollux{ag: 0.01, bg: 0.002, al: 0.2, bl: 0.01, an: 0.8, bn: 0.05, gamma: 3}
	all := truth.samples(64, 512, 128)
	b.Logf("%d points", len(all))
	b.Run("first", func(b *testing.B) {
		for b.Loop() {
			estimator.FitStepModel(all, 128)
		}
	})
	b.Run("refit", func(b *testing.B) {
		for range b.N {
			b.StopTimer()
			var s estimator.StepModels
			s.Replace("j", "c", 128, all[:len(all)-1])
			b.StartTimer()
			s.Replace("j", "c", 128, all)
		}
	})
}

// A category's first fit, to its first few points, is one of many exact
// fits, some of them degenerate (a synchronisation cost that dwarfs every
// step over several nodes, steps that cost the same at every batch).
// Refitted only from there, the simplex stayed in that hollow while the
// points grew to show a per-sample cost. The steps below are the Pollux
// traces' YOLOv3 on 4-GPU nodes, from its profile, in an order that
// showed it: its epoch at eight times the batch on two GPUs was taken to
// cost half of one at its own batch, not the same. Each refit now also
// starts afresh, and the better fit is kept.
func TestStepModelsLeaveADegenerateFirstFit(t *testing.T) {
	steps := []estimator.StepSample{
		{GPUs: 28, Nodes: 7, Batch: 504, Seconds: 2.576}, {GPUs: 24, Nodes: 6, Batch: 96, Seconds: 1.221},
		{GPUs: 36, Nodes: 9, Batch: 144, Seconds: 1.461}, {GPUs: 52, Nodes: 13, Batch: 208, Seconds: 1.380},
		{GPUs: 12, Nodes: 3, Batch: 504, Seconds: 3.473}, {GPUs: 40, Nodes: 10, Batch: 480, Seconds: 2.130},
		{GPUs: 64, Nodes: 16, Batch: 512, Seconds: 1.483}, {GPUs: 16, Nodes: 4, Batch: 512, Seconds: 2.279},
		{GPUs: 2, Nodes: 1, Batch: 64, Seconds: 1.330}, {GPUs: 12, Nodes: 3, Batch: 60, Seconds: 1.246},
		{GPUs: 2, Nodes: 1, Batch: 512, Seconds: 10.413}, {GPUs: 48, Nodes: 12, Batch: 480, Seconds: 1.882},
		{GPUs: 8, Nodes: 2, Batch: 512, Seconds: 4.229}, {GPUs: 16, Nodes: 4, Batch: 64, Seconds: 1.174},
		{GPUs: 24, Nodes: 6, Batch: 504, Seconds: 2.228}, {GPUs: 36, Nodes: 9, Batch: 504, Seconds: 2.028},
		{GPUs: 4, Nodes: 1, Batch: 512, Seconds: 6.230}, {GPUs: 52, Nodes: 13, Batch: 468, Seconds: 1.882},
		{GPUs: 20, Nodes: 5, Batch: 500, Seconds: 2.640},
	}
	var s estimator.StepModels
	for _, x := range steps {
		s.Observe("yolov3", 0, x)
	}
	got := s.Model("yolov3").Ratio(2, 1, 64, 512)
	if want := 10.413 * 64 / (1.330 * 512); math.Abs(got/want-1) > 0.1 {
		t.Errorf("on 2 GPUs an epoch at batch 512 takes %.3f of one at 64, want %.3f", got, want)
	}
}

// Two batches measured at one GPU count give the line through them there,
// before the category has enough points for its model; one batch, or
// another GPU count, gives none.
func TestStepModelsLineFromTwoBatches(t *testing.T) {
	var s estimator.StepModels
	s.Observe("c", 0, estimator.StepSample{GPUs: 1, Nodes: 1, Batch: 256, Seconds: 0.0074})
	if _, ok := s.Line("c", 1, 1); ok {
		t.Fatal("a line from one batch")
	}
	s.Observe("c", 0, estimator.StepSample{GPUs: 1, Nodes: 1, Batch: 4096, Seconds: 0.0134})
	l, ok := s.Line("c", 1, 1)
	if !ok || s.Model("c").Known() {
		t.Fatalf("line %v, model known %v", ok, s.Model("c").Known())
	}
	if want := 0.006 / 3840; math.Abs(l.PerSample-want) > 1e-12 || math.Abs(l.PerStep-(0.0074-256*want)) > 1e-9 {
		t.Errorf("line %g + %g·batch, want %g + %g·batch", l.PerStep, l.PerSample, 0.0074-256*want, want)
	}
	// An epoch at 4096 takes 16 times fewer steps of 0.0134/0.0074 the time.
	if got, want := l.Ratio(256, 4096), 0.0134/(16*0.0074); math.Abs(got-want) > 1e-9 {
		t.Errorf("an epoch at 4096 takes %.4f of one at 256, want %.4f", got, want)
	}
	if got := (estimator.StepLine{}).Ratio(256, 4096); got != 1 {
		t.Errorf("the zero line's ratio is %g, want 1", got)
	}
	if _, ok := s.Line("c", 2, 1); ok {
		t.Error("a line at a GPU count nothing was measured at")
	}
	// Lines gives the same line at every worker count, none elsewhere.
	lines := s.Lines("c", 3, func(n int) (int, int) { return n, 1 })
	if len(lines) != 4 || lines[1] != l || lines[2] != (estimator.StepLine{}) || lines[3] != (estimator.StepLine{}) {
		t.Errorf("Lines = %+v, want the line at 1 worker only", lines)
	}
	if got := s.Lines("c", 3, func(n int) (int, int) { return n + 1, 1 }); got != nil {
		t.Errorf("Lines where nothing was measured = %+v, want nil", got)
	}
	// A time falling with the batch says nothing about the fixed part.
	s.Observe("d", 0, estimator.StepSample{GPUs: 1, Nodes: 1, Batch: 64, Seconds: 2})
	s.Observe("d", 0, estimator.StepSample{GPUs: 1, Nodes: 1, Batch: 128, Seconds: 1})
	if _, ok := s.Line("d", 1, 1); ok {
		t.Error("a line whose per-sample time is negative")
	}
}

func TestStepModelsBatchModelFollowsWhatWasMeasured(t *testing.T) {
	// Steps of a form the model cannot follow: computation costs twice as
	// much per sample beyond 128 samples a GPU.
	truth := func(gpus, batch int) float64 {
		local := float64(batch) / float64(gpus)
		compute := 0.01 + 0.0002*min(local, 128) + 0.0004*max(local-128, 0)
		return compute + 0.005*float64(gpus-1)
	}
	var s estimator.StepModels
	placed := func(n int) (int, int) { return n, 1 }
	if s.BatchModel("c", 64, 8, placed) != nil {
		t.Fatal("a batch model for a category never measured")
	}
	observe := func(g, b int) {
		s.Observe("c", 0, estimator.StepSample{GPUs: g, Nodes: 1, Batch: b, Seconds: truth(g, b)})
	}
	observe(1, 64)
	observe(2, 64)
	if s.BatchModel("c", 64, 8, placed) != nil {
		t.Fatal("a batch model before the step model is known")
	}
	for _, b := range []int{64, 256, 1024} {
		observe(4, b)
	}
	m := s.Model("c")
	if !m.Known() {
		t.Fatal("step model not known after 5 points")
	}
	v := s.Version("c")
	model := s.BatchModel("c", 64, 8, placed)
	measured := func(b int) float64 { return truth(4, b) * 64 / (truth(4, 64) * float64(b)) }
	// At the batches measured, the measurements.
	for _, b := range []int{256, 1024} {
		if got, want := model(4, b), measured(b); math.Abs(got-want) > 1e-9*want {
			t.Errorf("4 workers, batch %d: %.6f, want the measured %.6f (the model says %.6f)", b, got, want, m.Ratio(4, 1, 64, b))
		}
	}
	// Between and beyond them, the model times the measured ratios to it.
	res := func(b int) float64 { return math.Log(truth(4, b) / m.Seconds(4, 1, b)) }
	between := res(256) + (math.Log(512)-math.Log(256))/(math.Log(1024)-math.Log(256))*(res(1024)-res(256))
	for _, tc := range []struct {
		batch int
		log   float64
	}{{512, between}, {4096, res(1024)}} {
		want := m.Ratio(4, 1, 64, tc.batch) * math.Exp(tc.log-res(64))
		if got := model(4, tc.batch); math.Abs(got-want) > 1e-9*want {
			t.Errorf("4 workers, batch %d: %.6f, want %.6f", tc.batch, got, want)
		}
	}
	// One batch measured, none, or beyond most: the model.
	for _, n := range []int{2, 3, 9} {
		if got, want := model(n, 512), m.Ratio(n, 1, 64, 512); got != want {
			t.Errorf("%d workers: %.6f, want the model's %.6f", n, got, want)
		}
	}
	// Later steps change the version, not a batch model already made.
	observe(2, 512)
	if s.Version("c") == v {
		t.Error("the version did not change with a new point")
	}
	if got, want := model(2, 512), m.Ratio(2, 1, 64, 512); got != want {
		t.Errorf("a step observed later changed the batch model made before: %.6f, want %.6f", got, want)
	}
	if got, want := s.BatchModel("c", 64, 8, placed)(2, 512), truth(2, 512)*64/(truth(2, 64)*512); math.Abs(got-want) > 1e-9*want {
		t.Errorf("2 workers after the new point: %.6f, want the measured %.6f", got, want)
	}
	// Load keeps versions moving: a category loaded again is not taken
	// for the one before.
	before := s.Version("c")
	s.Load(s.Saved())
	if s.Version("c") <= before {
		t.Errorf("version %d after Load, %d before", s.Version("c"), before)
	}
	// So does a deferred refit, which changes the model after the steps.
	d := estimator.StepModels{Deferred: true}
	var steps []estimator.StepSample
	for _, b := range []int{64, 256, 1024} {
		steps = append(steps, estimator.StepSample{GPUs: 4, Nodes: 1, Batch: b, Seconds: truth(4, b)})
	}
	d.Replace("j", "c", 0, steps)
	f, ok := d.Due("c")
	if !ok {
		t.Fatal("no refit due after three points")
	}
	before = d.Version("c")
	f.Run()
	d.Install(f)
	if !d.Model("c").Known() || d.Version("c") == before {
		t.Errorf("after the refit: model known %v, version %d (%d before)", d.Model("c").Known(), d.Version("c"), before)
	}
}
