package placement_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/placement"
)

// decodeInput turns fuzz bytes into a small input, invalid ones included:
// byte 255 as a node's GPUs means -1, 254 repeats the previous node's name,
// allocations run from -1 to 8, and workers may sit on nodes that are gone;
// an odd last byte rates layouts (hashedRate).
func decodeInput(data []byte) placement.Input {
	next := func() int {
		if len(data) == 0 {
			return 0
		}
		b := int(data[0])
		data = data[1:]
		return b
	}
	in := placement.Input{Allocation: api.Allocation{}, Current: api.Placement{}}
	nodes := next() % 6
	for i := range nodes {
		name := api.NodeName(fmt.Sprintf("n%d", i))
		b := next()
		gpus := b % 9
		switch {
		case b == 255:
			gpus = -1
		case b == 254 && i > 0:
			name = in.Nodes[i-1].Name
		}
		in.Nodes = append(in.Nodes, api.Node{Name: name, GPUs: gpus})
	}
	for j := range next() % 6 {
		id := api.JobID(fmt.Sprintf("j%d", j))
		in.Allocation[id] = next()%10 - 1
		var at []api.NodeName
		for range next() % 7 {
			at = append(at, api.NodeName(fmt.Sprintf("n%d", next()%(nodes+2))))
		}
		in.Current[id] = at
	}
	if next()%2 == 1 {
		in.Throughput = hashedRate
	}
	return in
}

func FuzzPlace(f *testing.F) {
	f.Add([]byte{2, 4, 4, 2, 3, 2, 0, 0, 1, 0, 0})
	f.Add([]byte{3, 8, 2, 4, 3, 9, 6, 0, 0, 0, 1, 1, 2, 2, 4, 0, 4, 5, 5, 5, 5, 0, 0})
	f.Add([]byte{2, 4, 254, 1, 3, 0})
	f.Add([]byte{1, 255, 1, 2, 0})
	f.Add([]byte{1, 1, 1, 9, 0})
	f.Add([]byte{4, 4, 4, 4, 4, 1, 8, 0, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		in := decodeInput(data)
		out, err := placement.Place(in)
		if err != nil {
			if !errors.Is(err, placement.ErrInvalidInput) && !errors.Is(err, placement.ErrOverCapacity) {
				t.Fatalf("Place(%+v): unexpected kind of error %v", in, err)
			}
			return
		}
		if err := checkInvariants(in, out); err != nil {
			t.Fatalf("Place(%+v) = %+v breaks:\n%v", in, out, err)
		}
		again, _ := placement.Place(in)
		if diff := cmp.Diff(out, again); diff != "" {
			t.Fatalf("Place(%+v) differs on a second run (-first,+second):\n%s", in, diff)
		}
	})
}
