package algorithm

import "github.com/vodascheduler/voda/pkg/api"

// HeSRPTByHeap is HeSRPT with its greedy served by the heap alone, without
// the first phase that grants the leading segments at once: the reference
// that phase must agree with.
func HeSRPTByHeap(p HeSRPT, s Snapshot) (Result, error) { return allocate(heapOnly{p}, s) }

// heapOnly is HeSRPT with the greedy's first phase off.
type heapOnly struct{ HeSRPT }

func (p heapOnly) decide(s *Snapshot, d *Decision) error { return p.decideBy(s, d, false) }

// HeSRPTObjective is what allocation a is worth to HeSRPT on snapshot s:
// the objective by which it keeps the greedy's result or an alternative.
func HeSRPTObjective(p HeSRPT, s Snapshot, a map[api.JobID]int) float64 {
	cfg := p.Config.sane()
	hs := newHSState(&s, cfg)
	for i := range hs.st {
		hs.st[i].n = a[hs.jobs[i].ID]
	}
	return hs.objective(cfg)
}
