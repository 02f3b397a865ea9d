//go:build tools

// Package tools pins the scheduler-plugins scheduler (with coscheduling)
// and its PodGroup controller; hack/tools/build.sh builds them from this
// module.
package tools

import (
	_ "sigs.k8s.io/scheduler-plugins/cmd/controller"
	_ "sigs.k8s.io/scheduler-plugins/cmd/scheduler"
)
