//go:build tools

// Package tools pins etcd; hack/tools/build.sh builds it from this module.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
)
