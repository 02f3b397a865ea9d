package model

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// File names inside a model's profile directory.
const (
	placementsFile  = "placements.csv"
	scalabilityFile = "scalability.csv"
	validationGlob  = "validation-*.csv"
)

// LoadProfiles reads a profiles directory with one subdirectory per model
// (placements.csv, scalability.csv and validation-<B>.csv files, laid out as
// in shared/traces/pollux-adaptdl/profiles). Every subdirectory must be a
// known model (KnownModels); files and hidden entries are ignored. Errors name the file,
// and the line when there is one.
func LoadProfiles(dir string) (*Catalog, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("load profiles: %w", err)
	}
	var models []*Model
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
			continue
		}
		m, err := loadModel(path, e.Name())
		if err != nil {
			return nil, fmt.Errorf("load profiles: %w", err)
		}
		models = append(models, m)
	}
	if len(models) == 0 {
		return nil, fmt.Errorf("load profiles: %s: no model directories (want some of %s)", dir, joinNames(KnownModels()))
	}
	return newCatalog(models), nil
}

// loadModel reads one model's profile directory.
func loadModel(dir, name string) (*Model, error) {
	k, ok := known[name]
	if !ok {
		return nil, fmt.Errorf("%s: unknown model %q: no constants known (known: %s)", dir, name, joinNames(KnownModels()))
	}
	prows, err := parseFile(filepath.Join(dir, placementsFile), parsePlacements)
	if err != nil {
		return nil, err
	}
	srows, err := parseFile(filepath.Join(dir, scalabilityFile), parseScalability)
	if err != nil {
		return nil, err
	}
	paths, err := filepath.Glob(filepath.Join(dir, validationGlob))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("%s: no %s files", dir, validationGlob)
	}
	byBatch := map[int][]epochRow{}
	for _, path := range paths {
		base := filepath.Base(path)
		b, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(base, "validation-"), ".csv"))
		if err != nil || b < 1 || b > maxLocalBsz {
			return nil, fmt.Errorf("%s: want validation-<global batch>.csv with a positive integer batch", path)
		}
		rows, err := parseFile(path, parseValidation)
		if err != nil {
			return nil, err
		}
		if len(rows) < k.epochs {
			return nil, fmt.Errorf("%s: %d epochs, want at least %d (%s trains for %d)", path, len(rows), k.epochs, name, k.epochs)
		}
		byBatch[b] = rows
	}
	work, err := newExactWork(byBatch, k.epochs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	m := &Model{
		Name:          name,
		MinLocalBatch: k.minLocal,
		MaxLocalBatch: k.maxLocal,
		Epochs:        k.epochs,
		speed:         newMeasuredSpeed(prows, srows),
		work:          work,
		cache:         &stepCache{},
	}
	for b := range byBatch {
		m.Batches = append(m.Batches, b)
	}
	slices.Sort(m.Batches)
	return m, nil
}

// parseFile opens path and parses it; a missing file is an error naming it.
func parseFile[T any](path string, parse func(io.Reader, string) ([]T, error)) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parse(f, path)
}
