#!/usr/bin/env bash
# The wgmma prefill (convert-pa-to-gpu prefill-mma=wgmma, pa-compile
# --prefill-mma wgmma: Hopper warpgroup MMAs over shared-memory descriptors)
# beside the mma.sync prefill, issue 8, in device calls within the 10-minute
# limit each:
#
#   bench/run_wgmma.sh prep DIR          # here: bundles into DIR
#   PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu DIR/*
#   bench/run_wgmma.sh checks build/gpu OUT   # device: every wgmma bundle
#                                             # vs the float64 reference,
#                                             # sanitizers on one
#   bench/run_wgmma.sh all build/gpu OUT      # device: every staged bundle
#                                             # (check / check-prefill /
#                                             # check-mla by name)
#   bench/run_wgmma.sh prefill build/gpu OUT  # device: wgmma / mma.sync x2
#                                             # interleaved + FA2 + FA3
#                                             # (PA_SDPA=1: + PyTorch SDPA
#                                             # and the GEMM ceiling;
#                                             # PA_ROUNDS=1: one round)
# (device: carry build/gpu and .gpu-fi). DIR holds wg_* check bundles (the
# prefill variants of bench/make_bundles.sh whose head dim is a multiple of
# 64, with --prefill-mma wgmma) and the timed pairs: causal prefill at D 128,
# P 16, f16, GQA 4 (Hkv 8) and MHA (Hkv 32): pf_{gqa4,mha}_wg (wgmma's
# default 64-key tiles), pf_{gqa4,mha}_wg128 (128-key tiles) and
# pf_{gqa4,mha}_sync (mma.sync, --chip sm_90). `all` checks every bundle of
# the staged folder (bench/make_bundles.sh's set compiled for the default
# sm_90a, whose prefill bundles are wgmma where they fit).
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
export PATH="$PATH:/usr/local/cuda/bin"
mode="${1:?usage: run_wgmma.sh prep DIR | checks|all|prefill STAGED OUT}"

if [[ "$mode" == prep ]]; then
  set -e
  dir="${2:?DIR}"; build="${PA_BUILD_DIR:-$root/build}"; pac="$build/bin/pa-compile"
  mkdir -p "$dir"
  wg=(--prefill-mma wgmma)
  # name kv_heads group head_dim page_size dtype layout kv [flags...]
  checks=(
    "wg_gqa4_d128_p16_f16_nhd_joint_causal 8 4 128 16 f16 nhd joint --causal"
    "wg_gqa4_d128_p16_f16_nhd_joint_causal_kv64 8 4 128 16 f16 nhd joint --causal --prefill-tile-kv 64"
    "wg_mha_d128_p16_f16_nhd_joint_causal 32 1 128 16 f16 nhd joint --causal"
    "wg_g4_d128_p16_bf16_nhd_joint_none 2 4 128 16 bf16 nhd joint"
    "wg_g1_d64_p1_f16_hnd_split_causal 4 1 64 1 f16 hnd split --causal"
    "wg_g8_d256_p64_bf16_hnd_joint_causal 1 8 256 64 bf16 hnd joint --causal"
    "wg_g1_d192_p16_f16_nhd_joint_softcap 2 1 192 16 f16 nhd joint --causal --logits-soft-cap 30"
    "wg_g4_d128_p64_f16_hnd_joint_alibi 2 4 128 64 f16 hnd joint --causal --alibi"
    "wg_g4_d128_p16_f16_nhd_joint_positions 2 4 128 16 f16 nhd joint --causal --positions"
    "wg_g1_d128_p16_bf16_nhd_joint_positions_window 4 1 128 16 bf16 nhd joint --causal --positions --window 300"
    "wg_g8_d64_p5_bf16_nhd_joint_custommask 1 8 64 5 bf16 nhd joint --custom-mask"
    "wg_g1_d128_p16_f16_hnd_split_lsebase2 4 1 128 16 f16 hnd split --causal --lse-base2 --sm-scale 0.1"
    "wg_g4_d256_p1_f16_nhd_joint_window_none 2 4 256 1 f16 nhd joint --window 64"
    "wg_g8_d128_p16_bf16_hnd_split_positions_mask 1 8 128 16 bf16 hnd split --positions --custom-mask --alibi"
    "wg_g1_d64_p64_bf16_nhd_joint_softcap_none 4 1 64 64 bf16 nhd joint --logits-soft-cap 20 --lse-base2"
    "wg_g1_d64_p1_bf16_hnd_joint_causal_pagelist 4 1 64 1 bf16 hnd joint --causal --page-list-rounds 1"
  )
  for c in "${checks[@]}"; do
    read -r name hkv g d p dt lay kv flags <<<"$c"
    # shellcheck disable=SC2086
    "$pac" --kernels prefill --kv-heads "$hkv" --group "$g" --head-dim "$d" \
      --page-size "$p" --dtype "$dt" --layout "$lay" --kv "$kv" ${flags:-} \
      "${wg[@]}" -o "$dir/$name" > /dev/null
  done
  c=(--kernels prefill --head-dim 128 --page-size 16 --dtype f16 --layout nhd --kv joint --causal)
  for h in "gqa4 8 4" "mha 32 1"; do
    read -r n hkv g <<<"$h"
    "$pac" "${c[@]}" --kv-heads "$hkv" --group "$g" "${wg[@]}" -o "$dir/pf_${n}_wg" > /dev/null
    "$pac" "${c[@]}" --kv-heads "$hkv" --group "$g" "${wg[@]}" --prefill-tile-kv 128 -o "$dir/pf_${n}_wg128" > /dev/null
    "$pac" "${c[@]}" --kv-heads "$hkv" --group "$g" --chip sm_90 -o "$dir/pf_${n}_sync" > /dev/null
  done
  exit 0
fi

gpu="${2:?STAGED}"; out="${3:?OUT}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
S="$out/summary.md"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > "$S"

case "$mode" in
checks)
  {
    for d in "$B"/wg_* "$B"/pf_*; do
      [[ -d "$d" ]] || continue
      echo "check-prefill $(basename "$d"): $(timeout 90 "$R" check-prefill --quick "$d" 2>&1 | tail -1 | cut -c1-120)"
    done
    d=wg_gqa4_d128_p16_f16_nhd_joint_causal
    for tool in memcheck racecheck; do
      echo "$tool $d: $(timeout 150 compute-sanitizer --tool $tool --report-api-errors no "$R" check-prefill --quick "$B/$d" 2>&1 \
        | grep -E "SUMMARY|all bundles|FAIL" | sort -u | tr '\n' ' ')"
    done
  } >> "$S" 2>&1
  ;;
all)
  {
    for d in "$B"/*; do
      n="$(basename "$d")"
      case "$n" in
        mla_*) c=check-mla ;;
        casc_*) c=check-cascade ;;
        prefill_*|pf_*|wg_*) c=check-prefill ;;
        *) c=check ;;
      esac
      q=--quick; [[ $c == check-mla || $c == check-cascade ]] && q=
      echo "$c $n: $(timeout 90 "$R" $c $q "$d" 2>&1 | tail -1 | cut -c1-100)"
    done
  } >> "$S" 2>&1
  ;;
prefill)
  {
    echo "## prefill (bench-prefill: shape | B | q | kv | kernel | median us | min us | TFLOP/s), two rounds interleaved"
    read -r -a vs <<< "${PA_VARIANTS:-pf_gqa4_wg pf_gqa4_wg128 pf_gqa4_sync pf_mha_wg pf_mha_wg128 pf_mha_sync}"
    for rep in $(seq 1 "${PA_ROUNDS:-2}"); do
      for v in "${vs[@]}"; do
        echo "### $v round $rep"
        timeout 100 "$R" bench-prefill "$B/$v" 2>&1 | grep -E "^\| (causal|append)"
      done
    done
    if [[ "${PA_SDPA:-0}" == 1 ]]; then
      # PyTorch SDPA (flash, cuDNN) on the same shapes stored contiguously,
      # and the dense bf16 GEMM ceiling.
      echo; echo "## PyTorch SDPA + GEMM ceiling"
      timeout 300 python3 "$root/bench/sdpa_prefill.py" --out "$out/sdpa_prefill.md" > /dev/null 2>&1
      grep -E "^\||ceiling|GEMM" "$out/sdpa_prefill.md"
    fi
    if [[ "${PA_NO_FI:-0}" != 1 ]]; then
      eval "$(bash .gpu-fi/kit/setup-on-device.sh .gpu-fi)" > /dev/null
      for be in fa2 fa3; do
        echo; echo "## FlashInfer $be prefill"
        timeout 200 python3 .gpu-fi/kit/fi_bench.py prefill \
          --cases 64x512,16x2048,4x8192,2x16384,8x512:8192 --backend $be --kv-heads 8,32 2>&1 | grep -E "^\|"
      done
    fi
  } >> "$S" 2>&1
  ;;
*) echo "unknown mode $mode" >&2; exit 2 ;;
esac
cat "$S"
