#!/usr/bin/env bash
# Sets up, builds and runs every test: lit and GoogleTest through ctest,
# the installed CMake package (examples/consumer), then the Python
# package's tests (pytest, CPU bundles) against the installed package.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${PA_BUILD_DIR:-$root/build}"
"$root/scripts/setup.sh"
"$root/scripts/setup-python.sh"
(cd "$build" && ctest --output-on-failure -j2 "$@")
# The CMake package: install, build examples/consumer against it.
"$root/scripts/check-install.sh"
# pytest from the build directory, so that `import pagedattn` is the
# installed package, not the source tree.
cd "$build"
PAGEDATTN_COMPILER="$build/bin/pa-compile" \
PAGEDATTN_CACHE_DIR="$build/pagedattn-cache" \
  "$build/pyenv/bin/python" -m pytest -q -p no:cacheprovider "$root/python/tests"
# The ASan + UBSan build (build-san/): unit tests under the sanitizers, a
# bounded run of each fuzz target, the corpus's coverage (docs/Fuzzing.md).
# PA_SKIP_SANITIZE=1 skips it.
if [ "${PA_SKIP_SANITIZE:-0}" != 1 ]; then
  "$root/scripts/sanitize.sh"
fi
