package algorithm

// HeSRPTByHeap is HeSRPT with its greedy served by the heap alone, without
// the first phase that grants the leading segments at once: the reference
// that phase must agree with.
func HeSRPTByHeap(p HeSRPT, s Snapshot) (Result, error) { return p.allocate(s, false) }
