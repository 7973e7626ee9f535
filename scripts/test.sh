#!/usr/bin/env bash
# Sets up, builds and runs every test (lit and GoogleTest) through ctest.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${PA_BUILD_DIR:-$root/build}"
"$root/scripts/setup.sh"
cd "$build"
ctest --output-on-failure -j2 "$@"
