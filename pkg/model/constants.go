package model

import (
	"slices"
	"strings"
)

// constants are the per-model facts the Pollux simulator hard-codes in
// simulator/applications.py of the OSDI'21 artifact (adaptdl commit c793c70),
// as restated in shared/traces/pollux-adaptdl/README.md ("Model constants
// used by the Pollux simulator"). They are facts about the experiments, not
// measurements, so they live in Go and both catalogs share them.
type constants struct {
	minLocal, maxLocal int // per-GPU batch range
	epochs             int // epochs to finish
}

var known = map[string]constants{
	"bert":        {minLocal: 4, maxLocal: 12, epochs: 2},
	"cifar10":     {minLocal: 32, maxLocal: 1024, epochs: 100},
	"deepspeech2": {minLocal: 10, maxLocal: 80, epochs: 80},
	"imagenet":    {minLocal: 20, maxLocal: 200, epochs: 90},
	"ncf":         {minLocal: 32, maxLocal: 32768, epochs: 10},
	"yolov3":      {minLocal: 4, maxLocal: 8, epochs: 50}, // the artifact overrides the max local batch to 8
}

// singleGPU lists the models the Pollux simulator pins to one GPU
// (research/algorithms.md §4.2a: "NCF fixed at 1").
var singleGPU = map[string]bool{"ncf": true}

// maxWorkersCap is the largest GPU count MaxWorkers returns: the 64 GPUs of
// the 16 x 4 testbed the profiles were measured on.
const maxWorkersCap = 64

// KnownModels returns the names of the models whose constants are known,
// sorted. LoadProfiles accepts only these.
func KnownModels() []string {
	names := make([]string, 0, len(known))
	for name := range known {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

func joinNames(names []string) string { return strings.Join(names, ", ") }
