#!/usr/bin/env bash
# Refuses build outputs in git: any tracked file that is executable but not a
# script (no #! line), any tracked file over 1 MiB not allow-listed here, and
# images (screenshots, plots) outside docs/images/ or over 256 KiB there.
set -euo pipefail
cd "$(dirname "$0")/.."

# Large files that are sources: the generated TrainingJob CRD (it carries the
# full pod-template schema) and the chart's copy of it.
allowed=(
	deploy/crds/vodascheduler.io_trainingjobs.yaml
	deploy/helm/voda/files/trainingjobs-crd.yaml
)
limit=$((1024 * 1024))
bad=0
while IFS= read -r -d '' f; do
	[ -f "$f" ] || continue
	if [ -x "$f" ] && [ "$(head -c 2 "$f")" != "#!" ]; then
		echo "verify: $f is an executable that is not a script: build outputs stay out of git (git rm --cached $f)"
		bad=1
	fi
	size=$(wc -c <"$f")
	case "$f" in
	*.png | *.jpg | *.jpeg | *.gif | *.webp)
		if [[ "$f" != docs/images/* ]]; then
			echo "verify: $f is an image outside docs/images/: screenshots and plots are test and build outputs (git rm --cached $f)"
			bad=1
		elif [ "$size" -gt $((256 * 1024)) ]; then
			echo "verify: $f is $size bytes: documentation images stay under 256 KiB"
			bad=1
		fi
		;;
	esac
	if [ "$size" -gt "$limit" ]; then
		ok=0
		for a in "${allowed[@]}"; do [ "$a" = "$f" ] && ok=1; done
		if [ "$ok" = 0 ]; then
			echo "verify: $f is $size bytes, over 1 MiB: keep data and build outputs out of git, or allow-list it in hack/check-files.sh"
			bad=1
		fi
	fi
done < <(git ls-files -z)
exit "$bad"
