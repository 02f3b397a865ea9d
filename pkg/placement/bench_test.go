package placement_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/vodascheduler/voda/pkg/placement"
)

// BenchmarkPlace times one scheduling round on a busy cluster of 8-GPU nodes
// (about 90% allocated, after a few rounds of churn). "churn" is the usual
// round: about a tenth of the jobs finished, arrived or were resized since
// the last one (targets: ≤ 20 ms for 512 nodes, ≤ 500 ms for 4 096 nodes).
// "resize-all" halves or doubles every job at once, the worst case for the
// matching.
func BenchmarkPlace(b *testing.B) {
	for _, nodes := range []int{512, 4096} {
		for _, all := range []bool{false, true} {
			in := scenario(1, nodes, 8, 4)
			round := "churn"
			if all {
				in, round = resizeAll(in, nodes*8), "resize-all"
			}
			name := fmt.Sprintf("nodes=%d/jobs=%d/%s", nodes, len(in.Allocation), round)
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := placement.Place(in); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// resizeAll halves every other job and doubles the rest while they fit.
func resizeAll(in placement.Input, capacity int) placement.Input {
	in.Allocation = maps.Clone(in.Allocation)
	for i, id := range slices.Sorted(maps.Keys(in.Allocation)) {
		w := in.Allocation[id]
		switch {
		case i%2 == 0:
			in.Allocation[id] = max(1, w/2)
		case in.Allocation.Total()+w <= capacity:
			in.Allocation[id] = 2 * w
		}
	}
	return in
}

// BenchmarkPlaceThroughput is BenchmarkPlace's usual round with a rate for
// every layout (Input.Throughput): the cost of step 6, which scores up to
// 4 096 partial layouts and scans the nodes for every job placed anew.
func BenchmarkPlaceThroughput(b *testing.B) {
	for _, nodes := range []int{16, 512} {
		in := scenario(1, nodes, 8, 4)
		in.Throughput = hashedRate
		b.Run(fmt.Sprintf("nodes=%d/jobs=%d/churn", nodes, len(in.Allocation)), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := placement.Place(in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
