package quota

import (
	"cmp"
	"container/heap"
	"math"
)

// shareHeap orders the queues that may still borrow by who borrows the next
// GPU: the lowest weighted share, then the queue holding more above its
// budget so far (the holder keeps what it has), then by name.
type shareHeap struct {
	idx     []int
	queues  []Queue
	demands []Demand
	out     []Share
}

func newShareHeap(queues []Queue, demands []Demand, out []Share, room []int) *shareHeap {
	h := &shareHeap{queues: queues, demands: demands, out: out}
	for i := range queues {
		if room[i] > 0 {
			h.idx = append(h.idx, i)
		}
	}
	heap.Init(h)
	return h
}

func (h *shareHeap) share(i int) float64 {
	w := h.queues[i].Weight
	if w == 0 {
		return math.Inf(1)
	}
	return float64(h.out[i].Borrowed) / w
}

func (h *shareHeap) compare(a, b int) int {
	if c := cmp.Compare(h.share(a), h.share(b)); c != 0 {
		return c
	}
	if h.queues[a].Weight == 0 && h.queues[b].Weight == 0 {
		if c := cmp.Compare(h.out[a].Borrowed, h.out[b].Borrowed); c != 0 {
			return c
		}
	}
	held := func(i int) int { return h.demands[i].Used - h.out[i].Guaranteed - h.out[i].Borrowed }
	if c := cmp.Compare(held(b), held(a)); c != 0 {
		return c
	}
	return cmp.Compare(h.queues[a].Name, h.queues[b].Name)
}

func (h *shareHeap) Len() int           { return len(h.idx) }
func (h *shareHeap) Less(a, b int) bool { return h.compare(h.idx[a], h.idx[b]) < 0 }
func (h *shareHeap) Swap(a, b int)      { h.idx[a], h.idx[b] = h.idx[b], h.idx[a] }
func (h *shareHeap) Push(x any)         { h.idx = append(h.idx, x.(int)) }
func (h *shareHeap) Pop() any {
	n := len(h.idx) - 1
	x := h.idx[n]
	h.idx = h.idx[:n]
	return x
}

// top is the queue that borrows next; fix restores the order after its
// share grew; drop removes it.
func (h *shareHeap) top() int { return h.idx[0] }
func (h *shareHeap) fix()     { heap.Fix(h, 0) }
func (h *shareHeap) drop()    { heap.Pop(h) }
