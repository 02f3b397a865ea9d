package parallel

import (
	"sync"
	"testing"
)

// Every iteration runs once, never more than workers at a time, and all
// have returned when For does.
func TestFor(t *testing.T) {
	for _, c := range []struct{ n, workers, most int }{
		{0, 4, 0}, {1, 4, 1}, {10, 1, 1}, {10, 0, 1}, {10, 3, 3}, {2, 8, 2},
	} {
		var mu sync.Mutex
		seen := make([]int, c.n)
		now, most := 0, 0
		release := make(chan struct{})
		started := make(chan struct{}, c.n)
		go func() {
			// Let the first batch of iterations all start before any ends,
			// so that the most at once is reached.
			for range min(c.workers, c.n) {
				if c.workers > 1 {
					<-started
				}
			}
			close(release)
		}()
		For(c.n, c.workers, func(i int) {
			mu.Lock()
			now++
			most = max(most, now)
			seen[i]++
			mu.Unlock()
			started <- struct{}{}
			if c.workers > 1 {
				<-release
			}
			mu.Lock()
			now--
			mu.Unlock()
		})
		for i, s := range seen {
			if s != 1 {
				t.Errorf("n=%d workers=%d: iteration %d ran %d times", c.n, c.workers, i, s)
			}
		}
		if now != 0 {
			t.Errorf("n=%d workers=%d: %d iterations still running after For returned", c.n, c.workers, now)
		}
		if most != c.most {
			t.Errorf("n=%d workers=%d: %d at once, want %d", c.n, c.workers, most, c.most)
		}
	}
}
