package algorithm

import (
	"cmp"
	"time"
)

// ServiceOrder returns the indices of s's jobs in the order policy p serves
// them, first served first, for showing waiting jobs their place in the
// queue. It is the order each policy itself walks or ranks jobs in:
//
//   - FIFO, Elastic-FIFO and the FfDL Optimizer (which admits jobs at their
//     minimum in arrival order): submission time;
//   - SRJF, Elastic-SRJF and AFS-L (whose tournament, among jobs holding no
//     GPU, lets the shorter job win): remaining time at one GPU, unknown
//     last;
//   - Tiresias and Elastic-Tiresias: queue, then first start (never-started
//     jobs after started ones), then submission;
//   - HeSRPT: weight per GPU, heaviest first.
//
// Ties are broken by submission time and then ID, as in the policies.
// Policies this function does not know are ordered by submission.
func ServiceOrder(p Policy, s *Snapshot) []int {
	switch p := p.(type) {
	case SRJF, ElasticSRJF, AFSL:
		return remainingOrder(s.Jobs)
	case Tiresias:
		idx, _ := tiresiasOrder(s, p.Config, nil)
		return idx
	case ElasticTiresias:
		idx, _ := tiresiasOrder(s, p.Config, nil)
		return idx
	case HeSRPT:
		cfg := p.Config.sane()
		unknown, kmin := unknownWork(s.Jobs), smallestWorker(s.Jobs)
		w := make([]float64, len(s.Jobs))
		for i := range s.Jobs {
			wk, perGPU := cfg.weight(&s.Jobs[i], s.Now, unknown, kmin)
			w[i] = wk * perGPU
		}
		return order(s.Jobs, func(x, y int) int { return cmp.Compare(w[y], w[x]) })
	}
	return orderByKeys(s.Jobs, func(*Job, int) (int64, time.Time) { return 0, time.Time{} }, nil)
}
