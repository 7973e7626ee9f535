#!/usr/bin/env bash
# The split decode's merge with its fences moved (issue 9): work_indptr
# loaded before the arrival's fence, the fences before the counter reset and
# the second arrival. Old (bundles of the previous head, *_old: prep with
# PA_BUILD_DIR at its build and SUFFIX _old) against new over the decode
# grid: f16 GQA 4 (Hkv 8) and GQA 8 (Hkv 4), tensor-core; f16 MHA (Hkv
# 32), CUDA-core; e4m3 GQA 4; clean eviction, two rounds interleaved;
# check --quick of each; FlashInfer 0.7.2's decode (both paths, Hkv 4 / 8 /
# 32) beside (carry .gpu-fi too); SDPA (flash, cuDNN) over a contiguous
# cache.
#
#   bench/run_merge_fences.sh prep DIR [SUFFIX]   # here, once per build
#   PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu DIR/*
#   bench/run_merge_fences.sh run build/gpu OUT [ours|fi|sdpa]   # device
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/device_lib.sh"
mode="${1:?usage: run_merge_fences.sh prep DIR [SUFFIX] | run STAGED OUT [ours|fi|sdpa]}"
base=(f16_gqa4 f16_gqa8 f16_mha f8_gqa4)
if [[ "$mode" == prep ]]; then
  set -e
  dir="${2:?DIR}"; sfx="${3:-}"
  PA_PAIRS_ONLY=1 pa_prep "$dir"
  "$pac" "${pa_base[@]}" "${pa_g4[@]}" -o "$dir/f16_gqa4$sfx"
  "$pac" "${pa_base[@]}" --kv-heads 4 --group 8 -o "$dir/f16_gqa8$sfx"
  "$pac" "${pa_base[@]}" "${pa_mha[@]}" -o "$dir/f16_mha$sfx"
  "$pac" "${pa_base[@]}" "${pa_g4[@]}" --kv-dtype e4m3 -o "$dir/f8_gqa4$sfx"
  exit 0
fi
out="${3:?OUT}"; part="${4:-ours}"
pa_run_init "${2:?STAGED}" "$out"
if [[ "$part" == ours ]]; then
  pa_old_new "$out" "" "${base[@]}"
  pa_grid_table "${vs[@]}" >> "$out/summary.md"
elif [[ "$part" == fi ]]; then
  eval "$(bash .gpu-fi/kit/setup-on-device.sh .gpu-fi)" > /dev/null
  {
    echo "## FlashInfer decode (both paths), Hkv 4 / 8 / 32"
    timeout 500 python3 .gpu-fi/kit/fi_bench.py decode --batches 1,16,64,256 \
      --lens 512,2048,8192,32768 --kv-heads 4,8,32 --paths cuda,tc \
      --max-kv-gib 9 2>&1 | grep -E "^\| [0-9]|^- |roof"
  } >> "$out/summary.md"
elif [[ "$part" == sdpa ]]; then
  # SDPA (flash, cuDNN) over a contiguous cache; GQA 8 old / new again at
  # B 16 with 100 timed calls (a row the grid call left within its noise).
  {
    echo "## SDPA over a contiguous cache, Hkv 4 / 8 / 32"
    timeout 400 python3 "$root/bench/sdpa_baseline.py" --kv-heads 4,8,32 \
      --max-kv-gib 9 2>&1 | grep -E "^\| [0-9]|^- "
  } >> "$out/summary.md"
  pa_bench_rounds "$R" "$B" "$raw" f16_gqa8_old f16_gqa8 -- --batches 1,16 \
    --lens 512,2048,8192,32768 --reps 100 --l2-flush clean
  pa_rounds_table "$raw" f16_gqa8_old f16_gqa8 >> "$out/summary.md"
fi
tar czf "$out/raw.tgz" -C "$raw" .
cat "$out/summary.md"
