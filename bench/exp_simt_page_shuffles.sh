#!/usr/bin/env bash
# Shuffled page entries in the CUDA-core decode (issue 9)? Its tiles are
# warp-local like the tensor-core decode's; MHA at D = 128 copies 4 chunk
# rounds a lane a tile (3 stages) and carries an entry a round (125 / 128
# registers), GQA 2 copies 8 and shuffles. Each beside the other lookups:
# MHA with --page-list-rounds 4 (shuffled: decode_split 96 registers,
# decode 121), GQA 2 with --page-list-rounds 9 (an entry a round). Decode
# grid, clean eviction, two rounds interleaved, check --quick of every
# bundle. (Run at 23:08 UTC with a compiler whose stage-aware rule
# shuffled the MHA lookups by default: sh_mha was the shuffled kernel then,
# sh_mha_rounds the per-round one; the rule now applies where fp8 is
# widened in registers only.)
#
#   bench/exp_simt_page_shuffles.sh prep DIR    # here
#   PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu DIR/*
#   bench/exp_simt_page_shuffles.sh run build/gpu OUT   # device; carry build/gpu
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/device_lib.sh"
mode="${1:?usage: exp_simt_page_shuffles.sh prep DIR | run STAGED OUT}"
vs=(sh_mha_shuffled sh_mha sh_g2 sh_g2_rounds)
if [[ "$mode" == prep ]]; then
  set -e
  dir="${2:?DIR}"; pac="${PA_BUILD_DIR:-$root/build}/bin/pa-compile"
  mkdir -p "$dir"
  c=(--head-dim 128 --page-size 16 --dtype f16 --kv joint --chip sm_90a --layout nhd)
  "$pac" "${c[@]}" --kv-heads 32 --group 1 --page-list-rounds 4 -o "$dir/sh_mha_shuffled"
  "$pac" "${c[@]}" --kv-heads 32 --group 1 -o "$dir/sh_mha"
  "$pac" "${c[@]}" --kv-heads 16 --group 2 -o "$dir/sh_g2"
  "$pac" "${c[@]}" --kv-heads 16 --group 2 --page-list-rounds 9 -o "$dir/sh_g2_rounds"
  exit 0
fi
gpu="${2:?STAGED}"; out="${3:?OUT}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
raw="$(mktemp -d)"
pa_header "$out"
pa_checks "$out" "" "${vs[@]}"
pa_bench_rounds "$R" "$B" "$raw" "${vs[@]}" -- --batches 1,16,64,256 \
  --lens 512,2048,8192,32768 --max-kv-gib 9 --l2-flush clean
pa_rounds_table "$raw" "${vs[@]}" >> "$out/summary.md"
cat "$out/summary.md"
