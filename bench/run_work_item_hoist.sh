#!/usr/bin/env bash
# The split decode's work item loaded before its bound check (issue 9, the
# 1 x 32768 target): one dependent global load fewer before a CTA's first
# K / V copy. Old (bundles of the previous head, *_old: prep with
# PA_BUILD_DIR pointing at its build and SUFFIX _old) against new, f16 GQA
# 4 (tensor-core), f16 MHA (CUDA-core) and e4m3 GQA 4, over the decode
# grid, clean eviction, two rounds interleaved; check --quick of each,
# memcheck / racecheck of the new f16 GQA 4 one; FlashInfer's tensor-core
# decode (Hkv 8) beside (carry .gpu-fi too).
#
#   bench/run_work_item_hoist.sh prep DIR [SUFFIX]   # here, once per build
#   PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu DIR/*
#   bench/run_work_item_hoist.sh run build/gpu OUT   # device
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/device_lib.sh"
mode="${1:?usage: run_work_item_hoist.sh prep DIR [SUFFIX] | run STAGED OUT}"
base=(f16_gqa4 f16_mha f8_gqa4)
if [[ "$mode" == prep ]]; then
  set -e
  dir="${2:?DIR}"; sfx="${3:-}"
  PA_PAIRS_ONLY=1 pa_prep "$dir"
  "$pac" "${pa_base[@]}" "${pa_g4[@]}" -o "$dir/f16_gqa4$sfx"
  "$pac" "${pa_base[@]}" "${pa_mha[@]}" -o "$dir/f16_mha$sfx"
  "$pac" "${pa_base[@]}" "${pa_g4[@]}" --kv-dtype e4m3 -o "$dir/f8_gqa4$sfx"
  exit 0
fi
out="${3:?OUT}"
pa_run_init "${2:?STAGED}" "$out"
pa_old_new "$out" f16_gqa4 "${base[@]}"
pa_grid_table "${vs[@]}" >> "$out/summary.md"
[[ -d .gpu-fi ]] && pa_fi_decode 8 >> "$out/summary.md" 2>&1
tar czf "$out/raw.tgz" -C "$raw" .
cat "$out/summary.md"
