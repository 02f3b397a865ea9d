package model_test

import (
	"math"
	"testing"

	"github.com/vodascheduler/voda/pkg/model"
)

// TestGoodputFromProfiles checks the statistical efficiency and goodput a
// job that tunes its batch size is scheduled by, on the measured profiles.
func TestGoodputFromProfiles(t *testing.T) {
	c := model.LoadTestProfiles(t)
	for _, name := range c.Names() {
		m, err := c.Model(name)
		if err != nil {
			t.Fatal(err)
		}
		if !m.Adaptive() {
			t.Fatalf("%s: measured profiles not adaptive", name)
		}
		m0 := m.InitBatch()
		// A step at M0 is a step at M0, so the work is the steps at M0.
		if got, want := m.Work(), m.Steps(m0); math.Abs(got-want) > 1e-9*want {
			t.Errorf("%s: work %v, want Steps(M0) %v", name, got, want)
		}
		// Epoch by epoch at a fixed batch, the work takes Steps(batch).
		for _, b := range m.Batches {
			steps := 0.0
			for p := 0.0; ; {
				e, end := m.Epoch(p)
				steps += (end - p) / m.Efficiency(e, b)
				if e == m.Epochs-1 {
					break
				}
				p = end
			}
			if want := m.Steps(b); math.Abs(steps-want) > 1e-6*want {
				t.Errorf("%s at %d: %v steps epoch by epoch, Steps says %v", name, b, steps, want)
			}
		}
		if e, _ := m.Epoch(0); e != 0 {
			t.Errorf("%s: epoch at no progress %d, want 0", name, e)
		}
		if e, end := m.Epoch(m.Work() * 2); e != m.Epochs-1 || end != m.Work() {
			t.Errorf("%s: past the end, epoch %d ending at %v; want %d at %v", name, e, end, m.Epochs-1, m.Work())
		}
		for e := range m.Epochs {
			for _, b := range m.Batches {
				// Between a step at M0 and batch/M0 of them. (Not always
				// more for a larger batch: each traced batch has its own
				// measured statistics.)
				g, scale := m.Efficiency(e, b), float64(b)/float64(m0)
				if g < 1-1e-9 || g > scale+1e-9 {
					t.Errorf("%s epoch %d: efficiency at %d is %v, want 1 to %v", name, e, b, g, scale)
				}
			}
		}
		// The best batch lies in range, holds MinLocalBatch per GPU, and
		// beats both ends.
		for _, shape := range [][]int{{1}, {4}, {4, 4}, {4, 4, 4, 4}} {
			n := 0
			for _, g := range shape {
				n += g
			}
			for _, e := range []int{0, m.Epochs - 1} {
				lo, hi := m0, m.MaxBatch()
				b, g := m.BestBatch(shape, e, lo, hi)
				if n*m.MinLocalBatch > hi {
					if b != 0 || g != 0 {
						t.Errorf("%s on %v: best %d (%v) where no batch fits", name, shape, b, g)
					}
					continue
				}
				if b < max(lo, n*m.MinLocalBatch) || b > hi {
					t.Errorf("%s on %v epoch %d: best batch %d outside %d-%d", name, shape, e, b, max(lo, n*m.MinLocalBatch), hi)
				}
				for _, other := range []int{max(lo, n*m.MinLocalBatch), hi} {
					if o := m.Goodput(shape, e, other); o > g*(1+1e-12) {
						t.Errorf("%s on %v epoch %d: batch %d has goodput %v, more than the best %d's %v", name, shape, e, other, o, b, g)
					}
				}
			}
		}
	}
	// The noise scale grows as training goes: on 16 GPUs CIFAR-10's best
	// batch is larger at the end than at the start.
	m, _ := c.Model("cifar10")
	shape := []int{4, 4, 4, 4}
	first, _ := m.BestBatch(shape, 0, m.InitBatch(), m.MaxBatch())
	last, _ := m.BestBatch(shape, m.Epochs-1, m.InitBatch(), m.MaxBatch())
	if !(last > first) {
		t.Errorf("cifar10 on 16 GPUs: best batch %d at the first epoch, %d at the last; want it to grow", first, last)
	}
}

// TestGoodputBuiltin: the built-in catalog's summary of the gradient
// statistics gives, epoch by epoch at a fixed traced batch, the steps its
// Steps gives (to the six digits it keeps), and CIFAR-10's best batch on
// 16 GPUs grows as training goes, as with the profiles.
func TestGoodputBuiltin(t *testing.T) {
	c := model.Builtin()
	for _, name := range c.Names() {
		m, _ := c.Model(name)
		if !m.Adaptive() {
			t.Fatalf("built-in %s: not adaptive", name)
		}
		for _, b := range m.Batches {
			steps := 0.0
			for p := 0.0; ; {
				e, end := m.Epoch(p)
				if end <= p && e < m.Epochs-1 {
					t.Fatalf("%s: epoch %d at %v ends at %v", name, e, p, end)
				}
				g := m.Efficiency(e, b)
				if g < 1-1e-9 || g > float64(b)/float64(m.InitBatch())+1e-9 {
					t.Errorf("%s epoch %d: efficiency at %d is %v", name, e, b, g)
				}
				steps += (end - p) / g
				if e == m.Epochs-1 {
					break
				}
				p = end
			}
			if want := m.Steps(b); math.Abs(steps-want) > 1e-3*want {
				t.Errorf("built-in %s at %d: %v steps epoch by epoch, Steps says %v", name, b, steps, want)
			}
		}
	}
	m, _ := c.Model("cifar10")
	shape := []int{4, 4, 4, 4}
	first, _ := m.BestBatch(shape, 0, m.InitBatch(), m.MaxBatch())
	last, _ := m.BestBatch(shape, m.Epochs-1, m.InitBatch(), m.MaxBatch())
	if !(last > first) {
		t.Errorf("built-in cifar10 on 16 GPUs: best batch %d at the first epoch, %d at the last; want it to grow", first, last)
	}
}
