// Package crds embeds the CustomResourceDefinitions Voda serves, generated
// from pkg/apis by hack/generate.sh, so that tests and tools install exactly
// the committed YAML.
package crds

import _ "embed"

// TrainingJob is the TrainingJob CRD (vodascheduler.io/v1alpha1) as YAML.
//
//go:embed vodascheduler.io_trainingjobs.yaml
var TrainingJob []byte
