//go:build tools

// Package tools pins kwok; hack/tools/build.sh builds it from this module.
package tools

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
