//go:build tools

// Package tools pins the Kubeflow training-operator (PyTorchJob); hack/tools/build.sh
// builds it from this module.
package tools

import (
	_ "github.com/kubeflow/training-operator/cmd/training-operator.v1"
)
