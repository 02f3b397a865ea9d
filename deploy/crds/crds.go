// Package crds embeds the CustomResourceDefinitions Voda serves, generated
// from pkg/apis by hack/generate.sh, so that tests and tools install exactly
// the committed YAML.
package crds

import _ "embed"

// TrainingJob is the TrainingJob CRD (vodascheduler.io/v1alpha1) as YAML.
//
//go:embed vodascheduler.io_trainingjobs.yaml
var TrainingJob []byte

// ClusterQueue is the ClusterQueue CRD as YAML.
//
//go:embed vodascheduler.io_clusterqueues.yaml
var ClusterQueue []byte

// LocalQueue is the LocalQueue CRD as YAML.
//
//go:embed vodascheduler.io_localqueues.yaml
var LocalQueue []byte
