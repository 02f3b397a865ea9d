package model

import (
	"cmp"
	"slices"
)

// speedModel gives the time of one optimizer step without accumulation:
// step is the whole step with one micro-batch of local samples per GPU,
// sync the part of it spent synchronising gradients (so an extra
// accumulation micro-batch costs step - sync).
type speedModel interface {
	times(s shape, local int) (step, sync float64)
}

// maxNodes caps the node count of the fallback lookup, as the Pollux
// simulator does (README: "nodes capped at 16").
const maxNodes = 16

// measuredSpeed answers from the measured profiles: placements.csv for the
// placements it holds, otherwise a blend of measured configurations (see
// doc.go, "Unmeasured placements").
type measuredSpeed struct {
	placements  map[int64]*curve
	scalability map[[2]int]*curve // by (nodes, GPUs)
	byNodes     []nodeConfigs     // ascending by nodes
}

// nodeConfigs holds the measured configurations with one node count, by
// GPUs per node. For node counts in placements.csv a configuration averages
// every placement with that many nodes and GPUs.
type nodeConfigs struct {
	nodes   int
	perNode []float64 // GPUs per node, ascending
	curves  []*curve
}

func newMeasuredSpeed(prows []placementRow, srows []scalabilityRow) *measuredSpeed {
	byKey := map[int64][]timing{}
	type config struct{ nodes, gpus int }
	byConfig := map[config][]timing{}
	for _, r := range prows {
		byKey[r.key] = append(byKey[r.key], r.timing)
		c := config{r.nodes, r.gpus}
		byConfig[c] = append(byConfig[c], r.timing)
	}
	byScal := map[config][]timing{}
	for _, r := range srows {
		c := config{r.nodes, r.gpus}
		byScal[c] = append(byScal[c], r.timing)
		byConfig[c] = append(byConfig[c], r.timing)
	}
	m := &measuredSpeed{placements: make(map[int64]*curve, len(byKey)), scalability: make(map[[2]int]*curve, len(byScal))}
	for key, ts := range byKey {
		m.placements[key] = newCurve(ts)
	}
	for c, ts := range byScal {
		m.scalability[[2]int{c.nodes, c.gpus}] = newCurve(ts)
	}
	configs := make([]config, 0, len(byConfig))
	for c := range byConfig {
		configs = append(configs, c)
	}
	slices.SortFunc(configs, func(a, b config) int {
		return cmp.Or(cmp.Compare(a.nodes, b.nodes), cmp.Compare(a.gpus, b.gpus))
	})
	for _, c := range configs {
		if n := len(m.byNodes); n == 0 || m.byNodes[n-1].nodes != c.nodes {
			m.byNodes = append(m.byNodes, nodeConfigs{nodes: c.nodes})
		}
		nc := &m.byNodes[len(m.byNodes)-1]
		nc.perNode = append(nc.perNode, float64(c.gpus)/float64(c.nodes))
		nc.curves = append(nc.curves, newCurve(byConfig[c]))
	}
	return m
}

func (m *measuredSpeed) times(s shape, local int) (step, sync float64) {
	l := float64(local)
	if c, ok := m.placements[s.key]; ok {
		return c.at(l)
	}
	// Not measured as a placement: blend the measured configurations with
	// the nearest node counts below and above, each at the same GPUs per
	// node, linearly in node count then in GPUs per node.
	nodes := float64(min(s.nodes, maxNodes))
	perNode := float64(s.gpus) / float64(s.nodes)
	i, _ := slices.BinarySearchFunc(m.byNodes, nodes, func(nc nodeConfigs, x float64) int {
		return cmp.Compare(float64(nc.nodes), x)
	})
	lo, hi := i-1, i
	switch {
	case hi < len(m.byNodes) && float64(m.byNodes[hi].nodes) == nodes:
		lo = hi
	case hi == len(m.byNodes):
		hi = lo
	case lo < 0:
		lo = hi
	}
	step, sync = m.byNodes[lo].at(perNode, l)
	if lo == hi {
		return step, sync
	}
	t := (nodes - float64(m.byNodes[lo].nodes)) / float64(m.byNodes[hi].nodes-m.byNodes[lo].nodes)
	step2, sync2 := m.byNodes[hi].at(perNode, l)
	return lerp(step, step2, t), lerp(sync, sync2, t)
}

// at blends the configurations with the nearest GPUs per node.
func (nc *nodeConfigs) at(perNode, local float64) (step, sync float64) {
	i, j, t := bracket(nc.perNode, perNode)
	step, sync = nc.curves[i].at(local)
	if i == j {
		return step, sync
	}
	step2, sync2 := nc.curves[j].at(local)
	return lerp(step, step2, t), lerp(sync, sync2, t)
}
