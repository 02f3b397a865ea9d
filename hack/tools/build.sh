#!/usr/bin/env bash
# Builds the local control plane that the integration tests and `make dev-cluster`
# run, from source, from the modules pinned under hack/tools/<component>/go.mod.
# Nothing is downloaded as a prebuilt binary.
#
# Each component is built into $CACHE/<component>-<version>/bin and skipped when
# already there; $CACHE/bin then holds symlinks to the pinned versions, which is
# where internal/testenv looks (VODA_TOOLS_BIN overrides it).
#
# Usage: hack/tools/build.sh                 build what is missing
#        hack/tools/build.sh etcd k8s kwok   only these components
#        VODA_TOOLS_CACHE=dir hack/tools/build.sh
#        VODA_TOOLS_JOBS=N hack/tools/build.sh   N components at once (default 1:
#                                                on 2 cores two at once measured
#                                                only 4 % faster, 137 → 131 s)
# Components: k8s etcd kwok mpi-operator training-operator helm
# scheduler-plugins.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cache="${VODA_TOOLS_CACHE:-$root/.cache/tools}"
go="${GO:-go}"

export CGO_ENABLED=0
# The tools modules keep their own go.sum; never let a caller's -mod flag change them.
export GOFLAGS="-mod=readonly -trimpath -buildvcs=false"
export GOWORK=off

# version <component dir> <module path>: the version a tools module pins.
version() {
	awk -v m="$2" '($1 == m) { print $2 } ($1 == "require" && $2 == m) { print $3 }' "$here/$1/go.mod" | head -n1
}

# exe <package>: the binary name we install a package as.
exe() {
	case "$1" in
	go.etcd.io/etcd/server/v3) echo etcd ;;
	*) basename "$1" ;;
	esac
}

# build <component> <version> <ldflags> <package>...: go build into the versioned dir.
build() {
	local comp="$1" ver="$2" ldflags="$3"
	shift 3
	local out="$cache/$comp-$ver/bin" missing=0 pkg
	for pkg in "$@"; do
		[ -x "$out/$(exe "$pkg")" ] || missing=1
	done
	if [ "$missing" = 0 ]; then
		echo "tools: $comp $ver already built"
		return
	fi
	echo "tools: building $comp $ver ..."
	local start tmp
	start=$(date +%s)
	tmp="$cache/$comp-$ver/bin.tmp"
	rm -rf "$tmp"
	mkdir -p "$tmp"
	# Checked explicitly: build runs where set -e does not apply (||).
	if ! (cd "$here/$comp" && "$go" build -ldflags "-s -w $ldflags" -o "$tmp/" "$@"); then
		echo "tools: building $comp $ver failed" >&2
		return 1
	fi
	if [ -x "$tmp/server" ]; then mv "$tmp/server" "$tmp/etcd"; fi
	rm -rf "$out"
	mv "$tmp" "$out"
	echo "tools: built $comp $ver in $(($(date +%s) - start))s"
}

k8s_ver=$(version k8s k8s.io/kubernetes)
etcd_ver=$(version etcd go.etcd.io/etcd/server/v3)
kwok_ver=$(version kwok sigs.k8s.io/kwok)
mpi_ver=$(version mpi-operator github.com/kubeflow/mpi-operator)
helm_ver=$(version helm helm.sh/helm/v3)
sp_ver=$(version scheduler-plugins sigs.k8s.io/scheduler-plugins)
to_ver=$(version training-operator github.com/kubeflow/training-operator)

# Kubernetes stamps its version at link time; without it the servers report v0.0.0.
k8s_minor=$(echo "$k8s_ver" | cut -d. -f2)
k8s_ldflags="-X k8s.io/component-base/version.gitVersion=$k8s_ver
 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$k8s_minor
 -X k8s.io/component-base/version.gitTreeState=clean
 -X k8s.io/client-go/pkg/version.gitVersion=$k8s_ver
 -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$k8s_minor"
k8s_ldflags=$(echo $k8s_ldflags)

all="k8s etcd kwok mpi-operator training-operator helm scheduler-plugins"
want="${*:-$all}"
for c in $want; do
	case " $all " in *" $c "*) ;; *) echo "tools: unknown component $c (want some of: $all)" >&2; exit 2 ;; esac
done
wanted() { case " $want " in *" $1 "*) return 0 ;; esac; return 1; }

# component <name>: build one component (see build).
component() {
	case "$1" in
	# etcd's main package is its module root; go build would name it "server".
	etcd) build etcd "$etcd_ver" "" go.etcd.io/etcd/server/v3 ;;
	k8s) build k8s "$k8s_ver" "$k8s_ldflags" \
		k8s.io/kubernetes/cmd/kube-apiserver \
		k8s.io/kubernetes/cmd/kube-controller-manager \
		k8s.io/kubernetes/cmd/kube-scheduler \
		k8s.io/kubernetes/cmd/kubectl ;;
	kwok) build kwok "$kwok_ver" "-X sigs.k8s.io/kwok/pkg/consts.Version=${kwok_ver#v}" sigs.k8s.io/kwok/cmd/kwok ;;
	mpi-operator) build mpi-operator "$mpi_ver" "" github.com/kubeflow/mpi-operator/cmd/mpi-operator ;;
	training-operator) build training-operator "$to_ver" "" github.com/kubeflow/training-operator/cmd/training-operator.v1 ;;
	helm) build helm "$helm_ver" "-X helm.sh/helm/v3/internal/version.version=$helm_ver" helm.sh/helm/v3/cmd/helm ;;
	scheduler-plugins) build scheduler-plugins "$sp_ver" "" sigs.k8s.io/scheduler-plugins/cmd/scheduler sigs.k8s.io/scheduler-plugins/cmd/controller ;;
	esac
}

# Build the wanted components, VODA_TOOLS_JOBS at a time, in the order
# given (Kubernetes first: alone it is about 40 % of a cold build). Each
# one's output goes to a log printed when it ends, so logs do not
# interleave, and its exit status to a file.
# Download the modules of every component still to build at once, in the
# background: downloading is network-bound and overlaps the compiling
# (measured cold, two components: 179 s → 167 s). The builds wait for
# what they need through the module cache's locks.
verof() {
	case "$1" in
	k8s) echo "$k8s_ver" ;; etcd) echo "$etcd_ver" ;; kwok) echo "$kwok_ver" ;;
	mpi-operator) echo "$mpi_ver" ;; training-operator) echo "$to_ver" ;;
	helm) echo "$helm_ver" ;; scheduler-plugins) echo "$sp_ver" ;;
	esac
}
for c in $want; do
	if [ -d "$cache/$c-$(verof "$c")/bin" ]; then continue; fi
	( cd "$here/$c" && "$go" mod download >/dev/null 2>&1 || true ) &
done
jobs="${VODA_TOOLS_JOBS:-1}"
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
start_all=$(date +%s)
running=0
for c in $want; do
	if [ "$jobs" -le 1 ]; then
		rc=0
		component "$c" || rc=$?
		echo "$rc" >"$logs/$c.rc"
		continue
	fi
	(
		rc=0
		component "$c" >"$logs/$c" 2>&1 || rc=$?
		echo "$rc" >"$logs/$c.rc"
		cat "$logs/$c"
	) &
	running=$((running + 1))
	if [ "$running" -ge "$jobs" ]; then
		wait -n || true
		running=$((running - 1))
	fi
done
wait
failed=""
for c in $want; do
	if [ "$(cat "$logs/$c.rc" 2>/dev/null)" != 0 ]; then failed="$failed $c"; fi
done
if [ -n "$failed" ]; then
	echo "tools: building$failed failed (the output is above)" >&2
	exit 1
fi
echo "tools: $want done in $(($(date +%s) - start_all))s"

# copy_crd <component> <version> <module> <path in module> <name>: copy a
# CRD from a component's pinned module into $cache/<component>-<version>/crd.
copy_crd() {
	local dest="$cache/$1-$2/crd/$5" moddir
	if ! wanted "$1" || [ -f "$dest" ]; then return; fi
	moddir=$(cd "$here/$1" && "$go" list -m -f '{{.Dir}}' "$3")
	mkdir -p "$(dirname "$dest")"
	cp "$moddir/$4" "$dest"
	chmod 0644 "$dest"
}

# The CRDs come from the same pinned modules as the operators, copied at
# build time: MPIJob, PyTorchJob, and coscheduling's PodGroup.
copy_crd mpi-operator "$mpi_ver" github.com/kubeflow/mpi-operator manifests/base/kubeflow.org_mpijobs.yaml kubeflow.org_mpijobs.yaml
copy_crd training-operator "$to_ver" github.com/kubeflow/training-operator manifests/base/crds/kubeflow.org_pytorchjobs.yaml kubeflow.org_pytorchjobs.yaml
copy_crd scheduler-plugins "$sp_ver" sigs.k8s.io/scheduler-plugins manifests/coscheduling/crd.yaml scheduling.x-k8s.io_podgroups.yaml

# $cache/bin: one stable place with the pinned versions.
mkdir -p "$cache/bin"
if wanted etcd; then ln -sfn "../etcd-$etcd_ver/bin/etcd" "$cache/bin/etcd"; fi
if wanted k8s; then
	for b in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
		ln -sfn "../k8s-$k8s_ver/bin/$b" "$cache/bin/$b"
	done
fi
if wanted kwok; then ln -sfn "../kwok-$kwok_ver/bin/kwok" "$cache/bin/kwok"; fi
if wanted mpi-operator; then
	ln -sfn "../mpi-operator-$mpi_ver/bin/mpi-operator" "$cache/bin/mpi-operator"
	ln -sfn "../mpi-operator-$mpi_ver/crd/kubeflow.org_mpijobs.yaml" "$cache/bin/kubeflow.org_mpijobs.yaml"
fi
if wanted helm; then ln -sfn "../helm-$helm_ver/bin/helm" "$cache/bin/helm"; fi
if wanted scheduler-plugins; then
	ln -sfn "../scheduler-plugins-$sp_ver/bin/scheduler" "$cache/bin/scheduler-plugins-scheduler"
	ln -sfn "../scheduler-plugins-$sp_ver/bin/controller" "$cache/bin/scheduler-plugins-controller"
	ln -sfn "../scheduler-plugins-$sp_ver/crd/scheduling.x-k8s.io_podgroups.yaml" "$cache/bin/scheduling.x-k8s.io_podgroups.yaml"
fi
if wanted training-operator; then
	ln -sfn "../training-operator-$to_ver/bin/training-operator.v1" "$cache/bin/training-operator"
	ln -sfn "../training-operator-$to_ver/crd/kubeflow.org_pytorchjobs.yaml" "$cache/bin/kubeflow.org_pytorchjobs.yaml"
fi
echo "tools: ready in $cache/bin"
