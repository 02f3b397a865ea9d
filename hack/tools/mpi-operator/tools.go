//go:build tools

// Package tools pins mpi-operator; hack/tools/build.sh builds it from this module.
package tools

import (
	_ "github.com/kubeflow/mpi-operator/cmd/mpi-operator"
)
