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
  dir="${2:?DIR}"; sfx="${3:-}"; pac="${PA_BUILD_DIR:-$root/build}/bin/pa-compile"
  mkdir -p "$dir"
  c=(--head-dim 128 --page-size 16 --dtype f16 --kv joint --chip sm_90a --layout nhd)
  "$pac" "${c[@]}" --kv-heads 8 --group 4 -o "$dir/f16_gqa4$sfx"
  "$pac" "${c[@]}" --kv-heads 32 --group 1 -o "$dir/f16_mha$sfx"
  "$pac" "${c[@]}" --kv-heads 8 --group 4 --kv-dtype e4m3 -o "$dir/f8_gqa4$sfx"
  exit 0
fi
gpu="${2:?STAGED}"; out="${3:?OUT}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
export PATH="$PATH:/usr/local/cuda/bin"
raw="$(mktemp -d)"
vs=()
for v in "${base[@]}"; do vs+=("${v}_old" "$v"); done
pa_header "$out"
{
  echo "## checks"
  pa_check_bundles "$R" "${vs[@]/#/$B/}"
  PA_SANITIZE_TIMEOUT=120 pa_sanitize "$R" check "$B/f16_gqa4"
} >> "$out/summary.md" 2>&1
pa_bench_rounds "$R" "$B" "$raw" "${vs[@]}" -- --batches 1,16,64,256 \
  --lens 512,2048,8192,32768 --max-kv-gib 9 --l2-flush clean
pa_rounds_table "$raw" "${vs[@]}" >> "$out/summary.md"
[[ -d .gpu-fi ]] && pa_fi_decode 8 >> "$out/summary.md" 2>&1
tar czf "$out/raw.tgz" -C "$raw" .
cat "$out/summary.md"
