package scheduler_test

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/scheduler"
)

var update = flag.Bool("update", false, "rewrite the golden scenario files with the current output")

// fakeClock is a settable clock.
type fakeClock struct{ t time.Time }

func (c *fakeClock) Now() time.Time { return c.t }

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// scenario runs a script of commands against an engine. Every command
// produces output; the golden file holds each command followed by "----",
// its output and a blank line.
type scenario struct {
	clock    *fakeClock
	engine   *scheduler.Engine
	cfg      scheduler.Config
	lastPlan api.Plan
}

func newScenario() *scenario {
	c := &fakeClock{t: t0}
	s := &scenario{clock: c, cfg: scheduler.DefaultConfig("gpu", c)}
	s.engine, _ = scheduler.New(s.cfg)
	return s
}

// block is one command and its expected output.
type block struct {
	comments []string // comment lines just above the command
	cmd      string
	want     string
}

// parseScenario splits a golden file into blocks. Lines starting with '#'
// before a command are comments.
func parseScenario(text string) ([]block, error) {
	var out []block
	var comments []string
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if strings.HasPrefix(line, "#") {
			comments = append(comments, line)
			continue
		}
		if line == "" {
			continue
		}
		b := block{cmd: line, comments: comments}
		comments = nil
		if i+1 >= len(lines) || strings.TrimSpace(lines[i+1]) != "----" {
			return nil, fmt.Errorf("line %d: command %q is not followed by ----", i+1, line)
		}
		i += 2
		var want []string
		for ; i < len(lines) && lines[i] != ""; i++ {
			want = append(want, lines[i])
		}
		b.want = strings.Join(want, "\n")
		out = append(out, b)
	}
	return out, nil
}

// args parses "key=value" words.
func args(words []string) (map[string]string, error) {
	m := map[string]string{}
	for _, w := range words {
		k, v, ok := strings.Cut(w, "=")
		if !ok {
			return nil, fmt.Errorf("argument %q is not key=value", w)
		}
		m[k] = v
	}
	return m, nil
}

func atoi(m map[string]string, key string, def int) (int, error) {
	v, ok := m[key]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%s=%q is not a number", key, v)
	}
	return n, nil
}

func (s *scenario) run(cmd string) (string, error) {
	words := strings.Fields(cmd)
	if len(words) == 0 {
		return "", errors.New("empty command")
	}
	name, rest := words[0], words[1:]
	one := func() (string, error) {
		if len(rest) != 1 {
			return "", fmt.Errorf("%s takes one argument", name)
		}
		return rest[0], nil
	}
	switch name {
	case "config":
		return s.config(rest)
	case "node":
		for _, w := range rest {
			n, g, ok := strings.Cut(w, "=")
			gpus, err := strconv.Atoi(g)
			if !ok || err != nil {
				return "", fmt.Errorf("node %q is not NAME=GPUS", w)
			}
			if err := s.engine.Step(scheduler.NodeSet{Node: api.Node{Name: api.NodeName(n), GPUs: gpus}}); err != nil {
				return "", err
			}
		}
		return "ok", nil
	case "remove-node":
		n, err := one()
		if err != nil {
			return "", err
		}
		return "ok", s.engine.Step(scheduler.NodeRemoved{Name: api.NodeName(n)})
	case "submit":
		return s.submit(rest)
	case "delete", "complete", "fail":
		id, err := one()
		if err != nil {
			return "", err
		}
		var ev scheduler.Event = scheduler.JobDeleted{ID: api.JobID(id)}
		switch name {
		case "complete":
			ev = scheduler.JobCompleted{ID: api.JobID(id)}
		case "fail":
			ev = scheduler.JobFailed{ID: api.JobID(id), Reason: "exit code 1"}
		}
		return "ok", s.engine.Step(ev)
	case "progress":
		if len(rest) < 2 {
			return "", errors.New("progress takes ID remaining=SECONDS")
		}
		m, err := args(rest[1:])
		if err != nil {
			return "", err
		}
		rem, err := atoi(m, "remaining", -1)
		if err != nil {
			return "", err
		}
		return "ok", s.engine.Step(scheduler.Progress{ID: api.JobID(rest[0]), Remaining: float64(rem)})
	case "set-policy":
		p, err := one()
		if err != nil {
			return "", err
		}
		if err := s.engine.Step(scheduler.SetPolicy{Name: p}); err != nil {
			return "", err
		}
		return "policy " + s.engine.Policy(), nil
	case "set-params":
		// The current policy with these parameters (none: the defaults).
		cfg, err := algorithm.ParseParams(algorithm.DefaultConfig(), rest)
		if err != nil {
			return "", err
		}
		if err := s.engine.Step(scheduler.SetPolicy{Name: s.engine.Policy(), Algorithm: &cfg}); err != nil {
			return "", err
		}
		return fmt.Sprintf("policy %s %v", s.engine.Policy(), s.engine.Algorithm().Changed(s.engine.Policy())), nil
	case "set-ratelimit":
		v, err := one()
		if err != nil {
			return "", err
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			return "", err
		}
		return "ok", s.engine.Step(scheduler.SetRateLimit{Every: d})
	case "advance":
		v, err := one()
		if err != nil {
			return "", err
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return "", fmt.Errorf("advance %q: want a non-negative duration", v)
		}
		s.clock.t = s.clock.t.Add(d)
		return "now " + s.since(s.clock.t), s.engine.Step(scheduler.Tick{})
	case "tick":
		return s.tick()
	case "run":
		return s.runUntilIdle(rest)
	case "fail-action":
		id, err := one()
		if err != nil {
			return "", err
		}
		for _, a := range s.lastPlan.Actions {
			if a.Job == api.JobID(id) {
				return "ok", s.engine.Step(scheduler.ActionFailed{Action: a, Err: errors.New("injected failure")})
			}
		}
		return "", fmt.Errorf("the last plan has no action for %s", id)
	case "jobs":
		return s.jobs(), nil
	case "restart":
		return s.restart()
	}
	return "", fmt.Errorf("unknown command %q", name)
}

func (s *scenario) config(words []string) (string, error) {
	m, err := args(words)
	if err != nil {
		return "", err
	}
	cfg := scheduler.DefaultConfig("gpu", s.clock)
	if p, ok := m["policy"]; ok {
		cfg.Policy = p
	}
	if v, ok := m["ratelimit"]; ok {
		if cfg.RateLimit, err = time.ParseDuration(v); err != nil {
			return "", err
		}
	}
	switch m["tiresias"] {
	case "", "default":
	case "pollux":
		cfg.Algorithm.Tiresias = algorithm.PolluxArtifactTiresias()
	default:
		if th, err := strconv.ParseFloat(m["tiresias"], 64); err == nil {
			cfg.Algorithm.Tiresias.Thresholds = []float64{th}
		} else {
			return "", fmt.Errorf("tiresias=%q: want default, pollux or a threshold", m["tiresias"])
		}
	}
	e, err := scheduler.New(cfg)
	if err != nil {
		return "", err
	}
	s.engine, s.cfg = e, cfg
	return fmt.Sprintf("policy %s, rate limit %v", e.Policy(), e.RateLimit()), nil
}

func (s *scenario) submit(words []string) (string, error) {
	if len(words) == 0 {
		return "", errors.New("submit takes ID and key=value arguments")
	}
	m, err := args(words[1:])
	if err != nil {
		return "", err
	}
	var spec api.JobSpec
	for _, f := range []struct {
		key string
		dst *int
		def int
	}{{"min", &spec.MinWorkers, 1}, {"max", &spec.MaxWorkers, 1}, {"req", &spec.RequestedWorkers, 0}, {"prio", &spec.Priority, 0}, {"k", &spec.GPUsPerWorker, 0}} {
		if *f.dst, err = atoi(m, f.key, f.def); err != nil {
			return "", err
		}
	}
	if _, ok := m["max"]; !ok {
		spec.MaxWorkers = max(spec.MinWorkers, spec.RequestedWorkers)
	}
	ev := scheduler.JobSubmitted{ID: api.JobID(words[0]), Spec: spec}
	rem, err := atoi(m, "remaining", 0)
	if err != nil {
		return "", err
	}
	ev.Remaining = float64(rem)
	if v, ok := m["speedup"]; ok {
		var tab []float64
		for _, f := range strings.Split(v, ",") {
			x, err := strconv.ParseFloat(f, 64)
			if err != nil {
				return "", fmt.Errorf("speedup value %q: %w", f, err)
			}
			tab = append(tab, x)
		}
		ev.Speedup = func(n int) float64 { return tab[min(n, len(tab))-1] }
	}
	if v, ok := m["measured"]; ok {
		known := map[int]bool{}
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(f)
			if err != nil {
				return "", fmt.Errorf("measured count %q: %w", f, err)
			}
			known[n] = true
		}
		ev.Measured = func(n int) bool { return known[n] }
	}
	return "ok", s.engine.Step(ev)
}

func (s *scenario) since(t time.Time) string { return "+" + t.Sub(t0).String() }

// checkInvariants verifies the state right after a rescheduling: every
// running job within its range with one node per worker, no node over its
// capacity, waiting jobs holding nothing.
func checkInvariants(e *scheduler.Engine) error {
	capacity := map[api.NodeName]int{}
	for _, n := range e.Nodes() {
		capacity[n.Name] = n.GPUs
	}
	used := map[api.NodeName]int{}
	for _, j := range e.Jobs() {
		switch j.Phase {
		case api.PhaseRunning:
			if j.Workers < j.Spec.MinWorkers || j.Workers > j.Spec.MaxWorkers || len(j.Nodes) != j.Workers {
				return fmt.Errorf("job %s runs %d workers on %d nodes, range [%d, %d]", j.ID, j.Workers, len(j.Nodes), j.Spec.MinWorkers, j.Spec.MaxWorkers)
			}
			for _, n := range j.Nodes {
				if _, ok := capacity[n]; !ok {
					return fmt.Errorf("job %s has a worker on unknown node %s", j.ID, n)
				}
				used[n] += j.Spec.K()
			}
		default:
			if j.Workers != 0 || len(j.Nodes) != 0 {
				return fmt.Errorf("%s job %s holds %d workers", j.Phase, j.ID, j.Workers)
			}
		}
	}
	for n, u := range used {
		if u > capacity[n] {
			return fmt.Errorf("node %s holds workers of %d GPUs, capacity %d", n, u, capacity[n])
		}
	}
	return nil
}

// tickChecked ticks and, when a plan was computed, checks the invariants.
func (s *scenario) tickChecked() (api.Plan, error) {
	plan, err := s.engine.Tick()
	if err != nil {
		return plan, err
	}
	if plan.Rescheduled {
		if err := checkInvariants(s.engine); err != nil {
			panic("invariant violated: " + err.Error())
		}
	}
	return plan, nil
}

func (s *scenario) tick() (string, error) {
	plan, err := s.tickChecked()
	if err != nil {
		return "", err
	}
	s.lastPlan = plan
	if len(plan.Actions) == 0 {
		if at, ok := s.engine.Due(); ok && at.After(s.clock.t) {
			return "nothing now; due at " + s.since(at), nil
		}
		return "no actions", nil
	}
	return formatActions(plan.Actions), nil
}

// runUntilIdle lets the given span (default 24h) pass: it jumps the clock
// from one due time to the next and ticks, printing each plan, and ends with
// the clock at the end of the span.
func (s *scenario) runUntilIdle(words []string) (string, error) {
	m, err := args(words)
	if err != nil {
		return "", err
	}
	span := 24 * time.Hour
	if v, ok := m["for"]; ok {
		if span, err = time.ParseDuration(v); err != nil {
			return "", err
		}
	}
	end := s.clock.t.Add(span)
	var out []string
	for range 1000 {
		at, ok := s.engine.Due()
		if !ok || at.After(end) {
			break
		}
		s.clock.t = later(s.clock.t, at)
		plan, err := s.tickChecked()
		if err != nil {
			out = append(out, s.since(s.clock.t)+" error: "+err.Error())
			continue
		}
		s.lastPlan = plan
		if len(plan.Actions) == 0 {
			out = append(out, s.since(s.clock.t)+" no actions")
			continue
		}
		out = append(out, s.since(s.clock.t))
		out = append(out, formatActions(plan.Actions))
	}
	s.clock.t = later(s.clock.t, end)
	if err := s.engine.Step(scheduler.Tick{}); err != nil {
		return "", err
	}
	if len(out) == 0 {
		return "idle until " + s.since(end), nil
	}
	return strings.Join(out, "\n") + "\nnow " + s.since(end), nil
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func formatActions(actions []api.Action) string {
	var lines []string
	for _, a := range actions {
		var b strings.Builder
		fmt.Fprintf(&b, "%s %s %d→%d", a.Kind, a.Job, a.From, a.To)
		if len(a.Nodes) > 0 {
			var slots []string
			for _, sl := range api.Slots(a.Nodes) {
				slots = append(slots, fmt.Sprintf("%s:%d", sl.Node, sl.Workers))
			}
			fmt.Fprintf(&b, " on %s", strings.Join(slots, ","))
		}
		for _, m := range a.Moves {
			fmt.Fprintf(&b, " w%d:%s→%s", m.Index, m.From, m.To)
		}
		if a.RestartAll {
			b.WriteString(" restart-all")
		}
		fmt.Fprintf(&b, " (%s)", a.Reason)
		lines = append(lines, b.String())
	}
	return strings.Join(lines, "\n")
}

func (s *scenario) jobs() string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 4, 1, ' ', 0)
	fmt.Fprintln(w, "JOB\tPHASE\tWORKERS\tQ\tWAIT\tRUN\tGPU-S\tRESCALES\tRESTARTS\tMESSAGE")
	for _, j := range s.engine.Jobs() {
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%.0f\t%.0f\t%.0f\t%d\t%d\t%s\n", j.ID, j.Phase, j.Workers, j.Queue,
			j.WaitingSeconds, j.RunningSeconds, j.GPUSeconds, j.Rescales, j.Restarts, j.Message)
	}
	w.Flush()
	return strings.TrimRight(b.String(), "\n")
}

// restart replaces the engine with a new one rebuilt from the old one's
// nodes and job records, as a restarted controller would.
func (s *scenario) restart() (string, error) {
	e, err := scheduler.New(s.cfg)
	if err != nil {
		return "", err
	}
	if err := e.Step(scheduler.SetPolicy{Name: s.engine.Policy()}); err != nil {
		return "", err
	}
	for _, n := range s.engine.Nodes() {
		if err := e.Step(scheduler.NodeSet{Node: n}); err != nil {
			return "", err
		}
	}
	if err := e.Restore(s.engine.Jobs()); err != nil {
		return "", err
	}
	s.engine = e
	return "restarted", nil
}

func runScenario(text string) (string, error) {
	blocks, err := parseScenario(text)
	if err != nil {
		return "", err
	}
	s := newScenario()
	var out strings.Builder
	for _, b := range blocks {
		got, err := s.run(b.cmd)
		if err != nil {
			got = "error: " + err.Error()
		}
		fmt.Fprintf(&out, "%s\n----\n%s\n\n", b.cmd, got)
	}
	return out.String(), nil
}

func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/scenarios/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenario files: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			blocks, err := parseScenario(string(raw))
			if err != nil {
				t.Fatal(err)
			}
			s := newScenario()
			var rewritten strings.Builder
			for _, b := range blocks {
				for _, c := range b.comments {
					rewritten.WriteString(c + "\n")
				}
				got, err := s.run(b.cmd)
				if err != nil {
					got = "error: " + err.Error()
				}
				fmt.Fprintf(&rewritten, "%s\n----\n%s\n\n", b.cmd, got)
				if !*update && got != b.want {
					t.Errorf("%s\n  got:\n%s\n  want:\n%s", b.cmd, indent(got), indent(b.want))
				}
			}
			if *update {
				if err := os.WriteFile(file, []byte(strings.TrimRight(rewritten.String(), "\n")+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func indent(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") }

func FuzzScenario(f *testing.F) {
	files, _ := filepath.Glob("testdata/scenarios/*.txt")
	for _, file := range files {
		if raw, err := os.ReadFile(file); err == nil {
			f.Add(string(raw))
		}
	}
	f.Add("node n=4\n----\nok\n\nsubmit a min=2 max=1\n----\n\n")
	f.Fuzz(func(t *testing.T, text string) {
		// Any text either fails to parse or runs without panicking, and
		// whatever the engine did keeps its invariants.
		if _, err := runScenario(text); err != nil {
			return
		}
	})
}
