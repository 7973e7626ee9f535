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
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > "$S"

case "$mode" in
checks)
  {
    for d in "$B"/*; do
      n="$(basename "$d")"
      case "$n" in
        mla_*) c=check-mla ;;
        prefill_*|pf_*) c=check-prefill ;;
        *) c=check ;;
      esac
      q=--quick; [[ $c == check-mla ]] && q=
      echo "$c $n: $(timeout 60 "$R" $c $q "$d" 2>&1 | tail -1 | cut -c1-100)"
    done
    for d in pf_gqa4_swz dc_fp8_swz; do
      c=check; [[ $d == pf_* ]] && c=check-prefill
      for tool in memcheck racecheck; do
        echo "$tool $d: $(timeout 150 compute-sanitizer --tool $tool --report-api-errors no "$R" $c --quick "$B/$d" 2>&1 \
          | grep -E "SUMMARY|all bundles|FAIL" | sort -u | tr '\n' ' ')"
      done
    done
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
  grid=(--batches 1,16,64,256 --lens 512,2048,8192,32768 --max-kv-gib 9)
  read -r -a vs <<< "${PA_VARIANTS:-dc_gqa4_swz dc_gqa4_pad dc_fp8_swz dc_fp8_pad dc_mha_tc_swz dc_mha_cc}"
  for rep in 1 2; do
    for v in "${vs[@]}"; do
      timeout 100 "$R" bench "${grid[@]}" --out "$out/d_${v}_$rep.md" "$B/$v" > /dev/null 2>&1
    done
  done
  {
    echo "## decode: B | L | Hq/Hkv | plan | time us round 1 | time us round 2 | % read roof round 2"
    grep -m1 "read roof:" "$out/d_${vs[0]}_1.md"
    for v in "${vs[@]}"; do
      echo "### $v"
      paste -d'|' <(grep -E "^\| [0-9]" "$out/d_${v}_1.md" | cut -d'|' -f2-5,7) \
                  <(grep -E "^\| [0-9]" "$out/d_${v}_2.md" | cut -d'|' -f7,10)
    done
    if [[ "${PA_NO_FI:-0}" != 1 ]]; then
      eval "$(bash .gpu-fi/kit/setup-on-device.sh .gpu-fi)" > /dev/null
      echo; echo "## FlashInfer tensor-core decode (Hkv 8, 32)"
      timeout 200 python3 .gpu-fi/kit/fi_bench.py decode --batches 1,16,64,256 \
        --lens 512,2048,8192,32768 --kv-heads 8,32 --paths tc --max-kv-gib 9 2>&1 | grep -E "^\| [0-9]"
    fi
  } >> "$S" 2>&1
  rm -f "$out"/d_*.md
  ;;
*) echo "unknown mode $mode" >&2; exit 2 ;;
esac
cat "$S"
