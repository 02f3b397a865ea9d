package typechoice

import (
	"slices"
	"sort"
)

// entry is a job in a type's lane: its key in the type's order and how
// it runs there.
type entry struct {
	key float64
	id  string
	// gpus is what it asks for, most what it may grow to where they are
	// free and least what it holds against the jobs after it (other than
	// gpus only on elastic types; least only under arrival order).
	gpus, most, least int
	// dur is its run on gpus, fastest its run on most and slowest on
	// least.
	dur, fastest, slowest float64
}

func (a entry) less(b entry) bool { return a.key < b.key || (a.key == b.key && a.id < b.id) }

// size is the GPU-seconds the entry holds on its requested GPUs.
func (e entry) size() float64 { return float64(e.gpus) * e.dur }

// lane is a type's jobs in its order and, once asked for, when each would
// start and end if the type ran them as a list: each job in order, on the
// GPUs it asks for, at the earliest time the jobs before it leave it
// enough GPUs for its whole run.
type lane struct {
	gpus       int
	es         []entry
	start, end []float64 // where es[i] runs; once dirty, from es[stale] on out of date
	stale      int
	dirty      bool
	waiting    int // jobs of start > 0, once scheduled
	steps, tmp []step
}

func (l *lane) add(e entry) {
	i, _ := slices.BinarySearchFunc(l.es, e, func(a, b entry) int {
		if a.less(b) {
			return -1
		}
		if b.less(a) {
			return 1
		}
		return 0
	})
	l.es = slices.Insert(l.es, i, e)
	l.start, l.end = slices.Insert(l.start, i, 0), slices.Insert(l.end, i, 0)
	l.stale, l.dirty = min(l.stale, i), true
}

func (l *lane) remove(id string) {
	i := slices.IndexFunc(l.es, func(e entry) bool { return e.id == id })
	if i < 0 {
		return
	}
	l.es = slices.Delete(l.es, i, i+1)
	l.start, l.end = slices.Delete(l.start, i, i+1), slices.Delete(l.end, i, i+1)
	l.stale, l.dirty = min(l.stale, i), true
}

// at is where e goes in the lane's order; the jobs before it are the
// jobs ahead of it (e itself, if in the lane, is not among them).
func (l *lane) at(e entry) int {
	return sort.Search(len(l.es), func(i int) bool { return !l.es[i].less(e) })
}

// run is how long e runs from a start with free GPUs: on the GPUs it
// asks for, or on an elastic type on the free ones between its least and
// its most, at a speed on the line between its request's and its most's
// (or its least's).
func (e entry) run(free int) float64 {
	switch {
	case free == e.gpus:
		return e.dur
	case free > e.gpus:
		if e.most <= e.gpus {
			return e.dur
		}
		n := min(free, e.most)
		up := e.dur/e.fastest - 1
		return e.dur / (1 + up*float64(n-e.gpus)/float64(e.most-e.gpus))
	}
	if e.least >= e.gpus {
		return e.dur
	}
	n := max(free, e.least)
	down := 1 - e.dur/e.slowest
	return e.dur / (1 - down*float64(e.gpus-n)/float64(e.gpus-e.least))
}

// schedule runs the lane as a list: each job, in order, at the earliest
// time its least fits for its whole run beside the jobs ahead of it (the
// policies skip a job that does not fit and start later ones: backfill).
func (l *lane) schedule() {
	n := len(l.es)
	// The jobs ahead of the first out of date keep their places: a job's
	// place depends only on the jobs ahead of it.
	p := profile{steps: slices.DeleteFunc(l.steps, func(st step) bool { return st.job >= l.stale })}
	for i := l.stale; i < n; i++ {
		l.start[i], l.end[i] = p.place(l.es[i], i, l.gpus)
	}
	l.steps, l.stale, l.dirty = p.steps, n, false
	l.waiting = 0
	for i := range n {
		if l.start[i] > 0 {
			l.waiting++
		}
	}
}

// finish estimates when e would be done in the lane, among the jobs
// already there: at the earliest time its least fits for its whole run
// beside the jobs ahead of it, plus that run.
func (l *lane) finish(e entry) float64 {
	if l.dirty {
		l.schedule()
	}
	i := l.at(e)
	p := profile{steps: l.steps}
	if i < len(l.es) {
		// A job's place depends only on the jobs ahead of it: the jobs
		// ahead of e are where the lane's schedule has them.
		ahead := l.tmp[:0]
		for _, st := range l.steps {
			if st.job < i {
				ahead = append(ahead, st)
			}
		}
		l.tmp, p.steps = ahead, ahead
	}
	// A single look: no hints to keep for later fits.
	_, end, _ := p.scan(e, l.gpus, scan{least: e.least})
	return end
}

// heldBack is the number of jobs of the lane, e left out, that e's
// GPU-seconds there would hold back (see the package comment): under
// least work first the jobs after it in the order, and under least
// attained service all of them, whether they run or wait (the policies
// shrink or stop a running job to serve one ahead of it); under arrival
// order the jobs that wait, for those that will arrive behind it.
func (l *lane) heldBack(e entry, order string) int {
	if l.dirty {
		l.schedule()
	}
	i := l.at(e)
	in := i < len(l.es) && l.es[i].id == e.id
	n := len(l.es) - i
	switch order {
	case ByService:
		n = len(l.es)
	case ByArrival:
		n = l.waiting
		if in && l.start[i] == 0 {
			return n
		}
	}
	if in {
		n--
	}
	return n
}

// step is a change in the GPUs the jobs of a list hold and ask for: the
// start (positive) or end (negative) of the job at index job.
type step struct {
	at        float64
	held, ask int
	job       int
}

// profile is the GPUs held over time by the jobs placed so far, as their
// steps in time order; none are held before the first.
type profile struct {
	steps []step
	// hints remember, for each least a fit was asked for, where the scan
	// for it may resume: no earlier start fits, as placing jobs only adds
	// GPUs held (and lengthens runs, on fewer free GPUs).
	hints []scan
}

// scan is where fit's scan stands: the steps up to i applied, at time at.
type scan struct {
	least, i, held, ask int
	at                  float64
}

// fit is the earliest start and the end of e among the placed jobs: the
// first time (0 or a step's) from which its least fits for its whole run,
// run on what the requests at its start leave it. Where a later time
// breaks a run, the times before it are passed over: exact for a rigid
// run (every start before that time runs through it); an elastic job
// starting in between on more free GPUs might have ended before it.
func (p *profile) fit(e entry, total int) (start, end float64) {
	c := scan{least: e.least}
	h := slices.IndexFunc(p.hints, func(x scan) bool { return x.least == e.least })
	if h >= 0 {
		c = p.hints[h]
	}
	start, end, c = p.scan(e, total, c)
	if h >= 0 {
		p.hints[h] = c
	} else {
		p.hints = append(p.hints, c)
	}
	return start, end
}

// scan is fit from c on; it returns, besides the start and end, the
// first time from c on at which e's least fits beside the jobs then
// running (a later job of the same least may fit in a shorter run there).
func (p *profile) scan(e entry, total int, c scan) (start, end float64, first scan) {
	st := p.steps
	found := false
	for {
		for c.i < len(st) && st[c.i].at <= c.at {
			c.held, c.ask, c.i = c.held+st[c.i].held, c.ask+st[c.i].ask, c.i+1
		}
		if c.held+e.least <= total {
			if !found {
				first, found = c, true
			}
			fin := c.at + e.run(total-c.ask)
			// The steps within its run, a time at once.
			h, a, k := c.held, c.ask, c.i
			ok := true
			var t float64
			for k < len(st) && st[k].at < fin {
				t = st[k].at
				for k < len(st) && st[k].at == t {
					h, a, k = h+st[k].held, a+st[k].ask, k+1
				}
				if h+e.least > total {
					ok = false
					break
				}
			}
			if ok {
				return c.at, fin, first
			}
			// No start before t fits: go on from there.
			c.held, c.ask, c.i, c.at = h, a, k, t
		}
		if c.i == len(st) {
			// Everything placed has ended (it fits: least ≤ total).
			if !found {
				first = c
			}
			return c.at, c.at + e.run(total-c.ask), first
		}
		c.at = st[c.i].at
	}
}

// place fits the job of index job, e, and adds its steps.
func (p *profile) place(e entry, job, total int) (start, end float64) {
	start, end = p.fit(e, total)
	p.insert(step{start, e.least, e.gpus, job})
	p.insert(step{end, -e.least, -e.gpus, job})
	return start, end
}

// insert adds a step after those of its time or earlier.
func (p *profile) insert(x step) {
	i := sort.Search(len(p.steps), func(i int) bool { return p.steps[i].at > x.at })
	p.steps = slices.Insert(p.steps, i, x)
	for k := range p.hints {
		if c := &p.hints[k]; x.at <= c.at {
			c.held, c.ask, c.i = c.held+x.held, c.ask+x.ask, c.i+1
		}
	}
}
