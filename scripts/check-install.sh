#!/usr/bin/env bash
# The CMake package: installs the build into a temporary prefix, configures
# and builds examples/consumer against it (find_package(PagedAttn)), and
# lowers examples/decode.mlir to a bundle with it; the bundle's manifest
# must name the decode kernel. Run by scripts/test.sh.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${PA_BUILD_DIR:-$root/build}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" > "$tmp/install.log"
cmake -S "$root/examples/consumer" -B "$tmp/consumer" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$tmp/prefix" \
  -DMLIR_DIR="$(sed -n "s/^MLIR_DIR:[A-Z]*=//p" "$build/CMakeCache.txt")" > "$tmp/configure.log" \
  || { cat "$tmp/configure.log"; exit 1; }
ninja -C "$tmp/consumer" > "$tmp/build.log" || { cat "$tmp/build.log"; exit 1; }
"$tmp/consumer/pa-consumer" "$root/examples/decode.mlir" "$tmp/bundle" \
  128 16 8 4 nhd f16 joint
grep -q "^kernel decode kernels.ptx " "$tmp/bundle/bundle.manifest" || {
  echo "check-install: the consumer's bundle has no decode kernel"; exit 1; }
echo "check-install: PASS (installed package, examples/consumer, bundle of examples/decode.mlir)"
