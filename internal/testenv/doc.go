// Package testenv starts a real, local Kubernetes control plane for integration
// tests and for `make dev-cluster`: etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, kwok (fake GPU nodes and pod lifecycles) and the Kubeflow
// mpi-operator, all built from pinned modules by hack/tools/build.sh.
//
// It may import client-go and the Kubernetes API types; the pure core packages
// (pkg/api, pkg/algorithm, pkg/placement, pkg/scheduler) must never import it.
package testenv
