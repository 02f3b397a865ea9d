package scheduler_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/scheduler"
)

// Parameters that contradict each other are refused whole: the policy and
// its parameters stay as they were.
func TestSetPolicyRefusesBadParameters(t *testing.T) {
	e, err := scheduler.New(scheduler.DefaultConfig("gpu", &fakeClock{t: t0}))
	if err != nil {
		t.Fatal(err)
	}
	good, err := algorithm.ParseParams(algorithm.DefaultConfig(), []string{"tiresias.thresholds=600"})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Step(scheduler.SetPolicy{Name: algorithm.NameTiresias, Algorithm: &good}); err != nil {
		t.Fatal(err)
	}
	bad := good
	bad.Tiresias.Thresholds = []float64{600, 300}
	if err := e.Step(scheduler.SetPolicy{Name: algorithm.NameHeSRPT, Algorithm: &bad}); err == nil || !strings.Contains(err.Error(), "must increase") {
		t.Errorf("decreasing thresholds: error %v", err)
	}
	if err := e.Step(scheduler.SetPolicy{Name: "Optimus", Algorithm: &good}); err == nil {
		t.Error("an unknown policy with good parameters was taken")
	}
	if got, want := e.Algorithm().Changed(""), []string{"tiresias.thresholds=600"}; e.Policy() != algorithm.NameTiresias || !slices.Equal(got, want) {
		t.Errorf("after refused changes: %s %v, want Tiresias %v", e.Policy(), got, want)
	}
	// No parameters: the policy changes, its parameters stay.
	if err := e.Step(scheduler.SetPolicy{Name: algorithm.NameElasticTiresias}); err != nil {
		t.Fatal(err)
	}
	if got := e.Algorithm().Changed(""); e.Policy() != algorithm.NameElasticTiresias || !slices.Equal(got, []string{"tiresias.thresholds=600"}) {
		t.Errorf("a policy change alone: %s %v", e.Policy(), got)
	}
}
