#!/usr/bin/env bash
# fp8 KV caches widened in registers (pa-promote-tiles fp8-widen=registers,
# the default: the tensor-core kernels ldmatrix the swizzled fp8 bytes and
# widen the fragments) against widening each K / V tile in shared memory
# first (--fp8-widen=shared), issue 9:
#
#   bench/run_fp8_regs.sh prep DIR            # here: bundles into DIR
#   PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu DIR/*
#   bench/run_fp8_regs.sh checks build/gpu OUT  # device: every decode and
#                                               # fp8 bundle vs the float64
#                                               # reference, sanitizers
#   bench/run_fp8_regs.sh decode build/gpu OUT  # device: r / s x2
#                                               # interleaved, f16, and
#                                               # FlashInfer's fp8 decode
# (device: carry build/gpu and .gpu-fi). DIR holds bench/make_bundles.sh's
# decode and fp8 sets (PA_SKIP_PREFILL=1) plus the timed pairs, r =
# registers, s = shared: f8_{gqa4,g8,mha}_{r,s} (e4m3 cache, per-tensor
# scales, f16 queries, D 128, P 16, NHD joint, Hq 32), f16 GQA 4 beside
# them, and two more check bundles (a bf16 + e5m2 prefill at D 128, which
# widens in shared memory: prefill kernels do; a D 256 decode of a group of
# 16, widened in registers).
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
export PATH="$PATH:/usr/local/cuda/bin"
mode="${1:?usage: run_fp8_regs.sh prep DIR | checks|decode STAGED OUT}"
. "$root/bench/device_lib.sh"

if [[ "$mode" == prep ]]; then
  set -e
  dir="${2:?DIR}"
  pa_prep "$dir"
  c=(--head-dim 128 --page-size 16 --layout nhd --kv joint --chip sm_90a)
  f8=(--kv-dtype e4m3 --kv-scale tensor)
  for v in r s; do
    f=(--fp8-widen=registers); [[ $v == s ]] && f=(--fp8-widen=shared)
    "$pac" "${c[@]}" --dtype f16 --kv-heads 8 --group 4 "${f8[@]}" "${f[@]}" -o "$dir/f8_gqa4_$v"
    "$pac" "${c[@]}" --dtype f16 --kv-heads 4 --group 8 "${f8[@]}" "${f[@]}" -o "$dir/f8_g8_$v"
    "$pac" "${c[@]}" --dtype f16 --kv-heads 32 --group 1 "${f8[@]}" "${f[@]}" -o "$dir/f8_mha_$v"
  done
  "$pac" "${c[@]}" --dtype f16 --kv-heads 8 --group 4 -o "$dir/f16_gqa4"
  "$pac" --head-dim 128 --page-size 16 --layout hnd --kv split --chip sm_90a \
    --dtype bf16 --kv-heads 2 --group 4 --kv-dtype e5m2 --kv-scale head \
    --kernels prefill --causal -o "$dir/prefill_fp8_g4_d128_bf16_hnd_split_e5m2_head"
  "$pac" --head-dim 256 --page-size 16 --layout nhd --kv joint --chip sm_90a \
    --dtype bf16 --kv-heads 2 --group 16 --kv-dtype e5m2 --kv-scale tensor \
    -o "$dir/fp8_g16_d256_p16_bf16_nhd_joint_e5m2"
  exit 0
fi

gpu="${2:?STAGED}"; out="${3:?OUT}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
pa_header "$out"
case "$mode" in
checks)
  {
    pa_check_bundles "$R" "$B"/*
    pa_sanitize "$R" check "$B/f8_gqa4_r"
    pa_sanitize "$R" check "$B/fp8_g16_d256_p16_bf16_nhd_joint_e5m2"
  } >> "$out/summary.md" 2>&1
  ;;
decode)
  read -r -a vs <<< "${PA_VARIANTS:-f8_gqa4_r f8_gqa4_s f8_g8_r f8_g8_s f8_mha_r f8_mha_s f16_gqa4}"
  {
    pa_decode_rounds "$R" "$B" "$out" "${vs[@]}"
    if [[ "${PA_NO_FI:-0}" != 1 ]]; then
      eval "$(bash .gpu-fi/kit/setup-on-device.sh .gpu-fi)" > /dev/null
      echo; echo "## FlashInfer fp8 (e4m3) decode, cuda and tc paths"
      timeout 240 python3 bench/fi_decode_fp8.py --batches 1,16,64,256 \
        --lens 512,2048,8192,32768 --kv-heads 8,4,32 --paths cuda,tc --max-kv-gib 9 \
        --out "$out/fi_fp8.md" > /dev/null 2>&1
      cat "$out/fi_fp8.md"
    fi
  } >> "$out/summary.md" 2>&1
  ;;
*) echo "unknown mode $mode" >&2; exit 2 ;;
esac
cat "$out/summary.md"
