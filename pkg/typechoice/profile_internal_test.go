package typechoice

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// naiveFit is fit by its definition, over every time in turn: the first
// time (0 or a step's) at which, after all the steps up to it, e's least
// fits beside the others, and still fits after each later time before
// its end; where a later time breaks a run, the times before it are
// passed over.
func naiveFit(steps []step, e entry, total int) (start, end float64) {
	times := []float64{0}
	for _, st := range steps {
		times = append(times, st.at)
	}
	slices.Sort(times)
	times = slices.Compact(times)
	at := func(t float64) (held, ask int) {
		for _, st := range steps {
			if st.at <= t {
				held, ask = held+st.held, ask+st.ask
			}
		}
		return held, ask
	}
	next := 0.0
	for _, t := range times {
		if t < next {
			continue
		}
		held, ask := at(t)
		if held+e.least > total {
			continue
		}
		fin := t + e.run(total-ask)
		ok := true
		for _, u := range times {
			if u > t && u < fin {
				if h, _ := at(u); h+e.least > total {
					ok, next = false, u
					break
				}
			}
		}
		if ok {
			return t, fin
		}
	}
	panic("no time fits")
}

// The profile's scan, with its hints, finds what a look at every time
// finds, on random lists of rigid and elastic jobs.
func TestProfileFitsAsDefined(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 2))
	for trial := range 60 {
		total := 1 + r.IntN(32)
		var p profile
		var steps []step
		for job := range 40 + r.IntN(200) {
			g := 1 + r.IntN(total)
			e := entry{gpus: g, most: g, least: g, dur: float64(1 + r.IntN(50))}
			e.fastest, e.slowest = e.dur, e.dur
			if r.IntN(2) == 0 {
				e.least = 1 + r.IntN(g)
				e.slowest = e.dur * (1 + r.Float64())
				e.most = g + r.IntN(total-g+1)
				e.fastest = e.dur / (1 + r.Float64())
			}
			wantStart, wantEnd := naiveFit(steps, e, total)
			start, end := p.place(e, job, total)
			if start != wantStart || end != wantEnd {
				t.Fatalf("trial %d job %d (%+v on %d GPUs): placed at %v–%v, want %v–%v", trial, job, e, total, start, end, wantStart, wantEnd)
			}
			steps = append(steps, step{start, e.least, e.gpus, job}, step{end, -e.least, -e.gpus, job})
		}
	}
}
