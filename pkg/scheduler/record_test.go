package scheduler_test

import (
	"strings"
	"testing"
	"time"

	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/scheduler"
)

// TestRecordsKeepTheirInstants checks that the engine's compact records
// give back every instant to the nanosecond, in the clock's location, and
// that Restore refuses a record whose instants they cannot hold.
func TestRecordsKeepTheirInstants(t *testing.T) {
	zone := time.FixedZone("UTC+5:30", 5*3600+1800)
	c := &fakeClock{t: time.Date(2026, 3, 4, 5, 6, 7, 123456789, zone)}
	cfg := scheduler.DefaultConfig("gpu", c)
	cfg.RateLimit = 0
	e, err := scheduler.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Step(scheduler.NodeSet{Node: api.Node{Name: "n1", GPUs: 4}}); err != nil {
		t.Fatal(err)
	}
	submitted := c.t
	if err := e.Step(scheduler.JobSubmitted{ID: "a", Spec: api.JobSpec{MinWorkers: 1, MaxWorkers: 2}}); err != nil {
		t.Fatal(err)
	}
	c.t = c.t.Add(1500 * time.Millisecond)
	started := c.t
	if _, err := e.Tick(); err != nil {
		t.Fatal(err)
	}
	c.t = c.t.Add(time.Minute + time.Nanosecond)
	if err := e.Step(scheduler.JobCompleted{ID: "a"}); err != nil {
		t.Fatal(err)
	}
	j, _ := e.Job("a")
	for _, tc := range []struct {
		name      string
		got, want time.Time
	}{{"submitted", j.Submitted, submitted}, {"first started", j.FirstStarted, started},
		{"last started", j.LastStarted, started}, {"grown", j.Grown, started}, {"finished", j.Finished, c.t}} {
		if !tc.got.Equal(tc.want) || tc.got.Location() != zone {
			t.Errorf("%s = %v, want %v in %v", tc.name, tc.got, tc.want, zone)
		}
	}

	// The records round-trip through Restore, and the zero time stays zero.
	r, err := scheduler.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	waiting := scheduler.Job{ID: "w", Spec: api.JobSpec{MinWorkers: 1, MaxWorkers: 1}, Phase: api.PhaseWaiting,
		Submitted: time.Date(1700, 1, 1, 0, 0, 0, 1, time.UTC)}
	if err := r.Restore([]scheduler.Job{j, waiting}); err != nil {
		t.Fatal(err)
	}
	back, _ := r.Job("a")
	if !back.Submitted.Equal(j.Submitted) || !back.Finished.Equal(j.Finished) || !back.FirstStarted.Equal(j.FirstStarted) {
		t.Errorf("restored %v %v %v, want %v %v %v", back.Submitted, back.FirstStarted, back.Finished, j.Submitted, j.FirstStarted, j.Finished)
	}
	w, _ := r.Job("w")
	if !w.Submitted.Equal(waiting.Submitted) || !w.FirstStarted.IsZero() || !w.Finished.IsZero() {
		t.Errorf("restored waiting job: submitted %v, first started %v, finished %v", w.Submitted, w.FirstStarted, w.Finished)
	}

	for _, bad := range []scheduler.Job{
		{ID: "old", Spec: api.JobSpec{MinWorkers: 1, MaxWorkers: 1}, Submitted: time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{ID: "late", Spec: api.JobSpec{MinWorkers: 1, MaxWorkers: 1}, Submitted: submitted, Grown: time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		err := r.Restore([]scheduler.Job{bad})
		if err == nil || !strings.Contains(err.Error(), "job "+string(bad.ID)) || !strings.Contains(err.Error(), "outside the years 1678 to 2262") {
			t.Errorf("Restore(%s) = %v, want it refused for its time", bad.ID, err)
		}
		if _, ok := r.Job(bad.ID); ok {
			t.Errorf("Restore kept %s", bad.ID)
		}
	}
}
