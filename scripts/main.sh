#!/usr/bin/env bash
# The main job: build, then run every example program in examples/ through
# pa-opt (parse, verify, canonicalize, bufferize) and print the results.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${PA_BUILD_DIR:-$root/build}"
"$root/scripts/setup.sh"
paopt="$build/bin/pa-opt"
for f in "$root"/examples/*.mlir; do
  echo "=== $(basename "$f"): verify + canonicalize"
  "$paopt" "$f" --canonicalize
  echo "=== $(basename "$f"): one-shot bufferize to the memref form"
  "$paopt" "$f" --canonicalize \
    --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" \
    >/dev/null && echo "ok"
done
