#!/usr/bin/env bash
# XOR-swizzled shared-memory rows (pa-promote-tiles smem-layout, pa-compile
# --smem-layout swizzle, the default, for head dims that are a multiple of
# 64) against the padded rows of before (--smem-layout pad: 16 bytes in
# prefill, 32 in decode), issues 8 and 9, in device calls within the
# 10-minute limit each:
#
#   bench/run_swizzle.sh prep DIR        # here: bundles into DIR
#   PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu DIR/*
#   bench/run_swizzle.sh checks build/gpu OUT   # device: every bundle vs
#                                               # the float64 reference,
#                                               # sanitizers on two
#   bench/run_swizzle.sh prefill build/gpu OUT  # device: prefill swz / pad
#                                               # x2 interleaved + FA2
#   bench/run_swizzle.sh decode build/gpu OUT   # device: decode swz / pad
#                                               # x2 interleaved + FI tc
# (device: carry build/gpu and .gpu-fi). DIR holds bench/make_bundles.sh's
# whole set (every variant the checks cover, at the defaults) plus the
# timed pairs, swz = --smem-layout swizzle, pad = --smem-layout pad:
# pf_{gqa4,mha}_{swz,pad} (causal prefill, D 128), dc_{gqa4,fp8}_{swz,pad}
# (decode, D 128, fp8 = e4m3 cache), dc_mha_tc_swz (MHA on the tensor-core
# decode) and dc_mha_cc (MHA's default CUDA-core decode).
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
export PATH="$PATH:/usr/local/cuda/bin"
mode="${1:?usage: run_swizzle.sh prep DIR | checks|prefill|decode STAGED OUT}"

if [[ "$mode" == prep ]]; then
  set -e
  dir="${2:?DIR}"; build="${PA_BUILD_DIR:-$root/build}"; pac="$build/bin/pa-compile"
  mkdir -p "$dir"
  # PA_PAIRS_ONLY=1: only the timed pairs below.
  [[ "${PA_PAIRS_ONLY:-0}" == 1 ]] || "$root/bench/make_bundles.sh" "$dir" "$pac" > /dev/null
  c=(--head-dim 128 --page-size 16 --dtype f16 --layout nhd --kv joint --chip sm_90)
  pad=(--smem-layout pad)
  for v in swz pad; do
    f=(--smem-layout swizzle); [[ $v == pad ]] && f=("${pad[@]}")
    "$pac" "${c[@]}" --kernels prefill --kv-heads 8 --group 4 --causal "${f[@]}" -o "$dir/pf_gqa4_$v"
    "$pac" "${c[@]}" --kernels prefill --kv-heads 32 --group 1 --causal "${f[@]}" -o "$dir/pf_mha_$v"
    "$pac" "${c[@]}" --kv-heads 8 --group 4 "${f[@]}" -o "$dir/dc_gqa4_$v"
    "$pac" "${c[@]}" --kv-heads 8 --group 4 --kv-dtype e4m3 "${f[@]}" -o "$dir/dc_fp8_$v"
  done
  "$pac" "${c[@]}" --kv-heads 32 --group 1 --decode-kernel tensor-core -o "$dir/dc_mha_tc_swz"
  "$pac" "${c[@]}" --kv-heads 32 --group 1 -o "$dir/dc_mha_cc"
  exit 0
fi

gpu="${2:?STAGED}"; out="${3:?OUT}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
S="$out/summary.md"
. "$root/bench/device_lib.sh"
pa_header "$out"

case "$mode" in
checks)
  {
    pa_check_bundles "$R" "$B"/*
    pa_sanitize "$R" check-prefill "$B/pf_gqa4_swz"
    pa_sanitize "$R" check "$B/dc_fp8_swz"
  } >> "$S" 2>&1
  ;;
prefill)
  {
    echo "## prefill (bench-prefill: shape | B | q | kv | kernel | median us | min us | TFLOP/s), two rounds interleaved"
    for rep in 1 2; do
      for v in pf_gqa4_swz pf_gqa4_pad pf_mha_swz pf_mha_pad; do
        echo "### $v round $rep"
        timeout 100 "$R" bench-prefill "$B/$v" 2>&1 | grep -E "^\| (causal|append)"
      done
    done
    if [[ "${PA_NO_FI:-0}" != 1 ]]; then
      eval "$(bash .gpu-fi/kit/setup-on-device.sh .gpu-fi)" > /dev/null
      echo; echo "## FlashInfer FA2 prefill"
      timeout 240 python3 .gpu-fi/kit/fi_bench.py prefill \
        --cases 64x512,16x2048,4x8192,2x16384,8x512:8192 --backend fa2 --kv-heads 8,32 2>&1 | grep -E "^\|"
    fi
  } >> "$S" 2>&1
  ;;
decode)
  read -r -a vs <<< "${PA_VARIANTS:-dc_gqa4_swz dc_gqa4_pad dc_fp8_swz dc_fp8_pad dc_mha_tc_swz dc_mha_cc}"
  {
    pa_decode_rounds "$R" "$B" "$out" "${vs[@]}"
    [[ "${PA_NO_FI:-0}" == 1 ]] || pa_fi_decode 8,32
  } >> "$S" 2>&1
  ;;
*) echo "unknown mode $mode" >&2; exit 2 ;;
esac
cat "$S"
