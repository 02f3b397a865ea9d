package kube

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/yaml"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/scheduler"
)

// ConfigMapName is the ConfigMap that holds per-GPU-type scheduler settings,
// changeable at runtime. Each key is a GPU type; each value a small YAML
// document:
//
//	nvidia-tesla-v100: |
//	  algorithm: Tiresias
//	  rateLimit: 10s
//	  policyParams: [tiresias.thresholds=28800]
//
// A type without a key, or a field left out, uses the controller's flags;
// policyParams are set on top of the controller's --policy-param.
const ConfigMapName = "voda-schedulers"

// SchedulerSettings are the runtime settings of one GPU type's scheduler.
type SchedulerSettings struct {
	// Algorithm is the policy name; empty keeps the controller's default.
	Algorithm string `json:"algorithm,omitempty"`
	// RateLimit is a Go duration ("30s"); empty keeps the default.
	RateLimit string `json:"rateLimit,omitempty"`
	// PolicyParams are policy parameters as NAME=VALUE, as `voda
	// controller --policy-param` takes them; each replaces the
	// controller's value of that parameter for this GPU type.
	PolicyParams []string `json:"policyParams,omitempty"`
}

// Defaults are what a GPU type's scheduler runs with where its entry says
// nothing: the controller's flags.
type Defaults struct {
	Policy    string
	RateLimit time.Duration
	// Algorithm holds the controller's policy parameters.
	Algorithm algorithm.Config
}

// settings is a validated SchedulerSettings.
type settings struct {
	policy    string
	rateLimit time.Duration
	algo      algorithm.Config
}

// parseSettings reads a ConfigMap's data. It reports every bad entry and
// returns only the good ones.
func parseSettings(data map[string]string, d Defaults) (map[api.GPUType]settings, error) {
	out, _, err := parseSettingsBad(data, d)
	return out, err
}

// parseSettingsBad is parseSettings that also names the bad entries.
func parseSettingsBad(data map[string]string, d Defaults) (map[api.GPUType]settings, map[api.GPUType]bool, error) {
	out := map[api.GPUType]settings{}
	bad := map[api.GPUType]bool{}
	var errs []error
	for _, t := range slices.Sorted(maps.Keys(data)) {
		s, algo, err := ResolveEntry(data[t], d)
		if err != nil {
			bad[api.GPUType(t)] = true
			errs = append(errs, fmt.Errorf("%s: %w", t, err))
			continue
		}
		rate, _ := time.ParseDuration(s.RateLimit)
		out[api.GPUType(t)] = settings{policy: s.Algorithm, rateLimit: rate, algo: algo}
	}
	return out, bad, errors.Join(errs...)
}

// ParseSchedulerSettings reads one GPU type's entry of the ConfigMap. Unknown
// fields are errors.
func ParseSchedulerSettings(value string) (SchedulerSettings, error) {
	var s SchedulerSettings
	if err := yaml.UnmarshalStrict([]byte(value), &s); err != nil {
		return SchedulerSettings{}, fmt.Errorf("%w (want YAML with algorithm, rateLimit and policyParams)", err)
	}
	return s, nil
}

// ResolveEntry reads one GPU type's entry of the ConfigMap and resolves it
// against the defaults (see Resolve).
func ResolveEntry(value string, d Defaults) (SchedulerSettings, algorithm.Config, error) {
	s, err := ParseSchedulerSettings(value)
	if err != nil {
		return SchedulerSettings{}, algorithm.Config{}, err
	}
	return s.Resolve(d)
}

// Resolve checks the settings and fills what they leave out from the
// defaults: the result has the policy's canonical name, a rate limit
// spelled as a Go duration and the parameters as given, and the policy
// parameters in force (the defaults' with the settings' on top).
func (s SchedulerSettings) Resolve(d Defaults) (SchedulerSettings, algorithm.Config, error) {
	out := SchedulerSettings{Algorithm: d.Policy, RateLimit: d.RateLimit.String(), PolicyParams: slices.Clone(s.PolicyParams)}
	algo, err := algorithm.ParseParams(d.Algorithm, s.PolicyParams)
	if err != nil {
		return SchedulerSettings{}, algorithm.Config{}, fmt.Errorf("policyParams: %w", err)
	}
	if s.Algorithm != "" {
		p, err := algorithm.New(s.Algorithm, algo)
		if err != nil {
			return SchedulerSettings{}, algorithm.Config{}, err
		}
		out.Algorithm = p.Name()
	}
	if s.RateLimit != "" {
		rate, err := time.ParseDuration(s.RateLimit)
		if err != nil || rate < 0 {
			return SchedulerSettings{}, algorithm.Config{}, fmt.Errorf("rateLimit %q is not a non-negative duration such as 30s", s.RateLimit)
		}
		out.RateLimit = rate.String()
	}
	return out, algo, nil
}

// defaults are the settings from the flags.
func (c *Controller) defaults() Defaults {
	return Defaults{Policy: c.opts.Policy, RateLimit: c.opts.RateLimit, Algorithm: c.opts.Algorithm}
}

// settingsFor returns the settings a GPU type's engine should run with.
// The caller holds c.mu.
func (c *Controller) settingsFor(t api.GPUType) settings {
	if s, ok := c.overrides[t]; ok {
		return s
	}
	d := c.defaults()
	return settings{policy: d.Policy, rateLimit: d.RateLimit, algo: d.Algorithm}
}

// readConfig loads the settings ConfigMap, if configured and present. A bad
// entry is reported as a Warning Event on the ConfigMap and named in bad;
// the good entries are returned.
func (c *Controller) readConfig(ctx context.Context) (good map[api.GPUType]settings, bad map[api.GPUType]bool, err error) {
	if c.opts.ConfigNamespace == "" {
		return nil, nil, nil
	}
	var cm corev1.ConfigMap
	err = c.client.Get(ctx, types.NamespacedName{Namespace: c.opts.ConfigNamespace, Name: ConfigMapName}, &cm)
	if apierrors.IsNotFound(err) {
		return map[api.GPUType]settings{}, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	good, bad, perr := parseSettingsBad(cm.Data, c.defaults())
	if perr != nil {
		c.recorder.Event(&cm, corev1.EventTypeWarning, "InvalidSettings", perr.Error()+"; those GPU types keep their settings")
		c.log.Error(perr, "scheduler settings", "configMap", ConfigMapName)
	}
	return good, bad, nil
}

// reconcileConfig applies changed settings to the running engines.
func (c *Controller) reconcileConfig(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	if !c.waitReady(ctx) {
		return reconcile.Result{}, ctx.Err()
	}
	next, bad, err := c.readConfig(ctx)
	if err != nil || next == nil {
		return reconcile.Result{}, err
	}
	c.mu.Lock()
	prev := c.overrides
	for t := range bad {
		if s, ok := prev[t]; ok {
			next[t] = s // a bad entry changes nothing
		}
	}
	c.overrides = next
	affected := map[api.GPUType]bool{}
	for t := range prev {
		affected[t] = true
	}
	for t := range next {
		affected[t] = true
	}
	want := map[api.GPUType]settings{}
	for t := range affected {
		if c.handles(t) {
			want[t] = c.settingsFor(t)
		}
	}
	c.mu.Unlock()
	for t, s := range want {
		e := c.engineFor(t)
		err := e.loop.Do(ctx, func(en *scheduler.Engine) error {
			if err := en.Step(scheduler.SetPolicy{Name: s.policy, Algorithm: &s.algo}); err != nil {
				return err
			}
			return en.Step(scheduler.SetRateLimit{Every: s.rateLimit})
		})
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("apply settings to %s: %w", t, err)
		}
		c.log.Info("scheduler settings", "gpuType", t, "policy", s.policy, "rateLimit", s.rateLimit,
			"policyParams", s.algo.Changed(s.policy))
	}
	return reconcile.Result{}, nil
}
