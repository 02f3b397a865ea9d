package simulator

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func recorded(t *testing.T, policy string, w Workload) Result {
	t.Helper()
	cfg := config(policy)
	cfg.RecordEvents = true
	res, err := Run(cfg, w, cat)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Recording events changes nothing else, so every output but --html stays
// the same; and the events tell each job's story in time order: submitted
// first, finished last.
func TestRecordingEventsChangesNothingElse(t *testing.T) {
	w := mixedWorkload(20)
	for _, p := range []string{"Tiresias", "AFS-L"} {
		plain, err := Run(config(p), w, cat)
		if err != nil {
			t.Fatal(err)
		}
		res := recorded(t, p, w)
		if plain.Events != nil {
			t.Errorf("%s: events recorded without RecordEvents", p)
		}
		events := res.Events
		res.Events = nil
		if diff := cmp.Diff(plain, res); diff != "" {
			t.Errorf("%s: recording changed the result (-without,+with):\n%s", p, diff)
		}
		last := map[string]EventKind{}
		for k, e := range events {
			if k > 0 && e.T < events[k-1].T {
				t.Fatalf("%s: event %d at %v after one at %v", p, k, e.T, events[k-1].T)
			}
			if prev := last[e.Job]; (prev == "") != (e.Kind == EventSubmit) || prev == EventFinish {
				t.Errorf("%s: job %s: %s after %q", p, e.Job, e.Kind, prev)
			}
			last[e.Job] = e.Kind
		}
		for _, j := range res.Jobs {
			if last[j.Name] != EventFinish {
				t.Errorf("%s: job %s's last event is %q, want %s", p, j.Name, last[j.Name], EventFinish)
			}
		}
	}
}

// The GPUs the events say each job held add up to the GPU-seconds the
// engine charged it, and the events count its rescales and restarts.
func TestEventsHoldTheChargedGPUSeconds(t *testing.T) {
	kinds := map[EventKind]int{}
	for _, p := range []string{"Tiresias", "ElasticFIFO", "AFS-L"} {
		res := recorded(t, p, mixedWorkload(20))
		type state struct {
			gpus             int
			since, gpuSec    float64
			rescales, starts int
		}
		jobs := map[string]*state{}
		for _, e := range res.Events {
			kinds[e.Kind]++
			s := jobs[e.Job]
			if s == nil {
				s = &state{}
				jobs[e.Job] = s
			}
			s.gpuSec += float64(s.gpus) * (e.T - s.since)
			s.gpus, s.since = e.GPUs, e.T
			switch e.Kind {
			case EventScaleIn, EventScaleOut:
				s.rescales++
			case EventStart:
				s.starts++
			}
		}
		for _, j := range res.Jobs {
			s := jobs[j.Name]
			if math.Abs(s.gpuSec-j.GPUSeconds) > 1e-6*max(j.GPUSeconds, 1) {
				t.Errorf("%s, job %s: events hold %v GPU-seconds, the engine charged %v", p, j.Name, s.gpuSec, j.GPUSeconds)
			}
			if s.rescales != j.Rescales || s.starts-1 > j.Restarts {
				t.Errorf("%s, job %s: %d rescales and %d starts, the engine counted %d rescales and %d restarts",
					p, j.Name, s.rescales, s.starts, j.Rescales, j.Restarts)
			}
		}
	}
	for _, k := range []EventKind{EventSubmit, EventStart, EventScaleIn, EventScaleOut, EventHalt, EventFinish} {
		if kinds[k] == 0 {
			t.Errorf("no %s events in any run", k)
		}
	}
}
