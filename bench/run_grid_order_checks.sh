#!/usr/bin/env bash
# Checks for the decode's grid order (issue 9): every decode bundle of
# bench/make_bundles.sh (PA_SKIP_PREFILL=1) and run_l2_flush.sh's against
# the float64 reference (check --quick), memcheck / racecheck of the GQA 4
# f16 and fp8 split decodes, and python/tests/test_cuda.py (CUDA-graph replay
# included) over bundles prebuilt here:
#
#   PA_SKIP_PREFILL=1 bench/make_bundles.sh DIR build/bin/pa-compile
#   bench/run_l2_flush.sh prep DIR2
#   PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu DIR/* DIR2/*
#   PYTHONPATH=python PAGEDATTN_COMPILER=build/bin/pa-compile build/pyenv/bin/python \
#     -m pagedattn prebuild build/pybundles --from python/tests/test_cuda.py
#   bench/run_grid_order_checks.sh build/gpu OUT   # device; carry build/gpu,
#     build/pybundles, build/lib/Runtime/libpa_runtime.so, libpa_pool.so
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
gpu="${1:?usage: run_grid_order_checks.sh STAGED OUT}"; out="${2:?OUT}"
R="$gpu/bin/pa-gpu-runner"; B="$gpu/bundles"
export PATH="$PATH:/usr/local/cuda/bin"
. "$root/bench/device_lib.sh"
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
  pa_check_bundles "$R" "$B"/*
  pa_sanitize "$R" check "$B/lf_gqa4"
  pa_sanitize "$R" check "$B/lf_fp8"
  pa_test_cuda 300 15
} > "$out/checks.txt" 2>&1
cat "$out/checks.txt"
