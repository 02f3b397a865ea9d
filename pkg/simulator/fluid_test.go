package simulator

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestFluidBoundOneJob(t *testing.T) {
	// Alone, a job runs at its top speed from R: its work's mean time is
	// R + t/2, and the dual reaches it.
	jobs := []fluidJob{{R: 30, segs: fluidHull([]float64{1, 2, 4, 8}, []float64{0.001, 0.0019, 0.0035, 0.005})}}
	got, ok := fluidBound(jobs, 64)
	if want := 30 + 100.0; !ok || math.Abs(got-want) > 1e-6 {
		t.Errorf("got %v %v, want %v", got, ok, want)
	}
}

func TestFluidBoundSharedCluster(t *testing.T) {
	// Two jobs that can each use the whole cluster: one after the other
	// (or side by side) their mean work times sum to T/2 + 3T/2 = 2T, which
	// the isolated bound (T/2 + T/2) does not see. The search for prices
	// stops within a few percent of the dual's optimum here (the two jobs
	// tie, and it starts from the prices of one after the other).
	const g, T = 16.0, 1000.0
	job := fluidJob{R: 0, segs: []fluidSeg{{1 / T, g * T}}}
	got, ok := fluidBound([]fluidJob{job, job}, g)
	if !ok || got > 2*T+1e-6 || got < 0.95*2*T {
		t.Errorf("got %v %v, want 2T = %v", got, ok, 2*T)
	}
	if _, ok := fluidBound(nil, g); ok {
		t.Errorf("no jobs: a bound")
	}
	if _, ok := fluidBound([]fluidJob{{R: 0}}, g); ok {
		t.Errorf("a job that cannot run: a bound")
	}
}

func TestFluidBoundChargesSpeed(t *testing.T) {
	// Two jobs on 16 GPUs, each 1.5 × 10⁻³ of itself a second on 8 GPUs
	// and 2 × 10⁻³ on 16. Alone, each would run at its best from 0, and
	// the mean times of their work would sum to 250 + 250 s; side by side
	// on 8 GPUs each they sum to 2 × 333 s, and no schedule does better
	// than that by much: going fast costs GPUs the other job needs.
	const g = 16.0
	job := fluidJob{segs: fluidHull([]float64{8, 16}, []float64{0.0015, 0.002})}
	got, _ := fluidBound([]fluidJob{job, job}, g)
	if side := fluidSchedule([]fluidJob{job, job}, g, []int{0, 1}); got > 2000.0/3+1e-6 || got < 600 || got > side {
		t.Errorf("got %v, want 600 to 667 (one after the other: %v)", got, side)
	}
}

// fluidSchedule runs jobs on g GPUs, each up its hull as far as the GPUs
// left allow, in the given order of priority, and returns Σ_j F_j: any
// such schedule is feasible, so the bound may never exceed it.
func fluidSchedule(jobs []fluidJob, g float64, order []int) float64 {
	rem := make([]float64, len(jobs))
	mom := make([]float64, len(jobs))
	for i := range jobs {
		rem[i] = 1
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
			if rem[i] <= 0 || jobs[i].R > now {
				continue
			}
			for _, s := range jobs[i].segs {
				take := min(s.ds, free/s.gpu)
				rate[i] += take
				free -= take * s.gpu
			}
			if rate[i] > 0 {
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
				if rem[i] -= rate[i] * dt; rem[i] <= 1e-9 {
					rem[i] = 0
					left--
				}
			}
		}
		now += dt
	}
	sum := 0.0
	for i := range jobs {
		sum += mom[i]
	}
	return sum
}

func TestFluidBoundBelowEverySchedule(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 200 {
		n, g := 1+r.IntN(10), float64(1+r.IntN(16))
		jobs := make([]fluidJob, n)
		for i := range jobs {
			var gpus, speed []float64
			t1 := 100 + 2000*r.Float64()
			for m := 1; m <= int(g); m++ {
				gpus = append(gpus, float64(m))
				speed = append(speed, math.Pow(float64(m), 0.3+0.7*r.Float64())/t1) // not concave
			}
			jobs[i] = fluidJob{R: float64(r.IntN(500)), segs: fluidHull(gpus, speed)}
		}
		b, ok := fluidBound(jobs, g)
		if !ok {
			t.Fatalf("no bound for %v", jobs)
		}
		for range 5 {
			if s := fluidSchedule(jobs, g, r.Perm(n)); b > s*(1+1e-9)+1e-9 {
				t.Fatalf("jobs %v on %v GPUs: bound %v above a schedule's %v", jobs, g, b, s)
			}
		}
	}
}
