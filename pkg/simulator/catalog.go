package simulator

import "github.com/vodascheduler/voda/pkg/model"

// ModelCatalog adapts a model catalog to the simulator.
func ModelCatalog(c *model.Catalog) Catalog { return modelCatalog{c} }

type modelCatalog struct{ c *model.Catalog }

func (m modelCatalog) Lookup(name string) (Model, error) {
	mod, err := m.c.Model(name)
	if err != nil {
		return nil, err
	}
	return mod, nil
}

// Batches returns the traced batch sizes of a model (none if unknown).
func Batches(c *model.Catalog) func(string) []int {
	return func(name string) []int {
		mod, err := c.Model(name)
		if err != nil {
			return nil
		}
		return mod.Batches
	}
}
