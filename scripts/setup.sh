#!/usr/bin/env bash
# Installs what PagedAttn needs (Debian packages) when missing, then configures
# and builds it in build/. Idempotent; fast when everything is there.
#   scripts/setup.sh [extra ninja targets...]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${PA_BUILD_DIR:-$root/build}"

pkgs=(libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools cmake ninja-build
      libgtest-dev g++ ccache)
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [ ! -f "$build/build.ninja" ]; then
  cmake -G Ninja -S "$root" -B "$build" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ \
    -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir
fi
ninja -C "$build" "$@"
