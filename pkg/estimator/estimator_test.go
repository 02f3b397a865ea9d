package estimator_test

import (
	"math"
	"testing"

	"github.com/vodascheduler/voda/pkg/estimator"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol*math.Abs(b) }

// truth is a job whose step takes 2 s at one worker, 10 % serial, 1 % per
// extra worker.
var truth = estimator.Fit{OneWorker: 2, Shape: estimator.Shape{Serial: 0.1, Comm: 0.01}}

func TestFitRecoversTheCurveFromThreeCounts(t *testing.T) {
	e := estimator.New()
	for _, n := range []int{2, 4, 8} {
		e.Observe("j", "resnet", estimator.Observation{Workers: n, Seconds: truth.Seconds(n), Weight: 10})
	}
	f := e.Estimate("j", "resnet")
	if f.Counts != 3 || !near(f.OneWorker, 2, 0.02) || !near(f.Shape.Serial, 0.1, 0.1) || !near(f.Shape.Comm, 0.01, 0.3) {
		t.Fatalf("fit %+v, want T1 2, serial 0.1, comm 0.01", f)
	}
	// Counts never observed, one worker included, are predicted.
	for _, n := range []int{1, 3, 16} {
		if got, want := f.Seconds(n), truth.Seconds(n); !near(got, want, 0.03) {
			t.Errorf("T(%d) = %.3f, want %.3f", n, got, want)
		}
	}
	if got := f.Remaining(100); !near(got, 200, 0.02) {
		t.Errorf("remaining of 100 steps at one worker %.1f, want 200", got)
	}
}

// A job seen only at 4 workers: T1 follows from that count through the
// default shape; no one-worker run is assumed.
func TestOneCountUsesThePriorShape(t *testing.T) {
	e := estimator.New()
	e.Observe("j", "bert", estimator.Observation{Workers: 4, Seconds: 0.5})
	f := e.Estimate("j", "bert")
	if f.Shape != estimator.DefaultShape || f.Counts != 1 {
		t.Fatalf("fit %+v", f)
	}
	if !near(f.Seconds(4), 0.5, 1e-9) {
		t.Errorf("T(4) %.4f, want the observed 0.5", f.Seconds(4))
	}
	if s := f.Shape.Speedup(8); !(s > 4 && s < 8) {
		t.Errorf("default S(8) = %.2f, want sub-linear", s)
	}
}

func TestTwoCountsFitTheSerialFraction(t *testing.T) {
	e := estimator.New()
	e.Default = estimator.Shape{Serial: 0.3, Comm: 0.01} // wrong serial, right comm
	for _, n := range []int{2, 8} {
		e.Observe("j", "c", estimator.Observation{Workers: n, Seconds: truth.Seconds(n)})
	}
	f := e.Estimate("j", "c")
	if !near(f.Shape.Serial, 0.1, 0.06) || !near(f.Seconds(4), truth.Seconds(4), 0.01) {
		t.Errorf("fit %+v; T(4) %.3f, want %.3f", f, f.Seconds(4), truth.Seconds(4))
	}
}

func TestCategoryHistoryStartsNewJobs(t *testing.T) {
	e := estimator.New()
	if f := e.Estimate("new", "gpt"); f.Known() || f.Remaining(10) >= 0 || f.Shape != estimator.DefaultShape {
		t.Fatalf("nothing known yet, got %+v", f)
	}
	for _, n := range []int{1, 2, 4} {
		e.Observe("a", "gpt", estimator.Observation{Workers: n, Seconds: truth.Seconds(n)})
	}
	e.Finish("a")
	f := e.Estimate("b", "gpt")
	if !f.Known() || !near(f.OneWorker, 2, 0.02) || f.Counts != 0 {
		t.Errorf("a new job of the category: %+v, want the finished job's T1 2", f)
	}
	// Other categories learn nothing from it; forgotten jobs teach nothing.
	if f := e.Estimate("x", "other"); f.Known() {
		t.Errorf("another category: %+v", f)
	}
	e.Observe("c", "other", estimator.Observation{Workers: 2, Seconds: 9})
	e.Forget("c")
	if f := e.Estimate("y", "other"); f.Known() {
		t.Errorf("a forgotten job taught its category: %+v", f)
	}
}

func TestBadObservationsAreIgnored(t *testing.T) {
	e := estimator.New()
	for _, o := range []estimator.Observation{
		{Workers: 0, Seconds: 1}, {Workers: -2, Seconds: 1}, {Workers: 2, Seconds: 0},
		{Workers: 2, Seconds: -1}, {Workers: 2, Seconds: math.NaN()}, {Workers: 2, Seconds: math.Inf(1)},
	} {
		e.Observe("j", "c", o)
	}
	if f := e.Estimate("j", "c"); f.Known() || f.Counts != 0 {
		t.Errorf("bad observations made a fit: %+v", f)
	}
	e.Observe("j", "c", estimator.Observation{Workers: 2, Seconds: 1, Weight: math.NaN()})
	if f := e.Estimate("j", "c"); !f.Known() || math.IsNaN(f.OneWorker) {
		t.Errorf("a NaN weight: %+v", f)
	}
}

func BenchmarkEstimateThreeCounts(b *testing.B) {
	e := estimator.New()
	i := 0
	for b.Loop() {
		i++
		e.Observe("j", "c", estimator.Observation{Workers: 2 + i%3, Seconds: truth.Seconds(2 + i%3)})
		_ = e.Estimate("j", "c")
	}
}

func TestHistoriesSurviveASaveAndLoad(t *testing.T) {
	e := estimator.New()
	for _, n := range []int{1, 2, 4} {
		e.Observe("a", "gpt", estimator.Observation{Workers: n, Seconds: truth.Seconds(n)})
	}
	e.Finish("a")
	saved := e.Histories()
	if h := saved["gpt"]; h.Jobs != 1 || !near(h.OneWorker, 2, 0.02) {
		t.Fatalf("saved %+v", saved)
	}
	saved["junk"] = estimator.History{OneWorker: -1, Jobs: 3}
	saved["nan"] = estimator.History{OneWorker: math.NaN(), Jobs: 1}
	f := estimator.New()
	f.SetHistories(saved)
	if got := f.Estimate("b", "gpt"); !got.Known() || !near(got.OneWorker, 2, 0.02) {
		t.Errorf("after loading: %+v", got)
	}
	if h := f.Histories(); len(h) != 1 {
		t.Errorf("nonsense entries were kept: %+v", h)
	}
}

// A job that loses speed when it crosses a node boundary (YOLOv3-like:
// 2.94 on 4 workers in one node, 1.58 on 8 in two): the smooth model
// cannot bend that way, so the curve the policies get is the measured one
// where measured, and beyond the drop the model scaled down by it (or one
// doubling explored at the measured efficiency, where that is more).
func TestSpeedupFollowsTheMeasurementsAndCarriesADrop(t *testing.T) {
	const t1 = 2.0
	measured := map[int]float64{1: 1, 2: 1.95, 4: 2.94, 8: 1.58}
	e := estimator.New()
	for _, n := range []int{1, 2, 4, 8} {
		e.Observe("y", "yolov3", estimator.Observation{Workers: n, Seconds: t1 / measured[n], Weight: 5})
	}
	f := e.Estimate("y", "yolov3")
	for n, want := range measured {
		if got := f.Speedup(n); !near(got, want*f.OneWorker/t1, 1e-9) {
			t.Errorf("S(%d) = %.3f, want the measured %.3f (T1 fitted %.3f)", n, got, want*f.OneWorker/t1, f.OneWorker)
		}
	}
	// 16 and 32 were never observed: the model's value, scaled by how far
	// the measurement at 8 fell below the model there, or, up to twice the
	// largest count measured, S(8)·(n/8)^0.8 where that is more (one
	// doubling is worth trying).
	ratio := f.Speedup(8) / f.Shape.Speedup(8)
	if ratio >= 1 {
		t.Fatalf("the model does not overestimate S(8) (ratio %.2f): the test curve is too smooth", ratio)
	}
	explore := f.Speedup(8) * math.Pow(2, estimator.ExploreExponent)
	for _, n := range []int{12, 16, 32} {
		want := max(f.Shape.Speedup(n)*ratio, f.Speedup(8)*math.Pow(float64(min(n, 16))/8, estimator.ExploreExponent))
		if got := f.Speedup(n); !near(got, want, 1e-9) {
			t.Errorf("S(%d) = %.3f, want %.3f (model %.3f × %.2f, explore up to %.3f)", n, got, want, f.Shape.Speedup(n), ratio, explore)
		}
		if f.Speedup(n) >= 2.94 {
			t.Errorf("S(%d) = %.2f: predicted above what one node measured, after a measured drop", n, f.Speedup(n))
		}
	}
	// Below the smallest observed count, and for a measurement above the
	// model, the model stands (never raised); above it, one doubling keeps
	// S(4)·(n/4)^0.8 at least.
	e2 := estimator.New()
	e2.Observe("z", "fast", estimator.Observation{Workers: 4, Seconds: 0.4})
	g := e2.Estimate("z", "fast")
	if got, want := g.Speedup(2), g.Shape.Speedup(2); got != want {
		t.Errorf("S(2) below the only count = %.3f, want the model's %.3f", got, want)
	}
	for _, n := range []int{6, 8, 16} {
		want := max(g.Shape.Speedup(n), g.Speedup(4)*math.Pow(float64(min(n, 8))/4, estimator.ExploreExponent))
		if got := g.Speedup(n); !near(got, want, 1e-9) {
			t.Errorf("S(%d) above the only count = %.3f, want %.3f (model %.3f)", n, got, want, g.Shape.Speedup(n))
		}
	}
	if g.Speedup(8) <= g.Shape.Speedup(8) {
		t.Errorf("S(8) = %.3f: the default model (%.3f) was not raised to explore one doubling", g.Speedup(8), g.Shape.Speedup(8))
	}
	if got := g.Speedup(0); got != 0 {
		t.Errorf("S(0) = %v, want 0", got)
	}
}

// A job that waits, never having run, takes up its category's history as
// soon as another job of the category finishes.
func TestAWaitingJobLearnsFromAJobThatFinishesLater(t *testing.T) {
	e := estimator.New()
	if f := e.Estimate("waiting", "gpt"); f.Known() {
		t.Fatalf("nothing known yet, got %+v", f)
	}
	for _, n := range []int{1, 2, 4} {
		e.Observe("a", "gpt", estimator.Observation{Workers: n, Seconds: truth.Seconds(n)})
	}
	e.Finish("a")
	if f := e.Estimate("waiting", "gpt"); !f.Known() || !near(f.OneWorker, 2, 0.02) {
		t.Errorf("after a job of its category finished, the waiting job's fit is %+v, want T1 2", f)
	}
}

// A job that ran at one worker has its T1 measured, whatever the model's
// fit of its other counts says.
func TestTheTimeAtOneWorkerIsT1(t *testing.T) {
	e := estimator.New()
	seconds := map[int]float64{1: 3, 2: 1.6, 4: 1.0, 8: 1.9} // a drop across nodes
	for n, s := range seconds {
		e.Observe("y", "yolov3", estimator.Observation{Workers: n, Seconds: s})
	}
	f := e.Estimate("y", "yolov3")
	if f.OneWorker != 3 {
		t.Errorf("T1 = %v, want the measured 3", f.OneWorker)
	}
	if got := f.Remaining(10); got != 30 {
		t.Errorf("remaining time of 10 units = %v, want 30", got)
	}
}

// The category's curve carries what one job measured to the next: a new
// job seen only at 4 workers gets the drop at 8 its category measured (the
// model alone would predict a gain), and its T1 from the curve.
func TestTheCategoryCurveCarriesADropToTheNextJob(t *testing.T) {
	e := estimator.New()
	speedup := map[int]float64{1: 1, 2: 1.95, 4: 2.94, 8: 1.58}
	for n, s := range speedup {
		e.Observe("first", "yolov3", estimator.Observation{Workers: n, Seconds: 2 / s})
	}
	e.Finish("first")
	h := e.Histories()["yolov3"]
	if len(h.Curve) != 4 || h.Curve[3].Workers != 8 || !near(h.Curve[3].Factor, 1/1.58, 1e-9) || h.Curve[3].Jobs != 1 {
		t.Fatalf("category curve %+v, want T(n)/T1 at 1, 2, 4 and 8", h.Curve)
	}
	// The next job runs twice as slowly per unit (another dataset) and
	// has reported only at 4 workers.
	e.Observe("next", "yolov3", estimator.Observation{Workers: 4, Seconds: 4 / 2.94})
	f := e.Estimate("next", "yolov3")
	if !near(f.OneWorker, 4, 1e-9) {
		t.Errorf("T1 = %.3f, want 4 from the category's curve at 4 workers", f.OneWorker)
	}
	if got := f.Speedup(8); !near(got, 1.58, 1e-9) {
		t.Errorf("S(8) = %.3f, want the category's 1.58 (the model says %.2f)", got, f.Shape.Speedup(8))
	}
	if got := f.Speedup(16); got >= 2.94 {
		t.Errorf("S(16) = %.2f: above what one node measured, after the category's drop", got)
	}
}

// A job whose T1 only the model guessed (it never ran at one worker and
// its category has no curve there) starts its category's curve when there
// is none: its times are right relative to one another, so the next job
// anchors on them and agrees with it. Once the category has a curve, such a
// job adds nothing to it (its guessed T1 would bend it).
func TestAGuessedT1StartsACurveAndAddsToNone(t *testing.T) {
	e := estimator.New()
	for _, n := range []int{4, 8} {
		e.Observe("a", "bert", estimator.Observation{Workers: n, Seconds: truth.Seconds(n)})
	}
	guessed := e.Estimate("a", "bert").OneWorker
	e.Finish("a")
	h := e.Histories()["bert"]
	if h.Jobs != 1 || len(h.Curve) != 2 || h.Curve[0].Workers != 4 || h.Curve[1].Workers != 8 {
		t.Fatalf("history %+v, want the job counted and its curve at 4 and 8", h)
	}
	if !near(h.Curve[1].Factor, truth.Seconds(8)/guessed, 1e-9) {
		t.Errorf("factor at 8 = %.4f, want T(8)/guessed T1 = %.4f", h.Curve[1].Factor, truth.Seconds(8)/guessed)
	}
	// The next job, seen at 4 only, anchors on the curve: the same T1 and
	// the first job's measured ratio between 4 and 8.
	e.Observe("b", "bert", estimator.Observation{Workers: 4, Seconds: truth.Seconds(4)})
	f := e.Estimate("b", "bert")
	if !near(f.OneWorker, guessed, 1e-9) {
		t.Errorf("T1 of the next job %.4f, want the category's %.4f", f.OneWorker, guessed)
	}
	if got, want := f.Speedup(8)/f.Speedup(4), truth.Seconds(4)/truth.Seconds(8); !near(got, want, 1e-9) {
		t.Errorf("S(8)/S(4) = %.4f, want the measured %.4f", got, want)
	}
	// A third job, guessed too and at other counts, leaves the curve be.
	for _, n := range []int{2, 16} {
		e.Observe("c", "bert", estimator.Observation{Workers: n, Seconds: 3 * truth.Seconds(n)})
	}
	e.Finish("c")
	if h := e.Histories()["bert"]; h.Jobs != 2 || len(h.Curve) != 2 {
		t.Errorf("history %+v, want two jobs and the first job's curve only", h)
	}
}

func TestSavedCurvesAreCheckedOnLoad(t *testing.T) {
	e := estimator.New()
	e.SetHistories(map[string]estimator.History{"gpt": {OneWorker: 2, Serial: 0.1, Jobs: 2, Curve: []estimator.CurvePoint{
		{Workers: 1, Factor: 1, Jobs: 2}, {Workers: 4, Factor: 0.3, Jobs: 2},
		{Workers: 0, Factor: 1, Jobs: 1}, {Workers: 8, Factor: -1, Jobs: 1}, {Workers: 16, Factor: math.Inf(1), Jobs: 1}, {Workers: 32, Factor: 0.1, Jobs: 0},
	}}})
	h := e.Histories()["gpt"]
	if len(h.Curve) != 2 || h.Curve[1] != (estimator.CurvePoint{Workers: 4, Factor: 0.3, Jobs: 2}) {
		t.Errorf("loaded curve %+v, want the two sound points", h.Curve)
	}
	if got := e.Estimate("b", "gpt").Speedup(4); !near(got, 1/0.3, 1e-9) {
		t.Errorf("S(4) of a new job = %.3f, want the loaded 3.33", got)
	}
}

// A job that still speeds up between two counts where the prior's curve
// has turned down (Amdahl, 4 % serial, no communication cost, against the
// default's best count of 14): the prior's cost gives way, and T1 is the
// job's, not the time at 11 workers.
func TestTwoCountsPastThePriorsBestCount(t *testing.T) {
	amdahl := estimator.Fit{OneWorker: 2.6, Shape: estimator.Shape{Serial: 0.04}}
	e := estimator.New()
	for _, n := range []int{11, 22} {
		e.Observe("j", "cifar", estimator.Observation{Workers: n, Seconds: amdahl.Seconds(n)})
	}
	f := e.Estimate("j", "cifar")
	if !near(f.OneWorker, 2.6, 0.05) {
		t.Errorf("T1 %.3f, want 2.6 (fit %+v)", f.OneWorker, f.Shape)
	}
	if got, want := f.Speedup(11), amdahl.Shape.Speedup(11); !near(got, want, 0.05) {
		t.Errorf("S(11) = %.2f, want %.2f", got, want)
	}
	// Two counts the prior follows keep its communication cost.
	e.Observe("k", "cifar", estimator.Observation{Workers: 2, Seconds: 2 * estimator.DefaultShape.Speedup(1) * 0.55})
	e.Observe("k", "cifar", estimator.Observation{Workers: 4, Seconds: 2 * 0.55 * estimator.DefaultShape.Speedup(2) / estimator.DefaultShape.Speedup(4)})
	if g := e.Estimate("k", "cifar"); g.Shape.Comm != estimator.DefaultShape.Comm {
		t.Errorf("fit %+v, want the default's communication cost kept", g.Shape)
	}
}

// Points measured only where a curve is flat fit a shape with nearly all
// work serial; T1 is held at least at the time at the smallest count times
// that count to the exploration exponent.
func TestAGuessedT1HasAFloor(t *testing.T) {
	e := estimator.New()
	for _, p := range []struct {
		n int
		s float64
	}{{14, 0.188}, {28, 0.213}, {40, 0.205}} {
		e.Observe("j", "cifar", estimator.Observation{Workers: p.n, Seconds: p.s})
	}
	f := e.Estimate("j", "cifar")
	floor := 0.188 * math.Pow(14, estimator.ExploreExponent)
	if f.OneWorker < floor*(1-1e-9) {
		t.Errorf("T1 %.3f, want at least %.3f", f.OneWorker, floor)
	}
	if s := f.Speedup(14); s < math.Pow(14, estimator.ExploreExponent)*(1-1e-9) {
		t.Errorf("S(14) = %.2f, want at least 14^%.1f", s, estimator.ExploreExponent)
	}
	// A T1 measured at one worker is never floored.
	e.Observe("k", "cifar", estimator.Observation{Workers: 1, Seconds: 0.5})
	e.Observe("k", "cifar", estimator.Observation{Workers: 14, Seconds: 0.4})
	if g := e.Estimate("k", "cifar"); g.OneWorker != 0.5 {
		t.Errorf("T1 %.3f, want the measured 0.5", g.OneWorker)
	}
}

// A curve started by a job whose T1 was guessed is put on the measured
// scale by the first job of its category that ran at one worker, and jobs
// that anchor on it afterwards get the true T1.
func TestAOneWorkerJobRescalesAGuessedCurve(t *testing.T) {
	e := estimator.New()
	for _, n := range []int{4, 8} {
		e.Observe("a", "bert", estimator.Observation{Workers: n, Seconds: truth.Seconds(n)})
	}
	guessed := e.Estimate("a", "bert").OneWorker
	if near(guessed, 2, 0.05) {
		t.Fatalf("the test needs a guess off the truth, got T1 %.3f", guessed)
	}
	e.Finish("a")
	if h := e.Histories()["bert"]; !h.Guessed {
		t.Fatalf("history %+v, want the curve marked guessed", h)
	}
	// Saved and loaded, the mark stays.
	f := estimator.New()
	f.SetHistories(e.Histories())
	if h := f.Histories()["bert"]; !h.Guessed {
		t.Fatalf("loaded history %+v lost the mark", h)
	}
	for _, n := range []int{1, 4} {
		f.Observe("b", "bert", estimator.Observation{Workers: n, Seconds: truth.Seconds(n)})
	}
	f.Finish("b")
	h := f.Histories()["bert"]
	if h.Guessed {
		t.Errorf("history %+v still guessed", h)
	}
	for _, p := range h.Curve {
		if want := truth.Seconds(p.Workers) / 2; !near(p.Factor, want, 1e-9) {
			t.Errorf("factor at %d = %.4f, want T(n)/T1 = %.4f", p.Workers, p.Factor, want)
		}
	}
	f.Observe("c", "bert", estimator.Observation{Workers: 8, Seconds: truth.Seconds(8)})
	if got := f.Estimate("c", "bert").OneWorker; !near(got, 2, 1e-9) {
		t.Errorf("T1 of a job anchored on the rescaled curve %.4f, want 2", got)
	}
	// Without a count in common, the mean T1s set the ratio.
	g := estimator.New()
	g.Observe("a", "bert", estimator.Observation{Workers: 8, Seconds: truth.Seconds(8)})
	g.Observe("a", "bert", estimator.Observation{Workers: 16, Seconds: truth.Seconds(16)})
	g.Finish("a")
	g.Observe("b", "bert", estimator.Observation{Workers: 1, Seconds: truth.Seconds(1)})
	g.Finish("b")
	h = g.Histories()["bert"]
	if h.Guessed || !near(h.OneWorker, 2, 1e-9) {
		t.Errorf("history %+v, want a measured scale and T1 2", h)
	}
	for _, p := range h.Curve {
		if want := truth.Seconds(p.Workers) / 2; !near(p.Factor, want, 1e-9) {
			t.Errorf("factor at %d = %.4f, want %.4f", p.Workers, p.Factor, want)
		}
	}
}

// KnownAt is true at the counts the job or its category measured, and
// nowhere for a fit that knows nothing.
func TestKnownAtNamesTheMeasuredCounts(t *testing.T) {
	e := estimator.New()
	if f := e.Estimate("new", "yolov3"); f.KnownAt(1) || f.KnownAt(4) {
		t.Error("a job nothing is known of has a known count")
	}
	for _, n := range []int{1, 2, 8} {
		e.Observe("first", "yolov3", estimator.Observation{Workers: n, Seconds: 2 / float64(n)})
	}
	e.Finish("first")
	e.Observe("next", "yolov3", estimator.Observation{Workers: 3, Seconds: 0.8})
	f := e.Estimate("next", "yolov3")
	for n := range 10 {
		if want := n == 1 || n == 2 || n == 3 || n == 8; f.KnownAt(n) != want {
			t.Errorf("KnownAt(%d) = %v, want %v", n, f.KnownAt(n), want)
		}
	}
}

// A job measured at 4 workers whose steps, by its category's step model,
// take half as long again at 8 as at 4 (a job that first spans two nodes
// there): the fit's shape expects more than 1.3 times the speedup at 4,
// and the bound holds it at 4's times 2/3. Where the job was measured, and
// with no step model or one that says nothing, the curve is the fit's.
func TestAStepModelBoundsTheCurveWhereNothingWasMeasured(t *testing.T) {
	e := estimator.New()
	e.Observe("j", "yolo", estimator.Observation{Workers: 4, Seconds: truth.Seconds(4), Weight: 5})
	f := e.Estimate("j", "yolo")
	steps := func(n int) float64 {
		if n <= 4 {
			return 1 / float64(n)
		}
		return 1.5 / 4
	}
	s4 := f.Speedup(4)
	if got := f.Bounded(4, steps); got != s4 {
		t.Errorf("Bounded(4) = %v where measured, want the measured %v", got, s4)
	}
	if !(f.Speedup(8) > 1.3*s4) {
		t.Fatalf("the fit expects %v at 8 workers against %v at 4: the case needs one that grows", f.Speedup(8), s4)
	}
	if got, want := f.Bounded(8, steps), s4/1.5; !near(got, want, 1e-12) {
		t.Errorf("Bounded(8) = %v, want the speedup at 4 times 4's step over 8's, %v", got, want)
	}
	// Never raised: a step model faster than the fit leaves the fit.
	fast := func(n int) float64 { return 1 / (float64(n) * float64(n)) }
	if got := f.Bounded(8, fast); got != f.Speedup(8) {
		t.Errorf("Bounded(8) with a faster step model = %v, want the fit's %v", got, f.Speedup(8))
	}
	// Below the smallest count measured there is nothing to scale from.
	if got := f.Bounded(2, steps); got != f.Speedup(2) {
		t.Errorf("Bounded(2) = %v, want the fit's %v below every count measured", got, f.Speedup(2))
	}
	for name, st := range map[string]func(int) float64{
		"none": nil,
		"zero": func(int) float64 { return 0 },
		"inf":  func(n int) float64 { return math.Inf(1) },
		"nan":  func(n int) float64 { return math.NaN() },
	} {
		if got := f.Bounded(8, st); got != f.Speedup(8) {
			t.Errorf("Bounded(8) with step model %s = %v, want the fit's %v", name, got, f.Speedup(8))
		}
	}
	// What the policies see of a job that adapts its batch is bounded too.
	r := estimator.BatchRange{Initial: 64, Max: 64}
	free := f.Adapt(r, 1, 8, -1)
	r.Steps = steps
	bounded := f.Adapt(r, 1, 8, -1)
	if got, want := bounded.Speedup(8)/bounded.Speedup(4), 1/1.5; !near(got, want, 1e-9) {
		t.Errorf("adapting at one batch: speedup at 8 over 4 = %v, want %v (unbounded %v)", got, want, free.Speedup(8)/free.Speedup(4))
	}
}
