package placement_test

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"

	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/placement"
)

// inputWrapper builds placement inputs fluently:
// makeInput().node("a", 4).alloc("j", 2).at("j", "a", "a").obj().
type inputWrapper struct{ in placement.Input }

func makeInput() *inputWrapper {
	return &inputWrapper{in: placement.Input{Allocation: api.Allocation{}, Current: api.Placement{}}}
}

func (w *inputWrapper) node(name string, gpus int) *inputWrapper {
	w.in.Nodes = append(w.in.Nodes, api.Node{Name: api.NodeName(name), GPUs: gpus})
	return w
}

func (w *inputWrapper) alloc(job string, workers int) *inputWrapper {
	w.in.Allocation[api.JobID(job)] = workers
	return w
}

// perWorker sets the GPUs each of the job's workers holds.
func (w *inputWrapper) perWorker(job string, k int) *inputWrapper {
	if w.in.GPUsPerWorker == nil {
		w.in.GPUsPerWorker = map[api.JobID]int{}
	}
	w.in.GPUsPerWorker[api.JobID(job)] = k
	return w
}

// gpusPerWorker is the job's worker size in, at least 1.
func gpusPerWorker(in placement.Input, id api.JobID) int {
	return max(in.GPUsPerWorker[id], 1)
}

// at sets where the job's workers run now, by worker index.
func (w *inputWrapper) at(job string, nodes ...string) *inputWrapper {
	w.in.Current[api.JobID(job)] = names(nodes...)
	return w
}

func (w *inputWrapper) obj() placement.Input { return w.in }

func names(nodes ...string) []api.NodeName {
	out := make([]api.NodeName, len(nodes))
	for i, n := range nodes {
		out[i] = api.NodeName(n)
	}
	return out
}

// checkInvariants returns every promise of Place that out breaks for in.
func checkInvariants(in placement.Input, out placement.Output) error {
	var errs []error
	capacity := map[api.NodeName]int{}
	for _, n := range in.Nodes {
		capacity[n.Name] = n.GPUs
	}
	used := map[api.NodeName]int{}
	for _, id := range slices.Sorted(maps.Keys(out.Placement)) {
		if in.Allocation[id] <= 0 {
			errs = append(errs, fmt.Errorf("job %s is placed without an allocation", id))
		}
		for _, n := range out.Placement[id] {
			if _, ok := capacity[n]; !ok {
				errs = append(errs, fmt.Errorf("job %s uses unknown node %q", id, n))
			}
			used[n] += gpusPerWorker(in, id)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(used)) {
		if used[n] > capacity[n] {
			errs = append(errs, fmt.Errorf("node %s holds workers of %d GPUs, has %d GPUs", n, used[n], capacity[n]))
		}
	}
	for _, id := range slices.Sorted(maps.Keys(in.Allocation)) {
		if w := in.Allocation[id]; w > 0 && len(out.Placement[id]) != w {
			errs = append(errs, fmt.Errorf("job %s has %d workers placed, want %d", id, len(out.Placement[id]), w))
		}
	}
	errs = append(errs, checkMoves(in, out, capacity)...)
	// With workers of several GPUs, unchanged jobs may have to move to
	// make room in whole blocks (multigpu_test.go covers when).
	if consistent(in, capacity) && !multiGPU(in) {
		for _, id := range unchangedJobs(in, capacity) {
			if slices.Equal(in.Current[id], out.Placement[id]) {
				continue
			}
			if fasterLayout(in, out, id) {
				continue
			}
			if err := madeRoom(in, out, id); err != nil {
				errs = append(errs, fmt.Errorf("unchanged job %s moved: %v → %v: %w", id, in.Current[id], out.Placement[id], err))
			}
		}
	}
	return errors.Join(errs...)
}

// fasterLayout reports whether Throughput rates an unchanged job's new
// layout at least 25% above its old one, a reason for it to move.
func fasterLayout(in placement.Input, out placement.Output, id api.JobID) bool {
	if in.Throughput == nil {
		return false
	}
	k := gpusPerWorker(in, id)
	gpus := func(nodes []api.NodeName) []int {
		layout := perNode(nodes)
		for i := range layout {
			layout[i] *= k
		}
		return layout
	}
	old := in.Throughput(id, gpus(in.Current[id]))
	return old > 0 && in.Throughput(id, gpus(out.Placement[id])) >= 1.25*old
}

// madeRoom checks the two reasons an unchanged job of one-GPU workers may
// move (compact.go): it lay on several nodes and now lies whole on one, or
// it lay whole on one node, lies whole on one node again, and a larger job
// now lies whole on its old node.
func madeRoom(in placement.Input, out placement.Output, id api.JobID) error {
	old, now := in.Current[id], out.Placement[id]
	if !onOneNode(now) {
		return errors.New("it moved, but not whole onto one node")
	}
	if !onOneNode(old) {
		return nil // gathered
	}
	for other, nodes := range out.Placement {
		if other != id && len(nodes)*gpusPerWorker(in, other) > len(old)*gpusPerWorker(in, id) &&
			onOneNode(nodes) && nodes[0] == old[0] {
			return nil
		}
	}
	return errors.New("no larger job took its node whole")
}

func onOneNode(nodes []api.NodeName) bool {
	for _, n := range nodes {
		if n != nodes[0] {
			return false
		}
	}
	return len(nodes) > 0
}

// checkMoves recomputes Moves and RestartAll from the two placements, and
// checks that no other numbering of the workers over the same per-node
// counts moves fewer of them: node n can keep at most min(survivors on n,
// workers on n) of the job's surviving workers, and Place must keep exactly
// that many.
func checkMoves(in placement.Input, out placement.Output, capacity map[api.NodeName]int) []error {
	var errs []error
	for _, id := range slices.Sorted(maps.Keys(out.Placement)) {
		now, old := out.Placement[id], in.Current[id]
		surviving := min(len(old), len(now))
		var want []api.WorkerMove
		oldOn, newOn := map[api.NodeName]int{}, map[api.NodeName]int{}
		for i := range surviving {
			if now[i] != old[i] {
				want = append(want, api.WorkerMove{Index: i, From: old[i], To: now[i]})
			}
			if _, ok := capacity[old[i]]; ok {
				oldOn[old[i]]++
			}
		}
		for _, n := range now {
			newOn[n]++
		}
		if !slices.Equal(want, out.Moves[id]) {
			errs = append(errs, fmt.Errorf("job %s: moves %v, want %v", id, out.Moves[id], want))
		}
		if all := surviving > 0 && len(want) == surviving; out.RestartAll[id] != all {
			errs = append(errs, fmt.Errorf("job %s: RestartAll %v, want %v", id, out.RestartAll[id], all))
		}
		stay := 0
		for n, k := range oldOn {
			stay += min(k, newOn[n])
		}
		if moved := len(want); moved != surviving-stay {
			errs = append(errs, fmt.Errorf("job %s: %d workers move, the per-node counts allow %d", id, moved, surviving-stay))
		}
	}
	for _, id := range slices.Sorted(maps.Keys(out.Moves)) {
		if _, ok := out.Placement[id]; !ok || len(out.Moves[id]) == 0 {
			errs = append(errs, fmt.Errorf("job %s: stray moves entry %v", id, out.Moves[id]))
		}
	}
	for _, id := range slices.Sorted(maps.Keys(out.RestartAll)) {
		if !out.RestartAll[id] {
			errs = append(errs, fmt.Errorf("job %s: RestartAll entry set to false", id))
		}
	}
	return errs
}

func multiGPU(in placement.Input) bool {
	for _, k := range in.GPUsPerWorker {
		if k > 1 {
			return true
		}
	}
	return false
}

// unchangedJobs lists the jobs Place must not move: same size, every node
// still there.
func unchangedJobs(in placement.Input, capacity map[api.NodeName]int) []api.JobID {
	var out []api.JobID
	for _, id := range slices.Sorted(maps.Keys(in.Allocation)) {
		old := in.Current[id]
		if len(old) == 0 || len(old) != in.Allocation[id] {
			continue
		}
		alive := true
		for _, n := range old {
			_, ok := capacity[n]
			alive = alive && ok
		}
		if alive {
			out = append(out, id)
		}
	}
	return out
}

// consistent reports whether the unchanged jobs fit where they are, the
// condition under which Place promises not to move them.
func consistent(in placement.Input, capacity map[api.NodeName]int) bool {
	used := map[api.NodeName]int{}
	for _, id := range unchangedJobs(in, capacity) {
		for _, n := range in.Current[id] {
			used[n] += gpusPerWorker(in, id)
			if used[n] > capacity[n] {
				return false
			}
		}
	}
	return true
}

// clusterSizes are Philly-like job sizes: mostly small jobs (mean ≈ 3.6).
var clusterSizes = []int{1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 4, 4, 4, 4, 8, 8, 16}

// scenario is a busy cluster after some rounds of scheduling: nodes×gpus
// GPUs about 90% allocated to Philly-sized jobs, placed by earlier rounds in
// which about a tenth of the jobs changed each time (finished, arrived, grew
// or shrank). Input is the next such round.
func scenario(seed uint64, nodes, gpus, rounds int) placement.Input {
	r := rand.New(rand.NewPCG(seed, uint64(nodes)))
	in := placement.Input{Allocation: api.Allocation{}, Current: api.Placement{}}
	for i := range nodes {
		in.Nodes = append(in.Nodes, api.Node{Name: api.NodeName(fmt.Sprintf("node-%05d", i)), GPUs: gpus})
	}
	capacity := nodes * gpus
	next := 0
	newJob := func() {
		in.Allocation[api.JobID(fmt.Sprintf("job-%06d", next))] = clusterSizes[r.IntN(len(clusterSizes))]
		next++
	}
	for in.Allocation.Total() < capacity*9/10 {
		newJob()
	}
	for round := 0; round <= rounds; round++ {
		if round > 0 {
			out, err := placement.Place(in)
			if err != nil {
				panic(err)
			}
			in.Current = out.Placement
			in.Allocation = mutate(r, in.Allocation, capacity, newJob)
		}
	}
	return in
}

// mutate changes about a tenth of the jobs: some finish, some halve or
// double, and new ones arrive to bring the cluster back to about 90%.
func mutate(r *rand.Rand, alloc api.Allocation, capacity int, newJob func()) api.Allocation {
	out := maps.Clone(alloc)
	for _, id := range slices.Sorted(maps.Keys(alloc)) {
		if r.IntN(10) != 0 {
			continue
		}
		switch w := out[id]; r.IntN(3) {
		case 0:
			delete(out, id)
		case 1:
			out[id] = max(1, w/2)
		case 2:
			if out.Total()+w <= capacity {
				out[id] = 2 * w
			}
		}
	}
	clear(alloc)
	maps.Copy(alloc, out)
	for alloc.Total() < capacity*9/10 {
		newJob()
	}
	for alloc.Total() > capacity {
		// Undo the last arrival; sizes are small next to the 10% slack.
		ids := slices.Sorted(maps.Keys(alloc))
		delete(alloc, ids[len(ids)-1])
	}
	return alloc
}
