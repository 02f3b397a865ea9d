package simulator

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestFluidBoundOneJob(t *testing.T) {
	// Alone, a job's work is spread evenly over its best time t from its
	// release R: F = R + t/2, and the dual reaches it.
	jobs := []fluidJob{{R: 30, W: 800, c: 8}} // t = 100
	if got, want := fluidBound(jobs, 64), 30+50.0; math.Abs(got-want) > 1e-6 {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestFluidBoundSharedCluster(t *testing.T) {
	// Two jobs that can each use the whole cluster: one after the other
	// (or side by side) their mean work times sum to T/2 + 3T/2 = 2T, which
	// the isolated bound (T/2 + T/2) does not see. The search for prices
	// stops within a few percent of the dual's optimum here (the two jobs
	// tie, and it starts from the prices of one after the other).
	const g, T = 16.0, 1000.0
	jobs := []fluidJob{{R: 0, W: g * T, c: g}, {R: 0, W: g * T, c: g}}
	if got := fluidBound(jobs, g); got > 2*T+1e-6 || got < 0.95*2*T {
		t.Errorf("got %v, want 2T = %v", got, 2*T)
	}
	if got := fluidBound(nil, g); got != 0 {
		t.Errorf("no jobs: got %v, want 0", got)
	}
}

// fluidSchedule runs jobs on g GPUs, each at its rate cap in the given
// order of priority, and returns Σ_j F_j: any such schedule is feasible,
// so the bound may never exceed it.
func fluidSchedule(jobs []fluidJob, g float64, order []int) float64 {
	rem := make([]float64, len(jobs))
	mom := make([]float64, len(jobs))
	for i, j := range jobs {
		rem[i] = j.W
	}
	now, left := 0.0, len(jobs)
	for left > 0 {
		next := math.Inf(1)
		for i, j := range jobs {
			if rem[i] > 0 && j.R > now {
				next = min(next, j.R)
			}
		}
		free, dt := g, next-now
		rate := make([]float64, len(jobs))
		for _, i := range order {
			if rem[i] > 0 && jobs[i].R <= now && free > 0 {
				rate[i] = min(jobs[i].c, free)
				free -= rate[i]
				dt = min(dt, rem[i]/rate[i])
			}
		}
		if free == g {
			now = next
			continue
		}
		for i := range jobs {
			if rate[i] > 0 {
				mom[i] += rate[i] * ((now+dt)*(now+dt) - now*now) / 2
				if rem[i] -= rate[i] * dt; rem[i] <= 1e-9*jobs[i].W {
					rem[i] = 0
					left--
				}
			}
		}
		now += dt
	}
	sum := 0.0
	for i, j := range jobs {
		sum += mom[i] / j.W
	}
	return sum
}

func TestFluidBoundBelowEverySchedule(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 200 {
		n, g := 1+r.IntN(12), float64(1+r.IntN(16))
		jobs := make([]fluidJob, n)
		for i := range jobs {
			c := min(g, float64(1+r.IntN(16))*r.Float64()+0.1)
			jobs[i] = fluidJob{R: float64(r.IntN(500)), W: c * (10 + 1000*r.Float64()), c: c}
		}
		b := fluidBound(jobs, g)
		for range 5 {
			s := fluidSchedule(jobs, g, r.Perm(n))
			if b > s*(1+1e-9)+1e-9 {
				t.Fatalf("jobs %v on %v GPUs: bound %v above a schedule's %v", jobs, g, b, s)
			}
		}
	}
}
