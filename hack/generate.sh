#!/usr/bin/env bash
# Regenerates the TrainingJob deep copies (pkg/apis/.../zz_generated.deepcopy.go)
# and CRD YAML (deploy/crds/), and the Volcano PodGroup and Queue CRDs the
# tests install (internal/testenv/crds/volcano/, from the volcano.sh/apis
# types in go.mod), with controller-gen, built from the version pinned
# in hack/tools/controller-gen/go.mod into .cache/tools.
#
# Usage: hack/generate.sh          regenerate
#        hack/generate.sh --check  fail if the committed files are stale
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cache="${VODA_TOOLS_CACHE:-$root/.cache/tools}"
go="${GO:-go}"
mod="$root/hack/tools/controller-gen"
ver=$(awk '$1 == "require" && $2 == "sigs.k8s.io/controller-tools" { print $3 }' "$mod/go.mod")
bin="$cache/controller-gen-$ver/bin/controller-gen"

if [ ! -x "$bin" ]; then
	echo "generate: building controller-gen $ver ..."
	(cd "$mod" && CGO_ENABLED=0 GOWORK=off GOFLAGS="-mod=readonly -trimpath -buildvcs=false" \
		"$go" build -o "$bin" sigs.k8s.io/controller-tools/cmd/controller-gen)
fi

out="$root"
if [ "${1:-}" = "--check" ]; then
	out=$(mktemp -d)
	trap 'rm -rf "$out"' EXIT
	mkdir -p "$out/pkg/apis/vodascheduler/v1alpha1" "$out/deploy/crds" "$out/internal/testenv/crds/volcano"
fi

cd "$root"
"$bin" object paths=./pkg/apis/... output:object:dir="$out/pkg/apis/vodascheduler/v1alpha1"
"$bin" crd:maxDescLen=0,generateEmbeddedObjectMeta=true paths=./pkg/apis/... output:crd:dir="$out/deploy/crds"
# The Helm chart carries its own copy (a chart cannot reach outside itself).
mkdir -p "$out/deploy/helm/voda/files"
cp "$out/deploy/crds/vodascheduler.io_trainingjobs.yaml" "$out/deploy/helm/voda/files/trainingjobs-crd.yaml"
cp "$out/deploy/crds/vodascheduler.io_clusterqueues.yaml" "$out/deploy/helm/voda/files/clusterqueues-crd.yaml"
cp "$out/deploy/crds/vodascheduler.io_localqueues.yaml" "$out/deploy/helm/voda/files/localqueues-crd.yaml"
"$bin" crd:maxDescLen=0 paths=volcano.sh/apis/pkg/apis/scheduling/v1beta1 output:crd:dir="$out/internal/testenv/crds/volcano"

if [ "${1:-}" = "--check" ]; then
	stale=0
	for f in pkg/apis/vodascheduler/v1alpha1/zz_generated.deepcopy.go deploy/crds/vodascheduler.io_trainingjobs.yaml deploy/helm/voda/files/trainingjobs-crd.yaml \
		deploy/crds/vodascheduler.io_clusterqueues.yaml deploy/helm/voda/files/clusterqueues-crd.yaml \
		deploy/crds/vodascheduler.io_localqueues.yaml deploy/helm/voda/files/localqueues-crd.yaml \
		internal/testenv/crds/volcano/scheduling.volcano.sh_podgroups.yaml internal/testenv/crds/volcano/scheduling.volcano.sh_queues.yaml; do
		if ! cmp -s "$out/$f" "$root/$f"; then
			echo "generate: $f is stale; run make generate and commit"
			stale=1
		fi
	done
	exit $stale
fi
echo "generate: done"
