#!/usr/bin/env bash
# Fails if a core package imports Kubernetes or net/http (docs/design: the
# core stays pure so the simulator and the controller run the same code).
set -euo pipefail
status=0
for dir in "$@"; do
  [ -d "$dir" ] || continue
  bad=$(go list -deps "./$dir/..." | grep -E '^(k8s\.io/|sigs\.k8s\.io/|net/http$)' || true)
  if [ -n "$bad" ]; then
    echo "$dir must not import:"; echo "$bad" | sed 's/^/  /'
    status=1
  fi
done
exit $status
