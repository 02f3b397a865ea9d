package algorithm

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Param is a policy parameter as operators write it: `voda controller
// --policy-param NAME=VALUE`, `voda simulate --policy-param`, the chart's
// scheduler.policyParams. Names are lower case, the policy family first:
// "hesrpt.exponent", "tiresias.thresholds".
type Param struct {
	Name string
	// Policies are the canonical names of the policies that read it.
	Policies []string
	// Default is the default value, written as Set accepts it.
	Default string
	// Help says what the value means and how to write it.
	Help string

	set func(c *Config, v string) error
	get func(c Config) string
}

var tiresiasPolicies = []string{NameTiresias, NameElasticTiresias}

var params = []Param{
	floatParam("hesrpt.exponent", []string{NameHeSRPT},
		"how strongly shorter jobs are preferred: a job weighs (remaining work)^-exponent; 0 maximises throughput, 1 is close to SRPT; lower values trade mean JCT for a shorter tail",
		func(c *Config) *float64 { return &c.HeSRPT.Exponent }, number),
	floatParam("hesrpt.restart-cost", []string{NameHeSRPT},
		"work a resize is assumed to cost (a duration such as 60s, or seconds): a resize must gain more than this over the time its size holds",
		func(c *Config) *float64 { return &c.HeSRPT.RestartCost }, seconds),
	floatParam("hesrpt.hysteresis", []string{NameHeSRPT},
		"extra weight of a running job's current size (0.2: 20%), so that jobs do not flap between sizes",
		func(c *Config) *float64 { return &c.HeSRPT.Hysteresis }, number),
	floatParam("hesrpt.horizon", []string{NameHeSRPT},
		"longest time a new size is expected to hold when weighing a resize against its restart (a positive duration)",
		func(c *Config) *float64 { return &c.HeSRPT.Horizon }, positiveSeconds),
	floatParam("hesrpt.aging", []string{NameHeSRPT},
		"waiting time that doubles a job's weight (a positive duration); what keeps a long job from waiting forever, shorter values shorten the tail of waiting jobs",
		func(c *Config) *float64 { return &c.HeSRPT.Aging }, positiveSeconds),
	{
		Name: "tiresias.thresholds", Policies: tiresiasPolicies,
		Help: "attained service at which a job moves to the next queue, comma-separated and increasing, one per queue boundary: GPU-seconds, or GPU-time as a duration (16h is 57600 GPU-s)",
		set: func(c *Config, v string) error {
			var ts []float64
			for _, part := range strings.Split(v, ",") {
				f, err := parseSeconds(strings.TrimSpace(part), true)
				if err != nil {
					return err
				}
				ts = append(ts, f)
			}
			c.Tiresias.Thresholds = ts
			return nil
		},
		get: func(c Config) string {
			parts := make([]string, len(c.Tiresias.Thresholds))
			for i, t := range c.Tiresias.Thresholds {
				parts[i] = formatNumber(t)
			}
			return strings.Join(parts, ",")
		},
	},
	{
		Name: "tiresias.service", Policies: tiresiasPolicies,
		Help: "what counts as attained service: " + string(ServiceSinceStart) + " (GPU-seconds since the last start or promotion), " + string(ServiceTotal) + " (all GPU-seconds), " + string(ServiceExecutedTimesRequested) + " (running seconds times requested GPUs, the Pollux artifact's); the last two need promote-knob 0",
		set: func(c *Config, v string) error {
			s := ServiceMeasure(strings.ToLower(v))
			switch s {
			case ServiceSinceStart, ServiceTotal, ServiceExecutedTimesRequested:
				c.Tiresias.Service = s
				return nil
			}
			return fmt.Errorf("want %s, %s or %s", ServiceSinceStart, ServiceTotal, ServiceExecutedTimesRequested)
		},
		get: func(c Config) string { return string(c.Tiresias.Service) },
	},
	floatParam("tiresias.promote-knob", tiresiasPolicies,
		"a job that has waited this many times its last running time goes back to the first queue; 0 turns promotion off",
		func(c *Config) *float64 { return &c.Tiresias.PromoteKnob }, number),
	{
		Name: "tiresias.compaction-threshold", Policies: []string{NameElasticTiresias},
		Help: "waiting jobs beyond which Elastic-Tiresias shrinks the jobs of the lower queues to their minimum (a whole number)",
		set: func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return errors.New("want a whole number, 0 or more")
			}
			c.Tiresias.CompactionThreshold = n
			return nil
		},
		get: func(c Config) string { return strconv.Itoa(c.Tiresias.CompactionThreshold) },
	},
}

// A valueKind reads and writes the values of one kind of parameter.
type valueKind struct {
	parse  func(string) (float64, error)
	format func(float64) string
}

var (
	// number is a finite number, 0 or more.
	number = valueKind{func(v string) (float64, error) { return parseNumber(v, 0) }, formatNumber}
	// seconds is a duration or a number of seconds, 0 or more.
	seconds = valueKind{func(v string) (float64, error) { return parseSeconds(v, false) }, formatSeconds}
	// positiveSeconds is seconds above 0.
	positiveSeconds = valueKind{func(v string) (float64, error) { return parseSeconds(v, true) }, formatSeconds}
)

// floatParam is a parameter held in the float64 field of Config that
// field points to.
func floatParam(name string, policies []string, help string, field func(*Config) *float64, kind valueKind) Param {
	return Param{Name: name, Policies: policies, Help: help,
		set: func(c *Config, v string) error {
			f, err := kind.parse(v)
			if err == nil {
				*field(c) = f
			}
			return err
		},
		get: func(c Config) string { return kind.format(*field(&c)) },
	}
}

// Params returns the parameters operators can set, in documentation order.
func Params() []Param {
	out := slices.Clone(params)
	d := DefaultConfig()
	for i := range out {
		out[i].Default = out[i].get(d)
	}
	return out
}

// ParseParams applies NAME=VALUE settings to base and checks the result. A
// parameter named twice, an unknown name or a value out of range is an
// error that names it; base is never changed.
func ParseParams(base Config, specs []string) (Config, error) {
	c := base.WithDefaults()
	seen := map[string]string{}
	var errs []error
	for _, spec := range specs {
		name, value, ok := strings.Cut(spec, "=")
		name, value = strings.ToLower(strings.TrimSpace(name)), strings.TrimSpace(value)
		if !ok || name == "" || value == "" {
			errs = append(errs, fmt.Errorf("policy parameter %q: want NAME=VALUE, e.g. hesrpt.exponent=0.2", spec))
			continue
		}
		p, found := lookupParam(name)
		if !found {
			errs = append(errs, fmt.Errorf("unknown policy parameter %q: valid parameters are %s", name, strings.Join(paramNames(), ", ")))
			continue
		}
		if prev, dup := seen[name]; dup {
			errs = append(errs, fmt.Errorf("policy parameter %s is given twice (%s and %s): give it once", name, prev, value))
			continue
		}
		seen[name] = value
		if err := p.set(&c, value); err != nil {
			errs = append(errs, fmt.Errorf("policy parameter %s=%s: %w", name, value, err))
		}
	}
	if len(errs) == 0 {
		if err := c.Tiresias.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return base, err
	}
	return c, nil
}

// Changed returns the parameters read by policy (a canonical name, or ""
// for every policy) whose values differ from the defaults, as NAME=VALUE
// in documentation order.
func (c Config) Changed(policy string) []string {
	if canon, err := Canonical(policy); err == nil {
		policy = canon
	}
	c, d := c.WithDefaults(), DefaultConfig()
	var out []string
	for _, p := range params {
		if policy != "" && !slices.Contains(p.Policies, policy) {
			continue
		}
		if v := p.get(c); v != p.get(d) {
			out = append(out, p.Name+"="+v)
		}
	}
	return out
}

// WithDefaults returns a copy of c (sharing nothing with it) in which a section
// left at its zero value holds the defaults, as the policies read it.
func (c Config) WithDefaults() Config {
	c.Tiresias.Thresholds = slices.Clone(c.Tiresias.Thresholds)
	if c.HeSRPT == (HeSRPTConfig{}) {
		c.HeSRPT = DefaultHeSRPT()
	}
	if c.Tiresias.Thresholds == nil && c.Tiresias.Service == "" {
		c.Tiresias = DefaultTiresias()
	}
	return c
}

func lookupParam(name string) (Param, bool) {
	for _, p := range params {
		if p.Name == name {
			return p, true
		}
	}
	return Param{}, false
}

func paramNames() []string {
	out := make([]string, len(params))
	for i, p := range params {
		out[i] = p.Name
	}
	return out
}

// parseNumber reads a finite number no smaller than lo.
func parseNumber(v string, lo float64) (float64, error) {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, errors.New("want a number")
	}
	if f < lo {
		return 0, fmt.Errorf("want %v or more", formatNumber(lo))
	}
	return f, nil
}

// parseSeconds reads a duration ("90s", "4h") or a plain number of seconds.
func parseSeconds(v string, positive bool) (float64, error) {
	want := "a duration such as 90s or 4h, or a number of seconds"
	if positive {
		want = "a positive " + strings.TrimPrefix(want, "a ")
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		d, derr := time.ParseDuration(v)
		if derr != nil {
			return 0, errors.New("want " + want)
		}
		f = d.Seconds()
	}
	if math.IsInf(f, 0) || math.IsNaN(f) || f < 0 || (positive && f == 0) {
		return 0, errors.New("want " + want)
	}
	return f, nil
}

func formatNumber(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// formatSeconds writes whole seconds as a short duration (60s, 1h, 24h),
// anything else as seconds.
func formatSeconds(f float64) string {
	if f != math.Trunc(f) || f > 1e9 {
		return formatNumber(f)
	}
	s := int64(f)
	switch {
	case s > 0 && s%3600 == 0:
		return strconv.FormatInt(s/3600, 10) + "h"
	case s > 0 && s%60 == 0:
		return strconv.FormatInt(s/60, 10) + "m"
	}
	return strconv.FormatInt(s, 10) + "s"
}
