#!/usr/bin/env bash
# The tensor-core decode with narrow rows (pa-tile-to-mma narrow-pv, the
# default for groups up to 8: O^T += V^T P^T, half the accumulators, 164-168
# registers and 3 CTAs per SM at D <= 128) against O += P V
# (--narrow-pv=0: 223-232 registers, 2 CTAs per SM), issue 9:
#
#   bench/run_narrow_pv.sh prep DIR           # here: bundles into DIR
#   PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu DIR/*
#   bench/run_narrow_pv.sh checks build/gpu OUT   # device: every decode
#                                                 # bundle vs the float64
#                                                 # reference, sanitizers
#   bench/run_narrow_pv.sh decode build/gpu OUT   # device: narrow / wide
#                                                 # x2 interleaved + FI tc
# (device: carry build/gpu and .gpu-fi). DIR holds bench/make_bundles.sh's
# decode set (PA_SKIP_PREFILL=1) plus the timed pairs, n = narrow (the
# default), w = --narrow-pv=0: dc_{gqa4,g8,fp8}_{n,w} (f16 D 128 P 16 NHD,
# Hq 32; fp8 = e4m3 cache, GQA 4), and MHA's CUDA-core decode beside them.
# The plan column gives the CTAs per SM the runtime ran at (decodeCTAsPerSM).
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
export PATH="$PATH:/usr/local/cuda/bin"
mode="${1:?usage: run_narrow_pv.sh prep DIR | checks|decode STAGED OUT}"
. "$root/bench/device_lib.sh"

if [[ "$mode" == prep ]]; then
  set -e
  dir="${2:?DIR}"
  pa_prep "$dir"
  c=(--head-dim 128 --page-size 16 --dtype f16 --layout nhd --kv joint --chip sm_90a)
  for v in n w; do
    f=(--narrow-pv=1); [[ $v == w ]] && f=(--narrow-pv=0)
    "$pac" "${c[@]}" --kv-heads 8 --group 4 "${f[@]}" -o "$dir/dc_gqa4_$v"
    "$pac" "${c[@]}" --kv-heads 4 --group 8 "${f[@]}" -o "$dir/dc_g8_$v"
    "$pac" "${c[@]}" --kv-heads 8 --group 4 --kv-dtype e4m3 "${f[@]}" -o "$dir/dc_fp8_$v"
  done
  exit 0
fi

gpu="${2:?STAGED}"; out="${3:?OUT}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
pa_header "$out"
case "$mode" in
checks)
  {
    pa_check_bundles "$R" "$B"/*
    for d in dc_gqa4_n dc_fp8_n; do pa_sanitize "$R" check "$B/$d"; done
  } >> "$out/summary.md" 2>&1
  ;;
decode)
  read -r -a vs <<< "${PA_VARIANTS:-dc_gqa4_n dc_gqa4_w dc_g8_n dc_g8_w dc_fp8_n dc_fp8_w mha_d128_p16_f16_nhd_joint}"
  {
    pa_decode_rounds "$R" "$B" "$out" "${vs[@]}"
    [[ "${PA_NO_FI:-0}" == 1 ]] || pa_fi_decode 8,4,32
  } >> "$out/summary.md" 2>&1
  ;;
*) echo "unknown mode $mode" >&2; exit 2 ;;
esac
cat "$out/summary.md"
