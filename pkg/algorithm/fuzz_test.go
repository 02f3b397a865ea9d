package algorithm_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/api"
)

// decodeSnapshot turns arbitrary bytes into a snapshot, valid or not: signed
// bytes give negative and zero worker counts, queues and remaining times.
func decodeSnapshot(data []byte) algorithm.Snapshot {
	next := func() int8 {
		if len(data) == 0 {
			return 0
		}
		b := int8(data[0])
		data = data[1:]
		return b
	}
	s := algorithm.Snapshot{GPUs: int(next())}
	n := int(uint8(next())) % 12
	for i := range n {
		j := algorithm.Job{
			ID:        api.JobID(fmt.Sprintf("j%d", int(uint8(next()))%8+8*(i%2))),
			Min:       int(next()) % 10,
			Max:       int(next()) % 20,
			Requested: int(next()) % 20,
			Queue:     int(next()) % 4,
			Workers:   int(next()) % 10,
			Remaining: float64(next()) * 100,
			Attained:  float64(next()) * 500,
			Submitted: time.Unix(int64(next()%4), 0),
		}
		j.GPUsPerWorker = int(next()) % 9
		switch next() % 4 {
		case 1:
			j.Speedup = func(n int) float64 { return math.NaN() }
		case 2:
			k := float64(next())
			j.Speedup = func(n int) float64 { return k * float64(n%3) }
		case 3:
			j.Remaining = math.Inf(1)
		}
		s.Jobs = append(s.Jobs, j)
	}
	// Nodes of a decoded size, the last one smaller, when GPUs allow.
	if size := int(uint8(next())) % 9; size > 0 && s.GPUs > 0 {
		for g := s.GPUs; g > 0; g -= min(g, size) {
			s.NodeGPUs = append(s.NodeGPUs, min(g, size))
		}
	}
	return s
}

func FuzzAllocate(f *testing.F) {
	f.Add([]byte{8, 3, 1, 1, 4, 2, 0, 0, 10, 0, 0, 2, 1, 8, 0, 1, 0, 1, 5, 0, 0, 0, 3, 2, 1, 2, 0, 1, 1, 2, 3})
	f.Add([]byte{0, 1, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{200, 5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21})
	cfg := algorithm.DefaultConfig()
	f.Fuzz(func(t *testing.T, data []byte) {
		s := decodeSnapshot(data)
		for _, name := range algorithm.Names() {
			p, err := algorithm.New(name, cfg)
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.Allocate(s)
			if err != nil {
				if s.Validate() == nil {
					t.Fatalf("%s rejected a valid snapshot: %v", name, err)
				}
				continue
			}
			if err := algorithm.ValidateResult(&s, got); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
	})
}

func FuzzCanonical(f *testing.F) {
	for _, n := range algorithm.Names() {
		f.Add(n)
	}
	f.Add("elastic-fifo")
	f.Fuzz(func(t *testing.T, name string) {
		c, err := algorithm.Canonical(name)
		if err != nil {
			return
		}
		// A resolved name resolves to itself and builds a policy of that name.
		if again, err := algorithm.Canonical(c); err != nil || again != c {
			t.Fatalf("Canonical(%q) = %q, but Canonical(%q) = %q, %v", name, c, c, again, err)
		}
		p, err := algorithm.New(c, algorithm.DefaultConfig())
		if err != nil || p.Name() != c {
			t.Fatalf("New(%q): %v", c, err)
		}
	})
}
