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

if [[ "$mode" == prep ]]; then
  set -e
  dir="${2:?DIR}"; build="${PA_BUILD_DIR:-$root/build}"; pac="$build/bin/pa-compile"
  mkdir -p "$dir"
  [[ "${PA_PAIRS_ONLY:-0}" == 1 ]] ||
    PA_SKIP_PREFILL=1 "$root/bench/make_bundles.sh" "$dir" "$pac" > /dev/null
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
S="$out/summary.md"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > "$S"

case "$mode" in
checks)
  {
    for d in "$B"/*; do
      n="$(basename "$d")"
      case "$n" in
        mla_*) c=check-mla ;;
        prefill_*) c=check-prefill ;;
        *) c=check ;;
      esac
      q=--quick; [[ $c == check-mla ]] && q=
      echo "$c $n: $(timeout 60 "$R" $c $q "$d" 2>&1 | tail -1 | cut -c1-100)"
    done
    for d in dc_gqa4_n dc_fp8_n; do
      for tool in memcheck racecheck; do
        echo "$tool $d: $(timeout 120 compute-sanitizer --tool $tool --report-api-errors no "$R" check --quick "$B/$d" 2>&1 \
          | grep -E "SUMMARY|all bundles|FAIL" | sort -u | tr '\n' ' ')"
      done
    done
  } >> "$S" 2>&1
  ;;
decode)
  grid=(--batches 1,16,64,256 --lens 512,2048,8192,32768 --max-kv-gib 9)
  read -r -a vs <<< "${PA_VARIANTS:-dc_gqa4_n dc_gqa4_w dc_g8_n dc_g8_w dc_fp8_n dc_fp8_w mha_d128_p16_f16_nhd_joint}"
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
      echo; echo "## FlashInfer tensor-core decode (Hkv 8, 4, 32)"
      timeout 200 python3 .gpu-fi/kit/fi_bench.py decode --batches 1,16,64,256 \
        --lens 512,2048,8192,32768 --kv-heads 8,4,32 --paths tc --max-kv-gib 9 2>&1 | grep -E "^\| [0-9]"
    fi
  } >> "$S" 2>&1
  rm -f "$out"/d_*.md
  ;;
*) echo "unknown mode $mode" >&2; exit 2 ;;
esac
cat "$S"
