#!/usr/bin/env bash
# The fp8 decode with 3 K/V stages (issue 9): with the stage-aware page
# lookups (pa-promote-tiles: the rounds count S - 1 times, so the fp8
# decode at 3 stages shuffles its page entries and keeps 167 registers,
# 3 CTAs an SM), e4m3 GQA 4 / GQA 8 / MHA at 2 (the default) and 3 stages
# over the decode grid, clean eviction, two rounds interleaved; check
# --quick of each bundle, memcheck / racecheck of the 3-stage GQA 4 one.
#
#   bench/run_fp8_stages_shuffled.sh prep DIR    # here
#   PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu DIR/*
#   bench/run_fp8_stages_shuffled.sh run build/gpu OUT   # device; carry build/gpu
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/device_lib.sh"
mode="${1:?usage: run_fp8_stages_shuffled.sh prep DIR | run STAGED OUT}"
vs=(f8_gqa4 f8_gqa4_st3 f8_g8 f8_g8_st3 f8_mha f8_mha_st3)
if [[ "$mode" == prep ]]; then
  set -e
  dir="${2:?DIR}"; pac="${PA_BUILD_DIR:-$root/build}/bin/pa-compile"
  mkdir -p "$dir"
  c=(--head-dim 128 --page-size 16 --dtype f16 --kv joint --chip sm_90a --layout nhd --kv-dtype e4m3)
  for s in "gqa4 8 4" "g8 4 8" "mha 32 1"; do
    read -r n hkv g <<<"$s"
    "$pac" "${c[@]}" --kv-heads "$hkv" --group "$g" --decode-kernel tensor-core -o "$dir/f8_$n"
    "$pac" "${c[@]}" --kv-heads "$hkv" --group "$g" --decode-kernel tensor-core --decode-kv-stages 3 -o "$dir/f8_${n}_st3"
  done
  exit 0
fi
gpu="${2:?STAGED}"; out="${3:?OUT}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
export PATH="$PATH:/usr/local/cuda/bin"
raw="$(mktemp -d)"
pa_header "$out"
PA_SANITIZE_TIMEOUT=120 pa_checks "$out" f8_gqa4_st3 "${vs[@]}"
pa_bench_rounds "$R" "$B" "$raw" "${vs[@]}" -- --batches 1,16,64,256 \
  --lens 512,2048,8192,32768 --max-kv-gib 9 --l2-flush clean
pa_rounds_table "$raw" "${vs[@]}" >> "$out/summary.md"
tar czf "$out/raw.tgz" -C "$raw" .
cat "$out/summary.md"
