package typechoice_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
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
	if d["a"].Type != "v100" || d["a"].Moved || d["a"].Reason != "v100: estimated done in 20m there, against 1h00m on k80" || d["a"].Done != 1200 {
		t.Errorf("idle cluster: %+v", d["a"])
	}
	// Every V100 held for ten hours by a job submitted earlier: where
	// jobs are served by arrival the short job takes the idle K80s; where
	// the least work goes first, it goes ahead of the long job on V100.
	jobs := []typechoice.Job{
		{ID: "busy", Types: []string{"v100"}, Work: 8 * 36000, Current: "v100", Ran: true, Submitted: now.Add(-time.Hour),
			Runs: map[string]typechoice.Run{"v100": {GPUs: 8, Speedup: 8}}},
		{ID: "a", Types: []string{"v100", "k80"}, Speed: map[string]float64{"k80": 1, "v100": 3}, Work: 3600, Submitted: now},
	}
	d = typechoice.Assign(types, jobs, now, typechoice.ByArrival, cfg)
	if d["a"].Type != "k80" || d["busy"].Type != "v100" || d["a"].Reason != "k80: estimated done in 1h00m there, against 10h20m on v100" {
		t.Errorf("busy V100, by arrival: %+v", d)
	}
	d = typechoice.Assign(types, jobs, now, typechoice.ByWork, cfg)
	if d["a"].Type != "v100" || d["a"].Done != 1200 {
		t.Errorf("busy V100, by work: %+v", d)
	}
	// Equal jobs on one GPU of each type, V100 twice as fast, served by
	// arrival: the second waits for the first on V100 rather than run as
	// long on K80 (it runs fastest there, and the K80 would not save a
	// fifth); the third takes the K80.
	one := []typechoice.Type{{Name: "k80", GPUs: 1}, {Name: "v100", GPUs: 1}}
	var three []typechoice.Job
	for _, id := range []string{"j1", "j2", "j3"} {
		three = append(three, typechoice.Job{ID: id, Types: []string{"k80", "v100"}, Speed: map[string]float64{"k80": 1, "v100": 2}, Work: 1000})
	}
	d = typechoice.Assign(one, three, now, typechoice.ByArrival, cfg)
	if d["j1"].Type != "v100" || d["j2"].Type != "v100" || d["j3"].Type != "k80" {
		t.Errorf("three equal jobs, by arrival: %+v", d)
	}
	if want := "k80: estimated done in 17m there, against 25m on v100"; d["j3"].Reason != want {
		t.Errorf("j3's reason %q, want %q", d["j3"].Reason, want)
	}
	// Served by work, the three arrive together on the V100's list; the
	// first to pick would hold back the other two there, and takes the K80
	// (the same total: one job on the K80, two on the V100).
	d = typechoice.Assign(one, three, now, typechoice.ByWork, cfg)
	if d["j1"].Type != "k80" || d["j2"].Type != "v100" || d["j3"].Type != "v100" || d["j3"].Done != 1000 {
		t.Errorf("three equal jobs, by work: %+v", d)
	}
	if want := "k80: estimated done in 17m there, against 8m on v100; on v100 it would hold back 2 jobs"; d["j1"].Reason != want {
		t.Errorf("j1's reason %q, want %q", d["j1"].Reason, want)
	}
}

// TestCloseCallsGoToTheFastestType: a new job a little sooner done on a
// slower type still goes where it runs fastest.
func TestCloseCallsGoToTheFastestType(t *testing.T) {
	one := []typechoice.Type{{Name: "k80", GPUs: 1}, {Name: "v100", GPUs: 1}}
	jobs := []typechoice.Job{
		{ID: "ahead", Types: []string{"v100"}, Work: 330, Speed: map[string]float64{"v100": 1.1}, Current: "v100", Submitted: now.Add(-time.Hour)},
		{ID: "a", Types: []string{"k80", "v100"}, Speed: map[string]float64{"k80": 1, "v100": 1.1}, Work: 1000, Submitted: now},
	}
	d := typechoice.Assign(one, jobs, now, typechoice.ByArrival, typechoice.DefaultConfig())
	if want := "v100: estimated done in 20m there, against 17m on k80; it runs fastest on v100, and k80 would not save 20%"; d["a"].Type != "v100" || d["a"].Reason != want {
		t.Errorf("got %+v, want v100 because %q", d["a"], want)
	}
	// With ten times as much ahead, the K80 saves more than a fifth.
	jobs[0].Work = 3300
	if d := typechoice.Assign(one, jobs, now, typechoice.ByArrival, typechoice.DefaultConfig()); d["a"].Type != "k80" {
		t.Errorf("long wait: %+v", d["a"])
	}
}

// TestServiceOrderAsksALargerSaving: under least attained service a new
// job leaves its fastest type only when another costs three tenths less,
// not a fifth: the rule's list by work is furthest from those policies'
// order.
func TestServiceOrderAsksALargerSaving(t *testing.T) {
	one := []typechoice.Type{{Name: "k80", GPUs: 1}, {Name: "v100", GPUs: 1}}
	jobs := []typechoice.Job{
		{ID: "ahead", Types: []string{"v100"}, Work: 330, Speed: map[string]float64{"v100": 1.1}, Current: "v100", Ran: true, Submitted: now.Add(-time.Hour)},
		{ID: "a", Types: []string{"k80", "v100"}, Speed: map[string]float64{"k80": 0.625, "v100": 1.1}, Work: 1000, Submitted: now},
	}
	// On the V100 it would be done in 300 + 909 s and hold "ahead" back
	// by 909 s: 2118. On the K80 1600 s: a quarter less.
	cfg := typechoice.DefaultConfig()
	if d := typechoice.Assign(one, jobs, now, typechoice.ByService, cfg); d["a"].Type != "v100" {
		t.Errorf("a quarter less under least attained service: %+v", d["a"])
	}
	cfg.PreferService = cfg.Prefer
	if d := typechoice.Assign(one, jobs, now, typechoice.ByService, cfg); d["a"].Type != "k80" {
		t.Errorf("a quarter less, asking a fifth: %+v", d["a"])
	}
}

// TestAJobRunsOnItsOwnGPUs: a one-GPU job on eight idle K80s runs on one
// of them, not on all eight; it waits half an hour for a V100 three times
// as fast rather than run an hour on a K80.
func TestAJobRunsOnItsOwnGPUs(t *testing.T) {
	var jobs []typechoice.Job
	for i := range 8 {
		jobs = append(jobs, typechoice.Job{ID: fmt.Sprintf("r%d", i), Types: []string{"v100"}, Work: 3 * 1800, Speed: map[string]float64{"v100": 3},
			Current: "v100", Ran: true, Submitted: now.Add(-time.Hour)})
	}
	jobs = append(jobs, typechoice.Job{ID: "a", Types: []string{"k80", "v100"}, Speed: map[string]float64{"k80": 1, "v100": 3}, Work: 3600, Submitted: now})
	d := typechoice.Assign(types, jobs, now, typechoice.ByArrival, typechoice.DefaultConfig())
	if d["a"].Type != "v100" || d["a"].Done != 3000 {
		t.Errorf("%+v", d["a"])
	}
	// Asking for four GPUs at a speedup of 3, it would run 20 minutes on
	// the K80s: sooner than waiting.
	jobs[8].Runs = map[string]typechoice.Run{"k80": {GPUs: 4, Speedup: 3}, "v100": {GPUs: 4, Speedup: 3}}
	d = typechoice.Assign(types, jobs, now, typechoice.ByArrival, typechoice.DefaultConfig())
	if d["a"].Type != "k80" || d["a"].Done != 1200 {
		t.Errorf("four GPUs: %+v", d["a"])
	}
	// On an elastic type a job is counted growing into the idle
	// GPUs, up to its most.
	el := []typechoice.Type{{Name: "k80", GPUs: 8, Elastic: true}, {Name: "v100", GPUs: 8, Elastic: true}}
	jobs[8].Runs = map[string]typechoice.Run{"k80": {GPUs: 1, Speedup: 1, Most: 8, MostSpeedup: 6}, "v100": {GPUs: 1, Speedup: 1}}
	d = typechoice.Assign(el, jobs, now, typechoice.ByArrival, typechoice.DefaultConfig())
	if d["a"].Type != "k80" || d["a"].Done != 600 {
		t.Errorf("elastic: %+v", d["a"])
	}
	// A job that grew into every K80 holds only its request against the
	// jobs after it: they start beside it.
	grown := []typechoice.Job{
		{ID: "big", Types: []string{"k80"}, Work: 8000, Current: "k80", Submitted: now.Add(-time.Hour),
			Runs: map[string]typechoice.Run{"k80": {GPUs: 1, Speedup: 1, Most: 8, MostSpeedup: 8}}},
		{ID: "b", Types: []string{"k80", "v100"}, Speed: map[string]float64{"k80": 1, "v100": 0.5}, Work: 1000, Submitted: now},
	}
	d = typechoice.Assign(el, grown, now, typechoice.ByArrival, typechoice.DefaultConfig())
	if d["b"].Type != "k80" || d["b"].Done != 1000 {
		t.Errorf("beside a grown job: %+v", d)
	}
}

// TestShortJobsBackfill: on eight V100s a job of four runs for another
// hour and a job of eight, submitted earlier, waits for it. A new job of
// one GPU that is done within the hour runs beside them at once, as the
// policies backfill; one that would still run when the job of eight
// starts waits until that is done.
func TestShortJobsBackfill(t *testing.T) {
	rigid := []typechoice.Type{{Name: "k80", GPUs: 8}, {Name: "v100", GPUs: 8}}
	jobs := []typechoice.Job{
		{ID: "four", Types: []string{"v100"}, Work: 4 * 3600, Current: "v100", Ran: true, Submitted: now.Add(-2 * time.Hour),
			Runs: map[string]typechoice.Run{"v100": {GPUs: 4, Speedup: 4}}},
		{ID: "eight", Types: []string{"v100"}, Work: 8 * 3600, Current: "v100", Submitted: now.Add(-time.Hour),
			Runs: map[string]typechoice.Run{"v100": {GPUs: 8, Speedup: 8}}},
		{ID: "a", Types: []string{"k80", "v100"}, Speed: map[string]float64{"k80": 0.25, "v100": 1}, Work: 1800, Submitted: now},
	}
	d := typechoice.Assign(rigid, jobs, now, typechoice.ByArrival, typechoice.DefaultConfig())
	if d["a"].Type != "v100" || d["a"].Done != 1800 {
		t.Errorf("short job: %+v", d["a"])
	}
	// Two hours' work: it would hold a GPU the job of eight needs in an
	// hour, so it starts once that is done, at 2h (the K80s would take
	// 8h).
	jobs[2].Work = 7200
	d = typechoice.Assign(rigid, jobs, now, typechoice.ByArrival, typechoice.DefaultConfig())
	if d["a"].Type != "v100" || d["a"].Done != 4*3600 {
		t.Errorf("long job: %+v", d["a"])
	}
}

// TestElasticJobsShrinkToTheirLeast: on an elastic type every V100 is
// asked for by two long jobs of four GPUs that accept one; the policy
// shrinks them to start a new job, which the rule counts starting at
// once on the GPUs the requests leave it (its least, one), not after the
// long jobs. On a rigid type it waits for them and takes the K80s.
func TestElasticJobsShrinkToTheirLeast(t *testing.T) {
	long := func(id string) typechoice.Job {
		return typechoice.Job{ID: id, Types: []string{"v100"}, Work: 4 * 36000, Speed: map[string]float64{"v100": 1}, Current: "v100", Ran: true,
			Submitted: now.Add(-time.Hour), Runs: map[string]typechoice.Run{"v100": {GPUs: 4, Speedup: 4, Least: 1, LeastSpeedup: 1}}}
	}
	jobs := []typechoice.Job{long("l1"), long("l2"), {ID: "a", Types: []string{"v100", "k80"}, Speed: map[string]float64{"k80": 0.25, "v100": 1},
		Work: 3600, Submitted: now, Runs: map[string]typechoice.Run{"v100": {GPUs: 2, Speedup: 2, Least: 1, LeastSpeedup: 1}, "k80": {GPUs: 2, Speedup: 2, Least: 1, LeastSpeedup: 1}}}}
	el := []typechoice.Type{{Name: "k80", GPUs: 8, Elastic: true}, {Name: "v100", GPUs: 8, Elastic: true}}
	d := typechoice.Assign(el, jobs, now, typechoice.ByArrival, typechoice.DefaultConfig())
	if d["a"].Type != "v100" || d["a"].Done != 3600 {
		t.Errorf("elastic: %+v", d["a"])
	}
	rigid := []typechoice.Type{{Name: "k80", GPUs: 8}, {Name: "v100", GPUs: 8}}
	d = typechoice.Assign(rigid, jobs, now, typechoice.ByArrival, typechoice.DefaultConfig())
	if d["a"].Type != "k80" || d["a"].Done != 7200 {
		t.Errorf("rigid: %+v", d["a"])
	}
	// Its least ignored (the long jobs hold their requests), it would
	// wait ten hours on the V100s and take the K80s there too.
	for _, id := range []int{0, 1} {
		jobs[id].Runs = map[string]typechoice.Run{"v100": {GPUs: 4, Speedup: 4}}
	}
	d = typechoice.Assign(el, jobs, now, typechoice.ByArrival, typechoice.DefaultConfig())
	if d["a"].Type != "k80" || d["a"].Done != 7200 {
		t.Errorf("long jobs that cannot shrink: %+v", d["a"])
	}
}

// TestAJobDoesNotHoldBackJobsForLittle: a short job would be done a
// little sooner on a slow type, where it would go ahead of the job running
// there and three jobs waiting; on its fast type it waits behind two short
// jobs.
func TestAJobDoesNotHoldBackJobsForLittle(t *testing.T) {
	one := []typechoice.Type{{Name: "fast", GPUs: 1}, {Name: "slow", GPUs: 1}}
	jobs := []typechoice.Job{
		{ID: "f1", Types: []string{"fast"}, Speed: map[string]float64{"fast": 2}, Work: 600, Current: "fast"},
		{ID: "f2", Types: []string{"fast"}, Speed: map[string]float64{"fast": 2}, Work: 800, Current: "fast"},
		{ID: "r", Types: []string{"slow"}, Work: 3600, Current: "slow"},
		{ID: "w1", Types: []string{"slow"}, Work: 5000, Current: "slow"},
		{ID: "w2", Types: []string{"slow"}, Work: 6000, Current: "slow"},
		{ID: "w3", Types: []string{"slow"}, Work: 7000, Current: "slow"},
		{ID: "a", Types: []string{"fast", "slow"}, Speed: map[string]float64{"fast": 2, "slow": 1}, Work: 1000},
	}
	d := typechoice.Assign(one, jobs, now, typechoice.ByWork, typechoice.DefaultConfig())
	if d["a"].Type != "fast" || d["a"].Done != 1200 {
		t.Errorf("%+v", d["a"])
	}
	if want := "fast: estimated done in 20m there, against 17m on slow; on slow it would hold back 4 jobs"; d["a"].Reason != want {
		t.Errorf("reason %q, want %q", d["a"].Reason, want)
	}
	// Without the waiting jobs, and a third short job ahead of it on the
	// fast one, it still holds back the running job, which has more work
	// left and gives way to it, and stays on the fast type.
	jobs = slices.DeleteFunc(slices.Clone(jobs), func(j typechoice.Job) bool { return j.ID[0] == 'w' })
	jobs = append(jobs, typechoice.Job{ID: "f3", Types: []string{"fast"}, Speed: map[string]float64{"fast": 2}, Work: 900, Current: "fast"})
	d = typechoice.Assign(one, jobs, now, typechoice.ByWork, typechoice.DefaultConfig())
	if want := "fast: estimated done in 28m there, against 17m on slow; on slow it would hold back 1 job"; d["a"].Type != "fast" || d["a"].Reason != want {
		t.Errorf("one job running on slow: %+v", d["a"])
	}
	// With the slow type empty, it goes there.
	jobs = slices.DeleteFunc(jobs, func(j typechoice.Job) bool { return j.ID == "r" })
	d = typechoice.Assign(one, jobs, now, typechoice.ByWork, typechoice.DefaultConfig())
	if d["a"].Type != "slow" || d["a"].Done != 1000 {
		t.Errorf("slow type empty: %+v", d["a"])
	}
}

// TestALongJobIsNotSentAwayForTheShortJobsAheadOfIt: under least work
// first, the short jobs waiting on a long job's fast type go ahead of it
// there, so it does not hold them back; it stays, rather than run three
// times as long on the idle slow type. Where a new job goes ahead of
// every job that has run (least attained service) and where the jobs
// waiting stand for those that will arrive behind it (by arrival), it
// would hold them back, and goes to the slow type.
func TestALongJobIsNotSentAwayForTheShortJobsAheadOfIt(t *testing.T) {
	one := []typechoice.Type{{Name: "k80", GPUs: 1}, {Name: "v100", GPUs: 1}}
	var jobs []typechoice.Job
	for i := range 6 {
		jobs = append(jobs, typechoice.Job{ID: fmt.Sprintf("s%d", i), Types: []string{"v100"}, Speed: map[string]float64{"v100": 3},
			Work: 3000, Current: "v100", Submitted: now.Add(-time.Hour)})
	}
	jobs = append(jobs, typechoice.Job{ID: "long", Types: []string{"k80", "v100"}, Speed: map[string]float64{"k80": 1, "v100": 3}, Work: 36000, Submitted: now})
	for order, want := range map[string]typechoice.Decision{
		typechoice.ByWork:    {Type: "v100", Done: 18000, Reason: "v100: estimated done in 5h00m there, against 10h00m on k80"},
		typechoice.ByService: {Type: "k80", Done: 36000, Reason: "k80: estimated done in 10h00m there, against 5h00m on v100; on v100 it would hold back 6 jobs"},
		typechoice.ByArrival: {Type: "k80", Done: 36000, Reason: "k80: estimated done in 10h00m there, against 5h00m on v100; on v100 it would hold back 5 jobs"},
	} {
		if got := typechoice.Assign(one, jobs, now, order, typechoice.DefaultConfig())["long"]; got != want {
			t.Errorf("%s: got %+v, want %+v", order, got, want)
		}
	}
}

// TestJobsThatArriveTogetherSeeEachOther: under least work first, a short
// job that arrives with two longer ones sees them on the fast type's
// list, behind it, and leaves them the fast type; alone, it takes it.
func TestJobsThatArriveTogetherSeeEachOther(t *testing.T) {
	one := []typechoice.Type{{Name: "k80", GPUs: 1}, {Name: "v100", GPUs: 1}}
	speed := map[string]float64{"k80": 1, "v100": 1.5}
	jobs := []typechoice.Job{
		{ID: "short", Types: []string{"k80", "v100"}, Speed: speed, Work: 1500, Submitted: now},
		{ID: "long1", Types: []string{"v100"}, Speed: speed, Work: 3000, Submitted: now},
		{ID: "long2", Types: []string{"v100"}, Speed: speed, Work: 3000, Submitted: now},
	}
	d := typechoice.Assign(one, jobs, now, typechoice.ByWork, typechoice.DefaultConfig())
	if want := "k80: estimated done in 25m there, against 17m on v100; on v100 it would hold back 2 jobs"; d["short"].Type != "k80" || d["short"].Reason != want {
		t.Errorf("together: got %+v, want k80 because %q", d["short"], want)
	}
	if d := typechoice.Assign(one, jobs[:1], now, typechoice.ByWork, typechoice.DefaultConfig()); d["short"].Type != "v100" {
		t.Errorf("alone: %+v", d["short"])
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
	// The dwell doubles with each move after the first: after three moves
	// 40 minutes, then at most a day.
	fast.Since, fast.Moves = now.Add(-30*time.Minute), 3
	if d := typechoice.Assign(types, []typechoice.Job{fast}, now, typechoice.ByWork, cfg)["a"]; d.Moved || d.Reason != "k80: moved less than 40m0s ago" {
		t.Errorf("third move's dwell: %+v", d)
	}
	fast.Since = now.Add(-41 * time.Minute)
	if d := typechoice.Assign(types, []typechoice.Job{fast}, now, typechoice.ByWork, cfg)["a"]; !d.Moved {
		t.Errorf("after the third move's dwell: %+v", d)
	}
	fast.Since, fast.Moves = now.Add(-23*time.Hour), 40
	if d := typechoice.Assign(types, []typechoice.Job{fast}, now, typechoice.ByWork, cfg)["a"]; d.Moved || d.Reason != "k80: moved less than 24h0m0s ago" {
		t.Errorf("after 40 moves: %+v", d)
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
		"SRJF": typechoice.ByWork, "Elastic-SRJF": typechoice.ByWork, "HeSRPT": typechoice.ByWork, "AFS-L": typechoice.ByWork,
		"Tiresias": typechoice.ByService, "ElasticTiresias": typechoice.ByService} {
		if got := typechoice.OrderOf(p); got != want {
			t.Errorf("OrderOf(%s) = %s, want %s", p, got, want)
		}
	}
}

// BenchmarkAssign: one new job among 5 000 placed on three types of 2 000
// GPUs, half of them accepting every type, as the controller decides a
// new job's type.
func BenchmarkAssign(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	tys := []typechoice.Type{{Name: "k80", GPUs: 2000}, {Name: "p100", GPUs: 2000, Elastic: true}, {Name: "v100", GPUs: 2000}}
	names := []string{"k80", "p100", "v100"}
	var jobs []typechoice.Job
	for i := range 5001 {
		j := typechoice.Job{ID: fmt.Sprintf("j%04d", i), Work: float64(600 + r.IntN(1_000_000)), Speed: map[string]float64{"k80": 1, "p100": 2, "v100": 3},
			Submitted: now.Add(-time.Duration(r.IntN(86400)) * time.Second), Runs: map[string]typechoice.Run{}}
		g := 1 << r.IntN(4)
		for _, n := range names {
			j.Runs[n] = typechoice.Run{GPUs: g, Speedup: 0.8 * float64(g), Most: 2 * g, MostSpeedup: 1.5 * float64(g)}
		}
		j.Types = names
		if i%2 == 0 {
			j.Types = names[i%3 : i%3+1]
		}
		if i < 5000 {
			j.Current, j.Ran, j.Since = j.Types[r.IntN(len(j.Types))], true, now.Add(-time.Hour)
		}
		jobs = append(jobs, j)
	}
	for _, order := range []string{typechoice.ByWork, typechoice.ByArrival} {
		// Settled: the placed jobs on the types the rule gave them.
		settled := slices.Clone(jobs)
		d := typechoice.Assign(tys, settled, now, order, typechoice.DefaultConfig())
		for i := range settled[:5000] {
			settled[i].Current = d[settled[i].ID].Type
		}
		b.Run(order, func(b *testing.B) {
			moves := 0
			for b.Loop() {
				moves = 0
				for _, x := range typechoice.Assign(tys, settled, now, order, typechoice.DefaultConfig()) {
					if x.Moved {
						moves++
					}
				}
			}
			b.ReportMetric(float64(moves), "moves")
		})
		// One new job's choice, every other job held on its type (as the
		// controller asks when a job arrives).
		held := slices.Clone(settled)
		for i := range held[:5000] {
			held[i].Types = []string{held[i].Current}
		}
		b.Run(order+"/new", func(b *testing.B) {
			for b.Loop() {
				typechoice.Assign(tys, held, now, order, typechoice.DefaultConfig())
			}
		})
	}
}
