package algorithm

import "math"

// AFSL is AFS-L, the length-aware "Apathetic Future Share" policy of Hwang et
// al., "Elastic Resource Sharing for Distributed Deep Learning" (NSDI'21).
// GPUs are handed out one at a time. Each goes to the winner of a tournament
// over the jobs in submission order, where the current winner X meets each
// later job Y in turn:
//
//   - if both hold no GPUs, the one with less remaining work wins;
//   - otherwise let A be the job with the shorter remaining length at its
//     own current allocation (remaining / S(n); infinite with no GPUs) and B
//     the other; B wins iff its relative gain against its new throughput,
//     (T_B(b+1) − T_B(b)) / T_B(b+1), beats A's relative gain against its
//     current throughput, (T_A(a+1) − T_A(a)) / T_A(a).
//
// Differences from the original Voda code, which had these as defects:
// lengths use each job's own allocation (not the current winner's); a job
// holding no GPUs receives its minimum as one block (valued as a relative
// gain of 1), so no job ends below its minimum and nothing divides by zero;
// a job leaves the tournament at its maximum or when one more GPU would not
// raise its throughput, so no GPU is handed out for nothing.
//
// Workers of several GPUs: the tournament hands out a worker at a time, and
// a running job's relative gains are divided by its GPUs per worker, so jobs
// of different worker sizes compete per GPU; a job whose next worker no
// longer fits whole on a node leaves the tournament.
type AFSL struct{}

var _ Policy = AFSL{}

// Name implements Policy.
func (AFSL) Name() string { return NameAFSL }

// afsState is one job in AFS-L's tournament. A round holds one per job:
// 48 bytes, with its workers as 32 bits (they are at most the cluster's
// GPUs).
type afsState struct {
	job    *Job
	rem    float64 // remaining time at one GPU (+Inf unknown)
	length float64 // remaining time at the current allocation
	gNew   float64 // relative gain against the new throughput (as B)
	gCur   float64 // relative gain against the current throughput (as A)
	n      int32
	active bool
}

func (a *afsState) refresh() {
	if a.n == 0 {
		a.length, a.gNew, a.gCur = math.Inf(1), 1, math.Inf(1)
		return
	}
	cur, next := a.job.S(int(a.n)), a.job.S(int(a.n)+1)
	a.length = math.Inf(1)
	if cur > 0 {
		a.length = a.rem / cur
	}
	a.gNew, a.gCur = 0, 0
	if next > cur {
		// Per GPU: a worker of k GPUs costs k grants' worth.
		k := float64(a.job.k())
		a.gNew = (next - cur) / next / k
		a.gCur = math.Inf(1)
		if cur > 0 {
			a.gCur = (next - cur) / cur / k
		}
	}
}

// beats reports whether challenger y takes the GPU from the current winner x.
func beats(x, y *afsState) bool {
	if x.n == 0 && y.n == 0 {
		return y.rem < x.rem
	}
	a, b, yIsB := x, y, true
	if y.length < x.length {
		a, b, yIsB = y, x, false
	}
	bWins := b.gNew > a.gCur
	return bWins == yIsB
}

// grant hands the next worker (or a waiting job's minimum) to the
// tournament's winner, or takes the winner out of the tournament when that
// does not fit in c; capacity only shrinks, so it never fits later. It
// returns false when no job is left to take one.
func (t *tournament) grant(c *capacity, d *Decision) bool {
	w := t.winner()
	if w < 0 {
		return false
	}
	a := &t.st[w]
	j := a.job
	wasZero := a.n == 0
	switch {
	case !wasZero && c.fits(j.k(), 1):
		a.n++
		c.take(j.k(), 1)
	case !wasZero:
		a.active = false
	case c.fits(j.k(), j.Min):
		a.n = int32(j.Min)
		c.take(j.k(), j.Min)
	default:
		a.active = false
		d.reason(t.idx[w], noRoom(j, j.Min, c))
	}
	if n := int(a.n); a.active && (n >= j.Max || !(j.S(n+1) > j.S(n))) {
		a.active = false
	}
	a.refresh()
	t.update(w, wasZero)
	return true
}

// Allocate implements Policy.
func (p AFSL) Allocate(s Snapshot) (Result, error) { return allocate(p, s) }

func (AFSL) decide(s *Snapshot, d *Decision) error {
	t := newTournament(s, &d.order)
	c := newCapacity(s)
	for c.free > 0 && t.grant(&c, d) {
	}
	for p := range t.st {
		a, i := &t.st[p], t.idx[p]
		d.Workers[i] = int(a.n)
		switch {
		case a.n > 0:
			d.reason(i, allocated(a.job, int(a.n)))
		case a.active:
			d.reason(i, noRoom(a.job, a.job.Min, &c))
		}
	}
	return nil
}
