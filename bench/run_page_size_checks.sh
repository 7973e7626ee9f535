#!/usr/bin/env bash
# Correctness of one page entry a thread (pa-promote-tiles onePage) at the
# page sizes where its other cases apply: prefill (CTA-wide 64-key tiles:
# one page a tile at P 64 and 128, a tile starting mid-page at 128) and the
# tensor-core decode at P 32 / 64 (a warp's 16 keys in a larger page, f16
# and e4m3), against the float64 reference: check-prefill / check --quick
# of each bundle, memcheck of two.
#
#   bench/run_page_size_checks.sh prep DIR    # here
#   PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu DIR/*
#   bench/run_page_size_checks.sh run build/gpu OUT   # device; carry build/gpu
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/device_lib.sh"
mode="${1:?usage: run_page_size_checks.sh prep DIR | run STAGED OUT}"
vs=(prefill_p64 prefill_p128 prefill_p64_causal dec_p32 dec_p64 dec_p64_e4m3 dec_p128_mha)
if [[ "$mode" == prep ]]; then
  set -e
  dir="${2:?DIR}"
  PA_PAIRS_ONLY=1 pa_prep "$dir"
  "$pac" "${pa_base[@]}" "${pa_g4[@]}" --kernels prefill --page-size 64 -o "$dir/prefill_p64"
  "$pac" "${pa_base[@]}" "${pa_g4[@]}" --kernels prefill --page-size 128 -o "$dir/prefill_p128"
  "$pac" "${pa_base[@]}" "${pa_g4[@]}" --kernels prefill --page-size 64 --causal -o "$dir/prefill_p64_causal"
  "$pac" "${pa_base[@]}" "${pa_g4[@]}" --page-size 32 -o "$dir/dec_p32"
  "$pac" "${pa_base[@]}" "${pa_g4[@]}" --page-size 64 -o "$dir/dec_p64"
  "$pac" "${pa_base[@]}" "${pa_g4[@]}" --page-size 64 --kv-dtype e4m3 -o "$dir/dec_p64_e4m3"
  "$pac" "${pa_base[@]}" "${pa_mha[@]}" --page-size 128 -o "$dir/dec_p128_mha"
  exit 0
fi
out="${3:?OUT}"
pa_run_init "${2:?STAGED}" "$out"
{
  echo "## checks"
  pa_check_bundles "$R" "${vs[@]/#/$B/}"
  PA_SANITIZE_TIMEOUT=120 pa_sanitize "$R" check-prefill "$B/prefill_p128"
  PA_SANITIZE_TIMEOUT=120 pa_sanitize "$R" check "$B/dec_p64_e4m3"
} >> "$out/summary.md" 2>&1
cat "$out/summary.md"
