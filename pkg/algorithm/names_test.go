package algorithm_test

import (
	"strings"
	"testing"

	"github.com/vodascheduler/voda/pkg/algorithm"
)

func TestCanonical(t *testing.T) {
	cases := map[string]string{
		"FIFO": "FIFO", "fifo": "FIFO", "ElasticFIFO": "ElasticFIFO", "elastic-fifo": "ElasticFIFO",
		"Elastic_FIFO": "ElasticFIFO", "SRJF": "SRJF", "ElasticSRJF": "ElasticSRJF",
		"tiresias": "Tiresias", "ElasticTiresias": "ElasticTiresias", "e-tiresias": "ElasticTiresias",
		"FfDLOptimizer": "FfDLOptimizer", "ffdl": "FfDLOptimizer", "AFS-L": "AFS-L", "afsl": "AFS-L",
		" AFS-L ": "AFS-L",
	}
	for in, want := range cases {
		got, err := algorithm.Canonical(in)
		if err != nil || got != want {
			t.Errorf("Canonical(%q): got %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestUnknownPolicyListsValidNames(t *testing.T) {
	_, err := algorithm.New("round-robin", algorithm.DefaultConfig())
	if err == nil {
		t.Fatal("got no error for an unknown policy")
	}
	for _, n := range algorithm.Names() {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("error %q does not list %s", err, n)
		}
	}
}

func TestNewRejectsBadTiresiasConfig(t *testing.T) {
	cases := map[string]algorithm.TiresiasConfig{
		"negative threshold":      {Thresholds: []float64{-1}, Service: algorithm.ServiceTotal},
		"thresholds not rising":   {Thresholds: []float64{100, 50}, Service: algorithm.ServiceTotal},
		"negative knob":           {Thresholds: []float64{100}, PromoteKnob: -1, Service: algorithm.ServiceTotal},
		"unknown service measure": {Thresholds: []float64{100}, Service: "wall"},
	}
	for name, cfg := range cases {
		t.Run(name, func(t *testing.T) {
			for _, p := range []string{"Tiresias", "ElasticTiresias"} {
				if _, err := algorithm.New(p, algorithm.Config{Tiresias: cfg}); err == nil {
					t.Errorf("%s accepted %+v", p, cfg)
				}
			}
		})
	}
	// Policies that do not use Tiresias settings do not care.
	if _, err := algorithm.New("FIFO", algorithm.Config{}); err != nil {
		t.Errorf("FIFO with zero config: %v", err)
	}
}

func TestEveryNameBuildsItsPolicy(t *testing.T) {
	for _, n := range algorithm.Names() {
		p, err := algorithm.New(n, algorithm.DefaultConfig())
		if err != nil {
			t.Fatalf("New(%s): %v", n, err)
		}
		if p.Name() != n {
			t.Errorf("New(%s).Name() = %s", n, p.Name())
		}
	}
}
