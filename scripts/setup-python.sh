#!/usr/bin/env bash
# The Python package in a virtual environment: build/pyenv with numpy and
# pytest from PyPI and `pip install ./python` (pagedattn). Needs the build
# (scripts/setup.sh) for pa-compile and libpa_runtime.so. Idempotent.
#   scripts/setup-python.sh        -> prints nothing on success
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${PA_BUILD_DIR:-$root/build}"
venv="$build/pyenv"
py="${PYTHON:-python3}"
if ! "$py" -m venv --help >/dev/null 2>&1; then
  echo "setup-python: installing python3-venv"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-venv python3-pip >/dev/null
fi
[ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
if ! "$venv/bin/python" -c "import numpy, pytest" 2>/dev/null; then
  "$venv/bin/pip" install -q --disable-pip-version-check "numpy>=1.22" "pytest>=7"
fi
# Reinstalled every time: the sources may have changed (a few seconds).
"$venv/bin/pip" install -q --disable-pip-version-check --no-deps --no-build-isolation "$root/python" 2>/dev/null \
  || "$venv/bin/pip" install -q --disable-pip-version-check --no-deps "$root/python"
