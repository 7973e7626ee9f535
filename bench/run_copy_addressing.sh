#!/usr/bin/env bash
# One address a step for the tile kernels' K / V copies (issue 9): the
# cache as a 1-D memref (page * page elements + a loop-invariant offset),
# the whole-tile branch (no per-round key compares in every step but the
# last) and, in one-pass kernels, one page entry a thread (pa-promote-tiles
# `onePage`). Old (bundles compiled before the change, *_old) against new,
# fp8 e4m3 and f16, GQA 4 (tensor-core) and MHA (the default kernel), and
# the new fp8 GQA 4 decode at 3 and 4 K/V stages (one-pass: 167 registers
# with one page entry a lane), over the decode grid, clean eviction, two
# rounds interleaved; check --quick of every bundle (and check-prefill of
# the prefill ones), memcheck / racecheck of the new fp8 GQA 4 one.
# PA_BENCH (default: all but f16_mha) names the benched bundles.
#
#   bench/run_copy_addressing.sh prep DIR [SUFFIX]   # here, once per build
#   PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu DIR/*
#   bench/run_copy_addressing.sh run build/gpu OUT   # device; carry build/gpu
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/device_lib.sh"
mode="${1:?usage: run_copy_addressing.sh prep DIR [SUFFIX] | run STAGED OUT}"
base=(f8_gqa4 f16_gqa4 f8_mha f16_mha)
if [[ "$mode" == prep ]]; then
  set -e
  dir="${2:?DIR}"; sfx="${3:-}"; pac="${PA_BUILD_DIR:-$root/build}/bin/pa-compile"
  mkdir -p "$dir"
  c=(--head-dim 128 --page-size 16 --dtype f16 --kv joint --chip sm_90a --layout nhd)
  "$pac" "${c[@]}" --kv-heads 8 --group 4 --kv-dtype e4m3 -o "$dir/f8_gqa4$sfx"
  "$pac" "${c[@]}" --kv-heads 8 --group 4 -o "$dir/f16_gqa4$sfx"
  "$pac" "${c[@]}" --kv-heads 32 --group 1 --kv-dtype e4m3 -o "$dir/f8_mha$sfx"
  "$pac" "${c[@]}" --kv-heads 32 --group 1 -o "$dir/f16_mha$sfx"
  "$pac" "${c[@]}" --kv-heads 8 --group 4 --kernels prefill -o "$dir/prefill_f16$sfx"
  if [[ -z "$sfx" ]]; then
    for st in 3 4; do
      "$pac" "${c[@]}" --kv-heads 8 --group 4 --kv-dtype e4m3 --decode-kv-stages $st -o "$dir/f8_gqa4_st$st"
    done
  fi
  exit 0
fi
gpu="${2:?STAGED}"; out="${3:?OUT}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
export PATH="$PATH:/usr/local/cuda/bin"
raw="$(mktemp -d)"
all=()
for v in "${base[@]}"; do all+=("${v}_old" "$v"); done
all+=(f8_gqa4_st3 f8_gqa4_st4)
read -r -a vs <<<"${PA_BENCH:-f8_gqa4_old f8_gqa4 f8_gqa4_st3 f8_gqa4_st4 f16_gqa4_old f16_gqa4 f8_mha_old f8_mha}"
pa_header "$out"
{
  echo "## checks"
  pa_check_bundles "$R" "${all[@]/#/$B/}" "$B/prefill_f16" "$B/prefill_f16_old"
  PA_SANITIZE_TIMEOUT=120 pa_sanitize "$R" check "$B/f8_gqa4"
} >> "$out/summary.md" 2>&1
pa_bench_rounds "$R" "$B" "$raw" "${vs[@]}" -- --batches 1,16,64,256 \
  --lens 512,2048,8192,32768 --max-kv-gib 9 --l2-flush clean
pa_rounds_table "$raw" "${vs[@]}" >> "$out/summary.md"
tar czf "$out/raw.tgz" -C "$raw" .
cat "$out/summary.md"
