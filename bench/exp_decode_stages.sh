#!/usr/bin/env bash
# Do more K/V tiles in flight close the fp8 decode's gap to the read roof
# (issue 9)? Nsight Compute (bench/ncu_fp8_decode.sh, H200, 2026-11-27)
# had the fp8 GQA 4 decode at 256 x 8192 waiting at the step's
# cp.async.wait_group: with 2 stages a warp has one 16-key tile in flight
# (4 KB of fp8 against 8 KB of f16). Variants of the GQA 4 decode (D 128,
# P 16, NHD joint, sm_90a) timed side by side under --l2-flush clean, two
# rounds interleaved: fp8 e4m3 with 2 (default) / 3 / 4 stages, the 3- and
# 4-stage ones with warp-shuffled page lookups (page-list-rounds 4: 167
# registers at 3 stages, 3 CTAs per SM, instead of 186), and f16 with 2 / 3
# / 4 stages at the few-CTA rows (B 1 and 16).
#
#   bench/exp_decode_stages.sh prep DIR ; PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu DIR/*
#   bench/exp_decode_stages.sh run build/gpu OUT   # device
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/device_lib.sh"
mode="${1:?usage: exp_decode_stages.sh prep DIR | run STAGED OUT}"
f8=(s_f8 s_f8_pl4 s_f8_st3 s_f8_st4)
f16=(s_f16 s_f16_st3 s_f16_st4)
if [[ "$mode" == prep ]]; then
  set -e
  dir="${2:?DIR}"; pac="${PA_BUILD_DIR:-$root/build}/bin/pa-compile"
  mkdir -p "$dir"
  c=(--head-dim 128 --page-size 16 --dtype f16 --kv joint --chip sm_90a --kv-heads 8 --group 4 --layout nhd)
  "$pac" "${c[@]}" --kv-dtype e4m3 -o "$dir/s_f8"
  "$pac" "${c[@]}" --kv-dtype e4m3 --page-list-rounds 4 -o "$dir/s_f8_pl4"
  "$pac" "${c[@]}" --kv-dtype e4m3 --page-list-rounds 4 --decode-kv-stages 3 -o "$dir/s_f8_st3"
  "$pac" "${c[@]}" --kv-dtype e4m3 --page-list-rounds 4 --decode-kv-stages 4 -o "$dir/s_f8_st4"
  "$pac" "${c[@]}" -o "$dir/s_f16"
  "$pac" "${c[@]}" --decode-kv-stages 3 -o "$dir/s_f16_st3"
  "$pac" "${c[@]}" --decode-kv-stages 4 -o "$dir/s_f16_st4"
  exit 0
fi
gpu="${2:?STAGED}"; out="${3:?OUT}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
raw="$(mktemp -d)"
pa_header "$out"
all=("${f8[@]}" "${f16[@]}")
timeout 200 "$R" check --quick "${all[@]/#/$B/}" 2>&1 | grep -E "all bundles|FAIL" | head -8 >> "$out/summary.md"
pa_bench_rounds "$R" "$B" "$raw" "${f8[@]}" -- --batches 1,16,64,256 \
  --lens 512,2048,8192,32768 --l2-flush clean
pa_bench_rounds "$R" "$B" "$raw" "${f16[@]}" -- --batches 1,16 \
  --lens 512,2048,8192,32768 --l2-flush clean
pa_rounds_table "$raw" "${all[@]}" >> "$out/summary.md"
tar czf "$out/raw.tgz" -C "$raw" .
cat "$out/summary.md"
