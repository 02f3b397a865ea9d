package model

import (
	"math"
	"slices"
	"sync"
)

// builtinModel is one model of the built-in catalog as builtin_gen.go
// describes it; the constants come from the known table.
type builtinModel struct {
	name    string
	batches []int // traced global batches, ascending
	speed   fittedSpeed
	work    fittedWork
}

// Builtin returns the built-in catalog: the fitted models of builtin_gen.go,
// generated from the Pollux profiles by `go run ./hack/fitcatalog`. It needs
// no data files. The catalog is built once and shared; it is immutable.
func Builtin() *Catalog { return builtin() }

var builtin = sync.OnceValue(func() *Catalog {
	models := make([]*Model, 0, len(builtinModels))
	for _, b := range builtinModels {
		models = append(models, b.model())
	}
	return newCatalog(models)
})

func (b builtinModel) model() *Model {
	k := known[b.name]
	speed, work := b.speed, b.work
	work.m0 = float64(b.batches[0])
	work.epochs = k.epochs
	for _, batch := range b.batches {
		work.logBatches = append(work.logBatches, math.Log(float64(batch)))
	}
	work.prepare()
	return &Model{
		Name:          b.name,
		MinLocalBatch: k.minLocal,
		MaxLocalBatch: k.maxLocal,
		Epochs:        k.epochs,
		Batches:       slices.Clone(b.batches),
		speed:         &speed,
		work:          &work,
		cache:         &stepCache{},
	}
}
