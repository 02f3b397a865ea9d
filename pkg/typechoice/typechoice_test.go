package typechoice_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/vodascheduler/voda/pkg/typechoice"
)

var now = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

var types = []typechoice.Type{{Name: "k80", GPUs: 8}, {Name: "v100", GPUs: 8}}

func TestNewJobsGoWhereTheyFinishFirst(t *testing.T) {
	cfg := typechoice.DefaultConfig()
	// An idle cluster: a job 3× faster on V100 goes there.
	d := typechoice.Assign(types, []typechoice.Job{{ID: "a", Types: []string{"k80", "v100"}, Speed: map[string]float64{"k80": 1, "v100": 3}, Work: 3600}}, now, typechoice.ByWork, cfg)
	if d["a"].Type != "v100" || d["a"].Moved || d["a"].Reason != "v100: estimated done in 3m there, against 8m on k80" {
		t.Errorf("idle cluster: %+v", d["a"])
	}
	// V100 busy with a long single-type job submitted earlier: where
	// jobs are served by arrival the short job takes the idle K80s; where
	// the least work goes first, it goes ahead of the long job on V100.
	jobs := []typechoice.Job{
		{ID: "busy", Types: []string{"v100"}, Work: 8 * 36000, Current: "v100", Ran: true, Submitted: now.Add(-time.Hour)},
		{ID: "a", Types: []string{"v100", "k80"}, Speed: map[string]float64{"k80": 1, "v100": 3}, Work: 3600, Submitted: now},
	}
	d = typechoice.Assign(types, jobs, now, typechoice.ByArrival, cfg)
	if d["a"].Type != "k80" || d["busy"].Type != "v100" {
		t.Errorf("busy V100, by arrival: %+v", d)
	}
	d = typechoice.Assign(types, jobs, now, typechoice.ByWork, cfg)
	if d["a"].Type != "v100" {
		t.Errorf("busy V100, by work: %+v", d)
	}
	// Jobs fill the faster type until the slower one drains as soon:
	// equal jobs on one GPU of each type, V100 twice as fast.
	one := []typechoice.Type{{Name: "k80", GPUs: 1}, {Name: "v100", GPUs: 1}}
	var three []typechoice.Job
	for _, id := range []string{"j1", "j2", "j3"} {
		three = append(three, typechoice.Job{ID: id, Types: []string{"k80", "v100"}, Speed: map[string]float64{"k80": 1, "v100": 2}, Work: 1000})
	}
	d = typechoice.Assign(one, three, now, typechoice.ByWork, cfg)
	if d["j1"].Type != "v100" || d["j2"].Type != "k80" || d["j3"].Type != "v100" {
		t.Errorf("three equal jobs: %+v", d)
	}
}

func TestMovesNeedHysteresisAndDwell(t *testing.T) {
	cfg := typechoice.DefaultConfig()
	base := typechoice.Job{ID: "a", Types: []string{"k80", "v100"}, Speed: map[string]float64{"k80": 1, "v100": 1.1},
		Work: 36000, Current: "k80", Ran: true, Since: now.Add(-time.Hour)}
	// 10% faster elsewhere is not worth a move.
	if d := typechoice.Assign(types, []typechoice.Job{base}, now, typechoice.ByWork, cfg)["a"]; d.Type != "k80" || d.Moved || !strings.Contains(d.Reason, "less than the 20%") {
		t.Errorf("small gain: %+v", d)
	}
	// 3× faster is.
	fast := base
	fast.Speed = map[string]float64{"k80": 1, "v100": 3}
	if d := typechoice.Assign(types, []typechoice.Job{fast}, now, typechoice.ByWork, cfg)["a"]; d.Type != "v100" || !d.Moved || !strings.Contains(d.Reason, "moved from k80 to v100") {
		t.Errorf("large gain: %+v", d)
	}
	// Not within MinDwell of its last move.
	fast.Since = now.Add(-time.Minute)
	if d := typechoice.Assign(types, []typechoice.Job{fast}, now, typechoice.ByWork, cfg)["a"]; d.Type != "k80" || d.Moved {
		t.Errorf("within dwell: %+v", d)
	}
	// No GPUs on any accepted type: it stays.
	if d := typechoice.Assign([]typechoice.Type{{Name: "k80"}, {Name: "v100"}}, []typechoice.Job{base}, now, typechoice.ByWork, cfg)["a"]; d.Type != "k80" || d.Moved {
		t.Errorf("no GPUs: %+v", d)
	}
}

// TestNoBouncing applies the rule round after round to random jobs whose
// work shrinks as they run: every job moves at most once per MinDwell, only
// to a type it accepts, and moves stay few (at most half the jobs,
// two per job).
func TestNoBouncing(t *testing.T) {
	for _, order := range []string{typechoice.ByWork, typechoice.ByArrival} {
		t.Run(order, func(t *testing.T) { noBouncing(t, order) })
	}
}

func noBouncing(t *testing.T, order string) {
	cfg := typechoice.DefaultConfig()
	r := rand.New(rand.NewPCG(3, 4))
	tys := []typechoice.Type{{Name: "k80", GPUs: 16}, {Name: "p100", GPUs: 8}, {Name: "v100", GPUs: 4}}
	names := []string{"k80", "p100", "v100"}
	var jobs []typechoice.Job
	for i := range 60 {
		j := typechoice.Job{ID: fmt.Sprintf("j%02d", i), Work: float64(600 + r.IntN(100_000)), Speed: map[string]float64{},
			Submitted: now.Add(-time.Duration(r.IntN(3600)) * time.Second)}
		for _, n := range names {
			if r.IntN(4) > 0 || n == "k80" {
				j.Types = append(j.Types, n)
				j.Speed[n] = 0.5 + 3*r.Float64()
			}
		}
		jobs = append(jobs, j)
	}
	lastMove := map[string]time.Time{}
	perJob := map[string]int{}
	moves := 0
	at := now
	for round := range 200 {
		d := typechoice.Assign(tys, jobs, at, order, cfg)
		for i := range jobs {
			j := &jobs[i]
			got := d[j.ID]
			if !contains(j.Types, got.Type) {
				t.Fatalf("round %d: %s put on %s, which it does not accept", round, j.ID, got.Type)
			}
			if got.Type != j.Current {
				if j.Current != "" {
					if lm, ok := lastMove[j.ID]; ok && at.Sub(lm) < cfg.MinDwell {
						t.Fatalf("round %d: %s moved again after %s", round, j.ID, at.Sub(lm))
					}
					if !got.Moved {
						t.Fatalf("%s changed type without Moved", j.ID)
					}
					lastMove[j.ID] = at
					perJob[j.ID]++
					moves++
				}
				j.Current, j.Since, j.Ran = got.Type, at, true
			}
			j.Work = max(j.Work-60*j.Speed[j.Current], 1)
		}
		at = at.Add(time.Minute)
	}
	if moves > len(jobs)/2 {
		t.Errorf("%d moves for %d jobs in 200 rounds", moves, len(jobs))
	}
	for id, n := range perJob {
		if n > 2 {
			t.Errorf("%s moved %d times", id, n)
		}
	}
	t.Logf("%d moves", moves)
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestOrderOf(t *testing.T) {
	for p, want := range map[string]string{"FIFO": typechoice.ByArrival, "Elastic-FIFO": typechoice.ByArrival, "FfDLOptimizer": typechoice.ByArrival,
		"SRJF": typechoice.ByWork, "HeSRPT": typechoice.ByWork, "ElasticTiresias": typechoice.ByWork, "AFS-L": typechoice.ByWork} {
		if got := typechoice.OrderOf(p); got != want {
			t.Errorf("OrderOf(%s) = %s, want %s", p, got, want)
		}
	}
}
