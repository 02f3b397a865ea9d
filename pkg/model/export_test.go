package model

import (
	"os"
	"testing"
)

// ProfilesDir is where the Pollux profiles live relative to this package:
// outside the repository, in the shared traces (never copied in).
const ProfilesDir = "../../../shared/traces/pollux-adaptdl/profiles"

// LoadTestProfiles loads the real profiles, skipping the test when they are
// not there.
func LoadTestProfiles(t testing.TB) *Catalog {
	t.Helper()
	if _, err := os.Stat(ProfilesDir); err != nil {
		t.Skipf("Pollux profiles not found at %s (shared/traces/pollux-adaptdl lives outside the repository): %v", ProfilesDir, err)
	}
	c, err := LoadProfiles(ProfilesDir)
	if err != nil {
		t.Fatalf("LoadProfiles(%s): %v", ProfilesDir, err)
	}
	return c
}

// CatalogsForTest returns the built-in catalog and, when the profiles are
// there, the measured one, by name.
func CatalogsForTest(t testing.TB) map[string]*Catalog {
	t.Helper()
	cs := map[string]*Catalog{"builtin": Builtin()}
	if _, err := os.Stat(ProfilesDir); err == nil {
		cs["profiles"] = LoadTestProfiles(t)
	} else {
		t.Logf("Pollux profiles not found at %s; testing the built-in catalog only", ProfilesDir)
	}
	return cs
}

// Accuracy the built-in step-time fit must keep against the measured
// profiles (median and p90 relative error, per model). The fit reaches a
// median of 3-7% and a p90 of 9-18% over the measured rows, and a median of
// 3-8.3% over the packed (GPUs, batch) pairs a simulation uses; two
// measurements of the same node sizes in orders that are not rotations of
// each other already differ by 3-7% median and 8-18% p90, so tighter
// bounds would chase noise.
const (
	MaxMedianErr = 0.10
	MaxP90Err    = 0.20
)
