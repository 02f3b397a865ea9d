package algorithm

// capacity is what a policy has left to hand out. A worker holds its job's
// GPUsPerWorker GPUs, all on one node. While every job's workers hold one
// GPU the total is all that matters, and capacity is one integer, as cheap
// as the counter it replaces. When some job's workers hold more and the
// snapshot lists its nodes, capacity also keeps how many nodes have each
// number of GPUs free, and places every granted worker best-fit (on a node
// with the fewest free GPUs that holds it), so a policy never hands out a
// worker that no node can hold. The policies' packing is a proof that the
// allocation fits; placement then finds the layout that moves least.
type capacity struct {
	free int
	// byFree[f] is the number of nodes with f GPUs free; nil when only the
	// total matters.
	byFree []int
}

// newCapacity returns the snapshot's whole capacity.
func newCapacity(s *Snapshot) capacity {
	c := capacity{free: s.GPUs}
	if len(s.NodeGPUs) == 0 || !s.multiGPU() {
		return c
	}
	most := 0
	for _, g := range s.NodeGPUs {
		most = max(most, g)
	}
	c.byFree = make([]int, most+1)
	for _, g := range s.NodeGPUs {
		c.byFree[g]++
	}
	return c
}

// multiGPU reports whether some job's workers hold more than one GPU. A
// policy asks at every capacity it starts: at 100 000 jobs the scan cost
// more than some of them, so it is done once per run.
func (s *Snapshot) multiGPU() bool {
	if s.multi == 0 {
		s.multi = 1
		for i := range s.Jobs {
			if s.Jobs[i].GPUsPerWorker > 1 {
				s.multi = 2
				break
			}
		}
	}
	return s.multi == 2
}

// fits reports whether n more workers of k GPUs each fit.
func (c *capacity) fits(k, n int) bool {
	if n <= 0 {
		return true
	}
	if n > c.free/k {
		return false
	}
	if c.byFree == nil || k == 1 {
		return true
	}
	room := 0
	for f := k; f < len(c.byFree); f++ {
		if room += c.byFree[f] * (f / k); room >= n {
			return true
		}
	}
	return false
}

// most returns how many more workers of k GPUs fit, up to limit.
func (c *capacity) most(k, limit int) int {
	n := min(limit, c.free/k)
	if c.byFree == nil || k == 1 || n <= 0 {
		return max(n, 0)
	}
	room := 0
	for f := k; f < len(c.byFree) && room < n; f++ {
		room += c.byFree[f] * (f / k)
	}
	return min(n, room)
}

// take hands out n workers of k GPUs each, which must fit (see fits). Each
// worker goes best-fit; a node that took one is then the best fit for the
// next, so the workers are laid a node at a time.
func (c *capacity) take(k, n int) {
	c.free -= n * k
	if c.byFree == nil {
		return
	}
	for f := k; n > 0 && f < len(c.byFree); {
		if c.byFree[f] == 0 {
			f++
			continue
		}
		w := min(n, f/k)
		c.byFree[f]--
		c.byFree[f-w*k]++
		n -= w
		f = k // the node left with f−w·k free may now be the best fit
	}
}

// k returns the job's GPUs per worker, at least 1.
func (j *Job) k() int {
	if j.GPUsPerWorker <= 1 {
		return 1
	}
	return j.GPUsPerWorker
}
