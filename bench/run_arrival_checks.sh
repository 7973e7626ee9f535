#!/usr/bin/env bash
# Checks after the split-KV arrival moved into one home (emitArrival with
# the MLA merge-together flag; issue 9): every decode / fp8 bundle of
# bench/make_bundles.sh and the MLA bundles of run_mla_together.sh against
# the float64 reference, memcheck / racecheck of the GQA 4 f16 and fp8 split
# decodes and of a wgmma and an mma.sync MLA bundle, python/tests/test_cuda.py
# whole (CUDA-graph replays included), and bench-mla merged together / by
# the last CTA at B 1 / 4 x L 1024 / 32768.
#
#   bench/run_arrival_checks.sh prep DIR        # here
#   PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu DIR/*
#   PYTHONPATH=python PAGEDATTN_COMPILER=build/bin/pa-compile build/pyenv/bin/python \
#     -m pagedattn prebuild build/pybundles --from python/tests/test_cuda.py
#   bench/run_arrival_checks.sh run build/gpu OUT   # device; carry build/gpu,
#     build/pybundles, build/lib/Runtime/libpa_runtime.so, libpa_pool.so
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/device_lib.sh"
mode="${1:?usage: run_arrival_checks.sh prep DIR | run STAGED OUT}"
if [[ "$mode" == prep ]]; then
  pa_prep "${2:?DIR}"
  "$root/bench/run_mla_together.sh" make "$2" "$pac"
  exit $?
fi
gpu="${2:?STAGED}"; out="${3:?OUT}"
R="$gpu/bin/pa-gpu-runner"; B="$gpu/bundles"
export PATH="$PATH:/usr/local/cuda/bin"
pa_header "$out"
{
  pa_check_bundles "$R" "$B"/*
  for d in "$B"/gqa4_d128_p16_f16_nhd_joint "$B"/fp8_gqa4_*e4m3*; do
    [[ -d "$d" ]] && pa_sanitize "$R" check "$d"
  done
  for d in mla_h40_p5_f16_wg mla_h40_p16_bf16_sync; do
    PA_SANITIZE_TIMEOUT=240 pa_sanitize "$R" check-mla "$B/$d"
  done
  pa_test_cuda
  for m in auto last; do
    echo "bench-mla --split-merge $m (B | L | us):"
    timeout 100 "$R" bench-mla --split-merge "$m" --batches 1,4 --lengths 1024,32768 --sets 2 \
      "$B/mla_h128_p64_bf16_auto" 2>/dev/null | grep -E "^\| [0-9]" | cut -d'|' -f2,3,5
  done
} >> "$out/summary.md" 2>&1
cat "$out/summary.md"
