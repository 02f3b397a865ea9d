//go:build tools

// Package tools pins helm; hack/tools/build.sh builds it from this module.
package tools

import (
	_ "helm.sh/helm/v3/cmd/helm"
)
