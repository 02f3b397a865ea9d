//go:build tools

// Package tools pins controller-gen, which generates the TrainingJob deep
// copies and CRD YAML (hack/generate.sh).
package tools

import (
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
)
