#!/usr/bin/env bash
# An A/B of two compilers' decode bundles at the split plans (B = 1 and 16)
# under --l2-flush clean (bench/run_ab.sh: checks of both, sanitizers of
# new_gqa4, two interleaved rounds), then forced 256-token chunks at one
# request, in one device call. Used for the fused split-KV merge unrolled by 32 / 16 instead
# of 8 (commit a61577e, reverted: bench/results/merge-unroll_2026-11-27_h200.md).
#
#   bench/run_merge_unroll.sh prep OLD_PA_COMPILE DIR   # here: DIR/old_*
#                                                     # (OLD_PA_COMPILE) and
#                                                     # DIR/new_* (this build)
#   PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu DIR/*
#   bench/run_merge_unroll.sh run build/gpu OUT       # device
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
mode="${1:?usage: run_merge_unroll.sh prep OLD_PA_COMPILE DIR | run STAGED OUT}"
if [[ "$mode" == prep ]]; then
  set -e
  old="${2:?OLD_PA_COMPILE}"; dir="${3:?DIR}"
  new="${PA_BUILD_DIR:-$root/build}/bin/pa-compile"
  mkdir -p "$dir"
  c=(--head-dim 128 --page-size 16 --dtype f16 --layout nhd --kv joint --chip sm_90a)
  for v in old new; do
    pac="$old"; [[ $v == new ]] && pac="$new"
    "$pac" "${c[@]}" --kv-heads 8 --group 4 -o "$dir/${v}_gqa4"
    "$pac" "${c[@]}" --kv-heads 4 --group 8 -o "$dir/${v}_g8"
    "$pac" "${c[@]}" --kv-heads 32 --group 1 -o "$dir/${v}_mha"
    "$pac" "${c[@]}" --kv-heads 8 --group 4 --kv-dtype e4m3 -o "$dir/${v}_fp8"
  done
  exit 0
fi
gpu="${2:?STAGED}"; out="${3:?OUT}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
# Checks, sanitizers of new_gqa4 and the interleaved grid: bench/run_ab.sh.
PA_GRID="--batches 1,16 --lens 512,2048,8192,32768 --l2-flush clean" PA_SANITIZE=new_gqa4 \
  bash "$root/bench/run_ab.sh" "$gpu" "$out" \
  old_gqa4 new_gqa4 old_g8 new_g8 old_mha new_mha old_fp8 new_fp8 > /dev/null
# Forced small chunks (many rows a merge) at one request.
raw="$(mktemp -d)"
for t in gqa4 g8; do
  for v in old new; do
    timeout 100 "$R" bench --batches 1 --lens 8192,32768 --force-chunk 256 --l2-flush clean \
      --out "$raw/${v}_${t}_c256.md" "$B/${v}_$t" > /dev/null 2>&1
  done
done
{
  echo "### forced chunk 256: old | new"
  for t in gqa4 g8; do
    paste -d'|' <(grep -E "^\| [0-9]" "$raw/old_${t}_c256.md" | cut -d'|' -f2,3,4,5,7) \
                <(grep -E "^\| [0-9]" "$raw/new_${t}_c256.md" | cut -d'|' -f7)
  done
} >> "$out/summary.md"
cat "$out/summary.md"
