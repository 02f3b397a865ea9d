package model

import (
	"fmt"
	"math"
	"slices"
)

// Catalog holds models by name. It is immutable once built and safe for
// concurrent use.
type Catalog struct {
	models map[string]*Model
	names  []string
}

func newCatalog(models []*Model) *Catalog {
	c := &Catalog{models: make(map[string]*Model, len(models))}
	for _, m := range models {
		c.models[m.Name] = m
		c.names = append(c.names, m.Name)
	}
	slices.Sort(c.names)
	return c
}

// Model returns the model called name.
func (c *Catalog) Model(name string) (*Model, error) {
	if m, ok := c.models[name]; ok {
		return m, nil
	}
	return nil, fmt.Errorf("unknown model %q (known: %s)", name, joinNames(c.names))
}

// Names returns the names of the models, sorted.
func (c *Catalog) Names() []string { return slices.Clone(c.names) }

// Model is one training job type: its batch-size limits, the work it needs
// and how fast it runs on a placement. Its methods are safe for concurrent
// use; treat the fields as read-only.
type Model struct {
	Name          string
	MinLocalBatch int   // smallest per-GPU batch
	MaxLocalBatch int   // largest per-GPU batch; above it, gradients accumulate
	Epochs        int   // epochs to finish training
	Batches       []int // traced global batch sizes, ascending; Batches[0] is M0

	speed speedModel
	work  workModel
	cache *stepCache
}

// InitBatch returns M0, the smallest traced global batch: the unit of
// statistical progress and the batch above which a 1-GPU job accumulates.
func (m *Model) InitBatch() int { return m.Batches[0] }

// StepSeconds returns the seconds per optimizer step at global batch batch
// on a placement with gpusPerNode[i] GPUs on node i (zeros ignored; node
// order matters only as far as the data distinguishes non-rotated orders,
// see PlacementKey). It returns +Inf when the placement has no GPUs or
// batch < 1.
//
// The per-GPU batch is ceil(batch/n) on n GPUs. Above MaxLocalBatch the job
// accumulates gradients over accum = ceil(local/MaxLocalBatch) - 1 extra
// micro-batches, local becoming ceil(batch/(n*(accum+1))); a 1-GPU job whose
// batch exceeds InitBatch always accumulates at least once. A step then takes
// step + accum*(step - sync) seconds (README, "How the Pollux simulator turns
// these into job progress").
func (m *Model) StepSeconds(gpusPerNode []int, batch int) float64 {
	s := reduce(gpusPerNode)
	if s.gpus == 0 || batch < 1 {
		return math.Inf(1)
	}
	k := stepKey{key: s.key, nodes: s.nodes, gpus: s.gpus, batch: batch}
	if v, ok := m.cache.get(k); ok {
		return v
	}
	local, accum := m.microBatch(s.gpus, batch)
	step, sync := m.speed.times(s, local)
	v := step + float64(accum)*(step-sync)
	m.cache.put(k, v)
	return v
}

// FastestStepSeconds returns a lower bound on StepSeconds(shape, batch)
// over every placement of n GPUs on at most maxNodes nodes of at most
// perNode GPUs each: the least over the measured placements of n GPUs that
// fit, and over the blends by node count that answer for the placements
// not measured (exact for a fitted model). Measured placements are not
// always slower when spread (in the Pollux profiles BERT steps faster on
// 2+2+2+2 GPUs than on 4+4), so the most compact placement is not a bound.
// It returns +Inf when no placement fits or batch < 1.
func (m *Model) FastestStepSeconds(n, perNode, maxNodes, batch int) float64 {
	if n < 1 || perNode < 1 || batch < 1 || ceilDiv(n, perNode) > maxNodes {
		return math.Inf(1)
	}
	local, accum := m.microBatch(n, batch)
	best := math.Inf(1)
	at := func(step, sync float64) { best = min(best, step+float64(accum)*(step-sync)) }
	if ms, ok := m.speed.(*measuredSpeed); ok {
		for key, c := range ms.placements {
			nodes, gpus, most := keyCounts(key)
			if gpus == n && nodes <= maxNodes && most <= perNode {
				at(c.at(float64(local)))
			}
		}
	}
	for nodes := ceilDiv(n, perNode); nodes <= min(n, maxNodes); nodes++ {
		at(m.speed.times(shape{nodes: nodes, gpus: n}, local)) // key 0: the blend
	}
	return best
}

// microBatch returns the per-GPU micro-batch and the extra accumulation
// micro-batches for a global batch on n GPUs.
func (m *Model) microBatch(n, batch int) (local, accum int) {
	local = ceilDiv(batch, n)
	if local > m.MaxLocalBatch {
		accum = ceilDiv(local, m.MaxLocalBatch) - 1
	}
	if n == 1 && batch > m.Batches[0] {
		accum = max(accum, 1)
	}
	if accum > 0 {
		local = ceilDiv(batch, n*(accum+1))
	}
	return local, accum
}

// Steps returns the optimizer steps needed to finish training at a fixed
// global batch (see doc.go, "Work"). It returns +Inf for batch < 1.
func (m *Model) Steps(batch int) float64 {
	if batch < 1 {
		return math.Inf(1)
	}
	return m.work.steps(float64(batch))
}

// MaxWorkers returns the largest GPU count whose per-GPU batch batch/n stays
// at least MinLocalBatch, between 1 and 64 (the profiled testbed's size).
// Models the Pollux simulator pins to one GPU (ncf) always get 1
// (research/algorithms.md §4.2a).
func (m *Model) MaxWorkers(batch int) int {
	if singleGPU[m.Name] {
		return 1
	}
	return min(max(batch/m.MinLocalBatch, 1), maxWorkersCap)
}

// ceilDiv returns ceil(a/b) for a, b >= 1 without overflowing.
func ceilDiv(a, b int) int { return (a-1)/b + 1 }
