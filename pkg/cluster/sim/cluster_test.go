package sim

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vodascheduler/voda/pkg/api"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// perfect scales linearly: one step takes 1/n seconds on n GPUs.
func perfect(shape []int) float64 {
	n := 0
	for _, g := range shape {
		n += g
	}
	return 1 / float64(n)
}

func at(d time.Duration) time.Time { return t0.Add(d) }

func nodes(names ...api.NodeName) []api.NodeName { return names }

func TestJobFinishesAfterRestartDelayAndWork(t *testing.T) {
	c := New(30 * time.Second)
	if err := c.Add(Job{ID: "a", Steps: 100, StepSeconds: perfect}); err != nil {
		t.Fatal(err)
	}
	must(t, c.Apply(api.Action{Kind: api.ActionStart, Job: "a", To: 2, Nodes: nodes("n1", "n1")}, t0))
	got, ok := c.NextFinish()
	if want := at(30*time.Second + 50*time.Second); !ok || !got.Equal(want) {
		t.Fatalf("NextFinish = %v, %v; want %v", got, ok, want)
	}
	if c.Allocated() != 2 {
		t.Errorf("allocated %d, want 2", c.Allocated())
	}
	if ids := c.Finished(at(79 * time.Second)); len(ids) != 0 {
		t.Errorf("finished early: %v", ids)
	}
	if diff := cmp.Diff([]api.JobID{"a"}, c.Finished(at(80*time.Second))); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
	if c.Allocated() != 0 {
		t.Errorf("allocated %d after finishing, want 0", c.Allocated())
	}
}

func TestHaltKeepsProgressAndEveryChangeRestarts(t *testing.T) {
	c := New(10 * time.Second)
	must(t, c.Add(Job{ID: "a", Steps: 100, StepSeconds: perfect}))
	must(t, c.Apply(api.Action{Kind: api.ActionStart, Job: "a", To: 1, Nodes: nodes("n1")}, t0))
	// 10 s idle, then 40 steps by 50 s.
	must(t, c.Apply(api.Action{Kind: api.ActionHalt, Job: "a", From: 1}, at(50*time.Second)))
	if got := c.Remaining("a", at(time.Hour)); got != 60 {
		t.Errorf("remaining after halt %v, want 60", got)
	}
	if _, ok := c.NextFinish(); ok {
		t.Error("a halted job has a predicted finish")
	}
	// Resume on 4 GPUs across two nodes: 10 s idle, then 60 × 0.25 s.
	must(t, c.Apply(api.Action{Kind: api.ActionStart, Job: "a", To: 4, Nodes: nodes("n1", "n1", "n2", "n2")}, at(100*time.Second)))
	if got, _ := c.NextFinish(); !got.Equal(at(125 * time.Second)) {
		t.Errorf("finish %v, want +125s", got.Sub(t0))
	}
	// A migration at 115 s (5 of 15 s of work done: 20 steps) idles it again.
	must(t, c.Apply(api.Action{Kind: api.ActionMigrate, Job: "a", From: 4, To: 4, Nodes: nodes("n3", "n3", "n2", "n2")}, at(115*time.Second)))
	if got, _ := c.NextFinish(); !got.Equal(at(115*time.Second + 10*time.Second + 10*time.Second)) {
		t.Errorf("finish after migration %v, want +135s", got.Sub(t0))
	}
}

func TestApplyRejectsBadActions(t *testing.T) {
	c := New(0)
	must(t, c.Add(Job{ID: "a", Steps: 1, StepSeconds: perfect}))
	cases := map[string]api.Action{
		"unknown job":           {Kind: api.ActionStart, Job: "zz", To: 1, Nodes: nodes("n1")},
		"nodes do not match":    {Kind: api.ActionStart, Job: "a", To: 2, Nodes: nodes("n1")},
		"unknown kind":          {Kind: "Explode", Job: "a", To: 1, Nodes: nodes("n1")},
		"no throughput on zero": {Kind: api.ActionStart, Job: "a", To: 0},
	}
	for name, a := range cases {
		if err := c.Apply(a, t0); err == nil {
			t.Errorf("%s: accepted %+v", name, a)
		}
	}
	if err := c.Add(Job{ID: "a", Steps: 1, StepSeconds: perfect}); err == nil {
		t.Error("added a job twice")
	}
	if err := c.Add(Job{ID: "b", Steps: 0, StepSeconds: perfect}); err == nil {
		t.Error("added a job with no work")
	}
}

func TestShapes(t *testing.T) {
	if diff := cmp.Diff([]int{3, 1}, Shape(nodes("b", "a", "b", "b"), 1)); diff != "" {
		t.Errorf("Shape (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{12, 4}, Shape(nodes("b", "a", "b", "b"), 4)); diff != "" {
		t.Errorf("Shape of 4-GPU workers (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{4, 4, 2}, PackedShape(10, 4)); diff != "" {
		t.Errorf("PackedShape (-want,+got):\n%s", diff)
	}
	if PackedShape(0, 4) != nil {
		t.Error("PackedShape(0) is not empty")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestRemoveReturnsWorkLeft(t *testing.T) {
	c := New(10 * time.Second)
	if err := c.Add(Job{ID: "a", Steps: 100, StepSeconds: func([]int) float64 { return 1 }}); err != nil {
		t.Fatal(err)
	}
	if err := c.Apply(api.Action{Kind: api.ActionStart, Job: "a", To: 2, Nodes: []api.NodeName{"n", "n"}}, t0); err != nil {
		t.Fatal(err)
	}
	left, err := c.Remove("a", t0.Add(40*time.Second)) // 10 s restart, then 30 steps
	if err != nil || left != 70 || c.Allocated() != 0 {
		t.Fatalf("left %v, err %v, allocated %d", left, err, c.Allocated())
	}
	if _, ok := c.NextFinish(); ok {
		t.Error("a removed job still finishes")
	}
	if _, err := c.Remove("a", t0); err == nil {
		t.Error("removed twice")
	}
	// Back in with the work left.
	if err := c.Add(Job{ID: "a", Steps: left, StepSeconds: func([]int) float64 { return 1 }}); err != nil {
		t.Fatal(err)
	}
	if err := c.Apply(api.Action{Kind: api.ActionStart, Job: "a", To: 1, Nodes: []api.NodeName{"n"}}, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	// 10 s of restart, then 70 steps: the old prediction is not taken.
	if at, ok := c.NextFinish(); !ok || !at.Equal(t0.Add(140*time.Second)) {
		t.Errorf("finishes at %v (%v), want t0+140s", at, ok)
	}
}

// TestPlanSegments: a job with a plan goes at each segment's rate in turn,
// keeps the last one past its end, and a Restart plans again from the work
// done, after the restart delay.
func TestPlanSegments(t *testing.T) {
	c := New(10 * time.Second)
	var asked []float64
	plan := func(shape []int, done float64) ([]Segment, float64) {
		asked = append(asked, done)
		n := float64(shape[0])
		// Work 0–10 at n per second, 10–15 at 2n, then 4n.
		return []Segment{{End: 10, Rate: n}, {End: 15, Rate: 2 * n}, {End: 15, Rate: 4 * n}}, 1 / n
	}
	must(t, c.Add(Job{ID: "a", Steps: 35, Plan: plan}))
	must(t, c.Apply(api.Action{Kind: api.ActionStart, Job: "a", To: 1, Nodes: nodes("n1")}, t0))
	// 10 s idle, 10 s for 10, 2.5 s for 5, 5 s for 20: done at 27.5 s.
	if got, _ := c.NextFinish(); !got.Equal(at(27500 * time.Millisecond)) {
		t.Errorf("NextFinish %v, want 27.5 s", got.Sub(t0))
	}
	for _, tc := range []struct {
		at   time.Duration
		done float64
	}{{5 * time.Second, 0}, {15 * time.Second, 5}, {21 * time.Second, 12}, {25 * time.Second, 25}} {
		if got := c.Done("a", at(tc.at)); got != tc.done {
			t.Errorf("done at %v: %v, want %v", tc.at, got, tc.done)
		}
	}
	if got := c.SecondsLeft("a", at(25*time.Second)); got != 2.5 {
		t.Errorf("seconds left at 25 s: %v, want 2.5", got)
	}
	// At 21 s (12 done) a restart: idle until 31 s, then 3 at 2 per
	// second, 20 at 4 per second: done at 37.5 s.
	must(t, c.Restart("a", at(21*time.Second)))
	if diff := cmp.Diff([]float64{0, 12}, asked); diff != "" {
		t.Errorf("plans asked at (-want,+got):\n%s", diff)
	}
	if got, _ := c.NextFinish(); !got.Equal(at(37500 * time.Millisecond)) {
		t.Errorf("NextFinish after the restart %v, want 37.5 s", got.Sub(t0))
	}
	if c.StepSeconds("a") != 1 {
		t.Errorf("step seconds %v, want the plan's 1", c.StepSeconds("a"))
	}
	if err := c.Restart("b", t0); err == nil {
		t.Error("restarting an unknown job: no error")
	}
	must(t, c.Add(Job{ID: "bad", Steps: 1, Plan: func([]int, float64) ([]Segment, float64) { return []Segment{{End: 1, Rate: 0}}, 1 }}))
	if err := c.Apply(api.Action{Kind: api.ActionStart, Job: "bad", To: 1, Nodes: nodes("n2")}, t0); err == nil {
		t.Error("a plan without speed: no error")
	}
}
