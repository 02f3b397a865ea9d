// Package parallel runs the iterations of a loop on a few goroutines.
package parallel

import "sync"

// For calls fn(0) … fn(n-1), at most workers of them at a time, and returns
// once all have returned. With workers ≤ 1 it calls them in order on the
// caller's goroutine.
func For(n, workers int, fn func(i int)) {
	if workers <= 1 || n <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for i := range next {
				fn(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}
