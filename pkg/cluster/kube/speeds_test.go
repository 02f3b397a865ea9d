package kube_test

import (
	"math"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/cluster/kube"
)

// TestSpeedsMeasuredOnEachType checks where a job of several types gets
// its speeds: the user's hints, else 1, until it has reported epochs on two
// types; then the measured ratio, scaled to a hinted type's speed.
func TestSpeedsMeasuredOnEachType(t *testing.T) {
	tj := &v1alpha1.TrainingJob{Spec: v1alpha1.TrainingJobSpec{GPUTypes: []string{"v100", "p100", "k80"},
		GPUTypeSpeeds: map[string]resource.Quantity{"p100": resource.MustParse("2")}}}
	near := func(got map[string]float64, want map[string]float64) bool {
		for k, v := range want {
			if math.Abs(got[k]-v) > 0.01*v { // fits, not exact ratios
				return false
			}
		}
		return len(got) == len(want)
	}
	if got := kube.Speeds(tj); !near(got, map[string]float64{"v100": 1, "p100": 2, "k80": 1}) {
		t.Errorf("hints only: %v", got)
	}
	// Epochs on one type: not enough to compare.
	tj.Status.Progress = &v1alpha1.TrainingProgress{EpochTimes: []v1alpha1.EpochTime{
		{Workers: 1, Millis: 30_000, Epochs: 2, GPUType: "k80"},
		{Workers: 2, Millis: 15_000, Epochs: 2, GPUType: "k80"},
		{Workers: 1, Millis: 99_000, Epochs: 9}, // no type (the original's files): ignored
	}}
	if got := kube.Speeds(tj); !near(got, map[string]float64{"v100": 1, "p100": 2, "k80": 1}) {
		t.Errorf("one type measured: %v", got)
	}
	// On P100 the same epochs take 10 s: three times as fast as on K80,
	// so with P100's hint 2, K80 is 2/3.
	tj.Status.Progress.EpochTimes = append(tj.Status.Progress.EpochTimes,
		v1alpha1.EpochTime{Workers: 1, Millis: 10_000, Epochs: 3, GPUType: "p100"})
	if got := kube.Speeds(tj); !near(got, map[string]float64{"v100": 1, "p100": 2, "k80": 2.0 / 3}) {
		t.Errorf("two types measured: %v", got)
	}
}
