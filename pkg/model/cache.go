package model

import (
	"sync"
	"sync/atomic"
)

// stepCache memoises StepSeconds. A simulation asks about the same few
// placements and batches again and again, and the fitted model spends most
// of a call in math.Pow. A cached value is exactly the value the call would
// compute, so the cache never changes a result; it stops growing at
// maxCached entries, which bounds its memory whatever the callers ask.
type stepCache struct {
	m sync.Map // stepKey -> float64
	n atomic.Int64
}

// stepKey identifies a StepSeconds call: both speed models depend on the
// placement only through its key, node count and GPU count.
type stepKey struct {
	key         int64
	nodes, gpus int
	batch       int
}

const maxCached = 1 << 16

func (c *stepCache) get(k stepKey) (float64, bool) {
	if c == nil {
		return 0, false
	}
	v, ok := c.m.Load(k)
	if !ok {
		return 0, false
	}
	return v.(float64), true
}

func (c *stepCache) put(k stepKey, v float64) {
	if c == nil || c.n.Load() >= maxCached {
		return
	}
	if _, loaded := c.m.LoadOrStore(k, v); !loaded {
		c.n.Add(1)
	}
}
