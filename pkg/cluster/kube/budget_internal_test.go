package kube

import (
	"testing"
	"time"
)

// TestWriteBudget: the counters' refreshes get rate writes a second, at
// most one second's worth at once, shared by whoever takes.
func TestWriteBudget(t *testing.T) {
	b := &writeBudget{rate: 10}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		after      time.Duration
		want, took int
	}{
		{0, 25, 10},                     // a second's worth to start with
		{0, 5, 0},                       // spent
		{500 * time.Millisecond, 10, 5}, // half a second: five
		{500 * time.Millisecond, 3, 0},  // the same moment again: none
		{10 * time.Second, 100, 10},     // idle long: still one second's worth
		{10 * time.Second, 0, 0},
		{10*time.Second + 300*time.Millisecond, 2, 2}, // 3 accrued, 2 asked
		{10*time.Second + 300*time.Millisecond, 2, 1},
	} {
		if got := b.take(t0.Add(c.after), c.want); got != c.took {
			t.Errorf("at %v, %d wanted: took %d, want %d", c.after, c.want, got, c.took)
		}
	}
}
