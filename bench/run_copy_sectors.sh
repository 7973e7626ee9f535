#!/usr/bin/env bash
# The decode's K / V copies after pa-cp-async-l2-prefetch (.L2::128B) and
# sector-aligned shared-memory rows (pa-promote-tiles row-pad-bytes 32 in
# decode kernels), issue 9, in one device call: the kernels that copy
# K / V with cp.async (tensor-core decode, fp8 decode, prefill, MLA)
# checked against the float64 reference (memcheck on two), then the
# default bundles beside the same kernels built as before (old_: 16-byte
# rows, no prefetch size; pad16_: 16-byte rows with the prefetch size),
# twice interleaved, FlashInfer's tensor-core decode and FA2 prefill, and
# the Python wrappers beside FlashInfer's.
#
#   bench/run_copy_sectors.sh prep DIR     # here: bundles into DIR, build/pybundles
#   PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu DIR/*
#   bench/run_copy_sectors.sh run build/gpu OUT
# (device: carry build/gpu, .gpu-fi, build/pybundles, build/lib/Runtime)
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
export PATH="$PATH:/usr/local/cuda/bin"
mode="${1:?usage: run_copy_sectors.sh prep DIR | run STAGED OUT}"

if [[ "$mode" == prep ]]; then
  set -e
  dir="${2:?DIR}"; build="${PA_BUILD_DIR:-$root/build}"; pac="$build/bin/pa-compile"
  mkdir -p "$dir"
  c=(--head-dim 128 --page-size 16 --dtype f16 --layout nhd --kv joint --chip sm_90)
  old=(--row-pad-bytes 16 --l2-prefetch-bytes 0)
  "$pac" "${c[@]}" --kv-heads 8 --group 4 -o "$dir/gqa4_new"
  "$pac" "${c[@]}" --kv-heads 8 --group 4 "${old[@]}" -o "$dir/gqa4_old"
  "$pac" "${c[@]}" --kv-heads 8 --group 4 --row-pad-bytes 16 -o "$dir/gqa4_pad16"
  "$pac" "${c[@]}" --kv-heads 4 --group 8 -o "$dir/g8_new"
  "$pac" "${c[@]}" --kv-heads 4 --group 8 "${old[@]}" -o "$dir/g8_old"
  "$pac" "${c[@]}" --kv-heads 8 --group 4 --kv-dtype e4m3 -o "$dir/fp8_new"
  "$pac" "${c[@]}" --kv-heads 8 --group 4 --kv-dtype e4m3 "${old[@]}" -o "$dir/fp8_old"
  "$pac" "${c[@]}" --kv-heads 32 --group 1 -o "$dir/mha_cc"
  "$pac" "${c[@]}" --kernels prefill --kv-heads 8 --group 4 --causal -o "$dir/prefill_gqa4_new"
  # check-only variants: other shapes of the cp.async kernels.
  "$pac" --kv-heads 4 --group 4 --head-dim 96 --page-size 1 --dtype bf16 --layout nhd --kv split \
    --decode-kernel tensor-core -o "$dir/chk_tc_g4_d96_p1_bf16_nhd_split"
  "$pac" --kv-heads 2 --group 16 --head-dim 64 --page-size 64 --dtype f16 --layout hnd --kv joint \
    --decode-kernel tensor-core -o "$dir/chk_tc_g16_d64_p64_f16_hnd_joint"
  "$pac" --kv-heads 2 --group 7 --head-dim 80 --page-size 5 --dtype f16 --layout nhd --kv joint \
    --decode-kernel tensor-core --decode-kv-stages 3 -o "$dir/chk_tc_g7_d80_p5_st3"
  "$pac" --kv-heads 2 --group 4 --head-dim 96 --page-size 5 --dtype bf16 --layout nhd --kv joint \
    --kv-dtype e5m2 -o "$dir/chk_fp8_g4_d96_p5_bf16_e5m2"
  "$pac" "${c[@]}" --kv-heads 8 --group 4 --decode-tile-kv 128 -o "$dir/chk_tc_gqa4_kv128"
  "$pac" --kernels prefill --kv-heads 2 --group 4 --head-dim 96 --page-size 5 --dtype bf16 \
    --layout hnd --kv split --causal --window 100 -o "$dir/chk_prefill_g4_d96_p5_bf16_hnd_split_window"
  "$pac" --kernels mla --head-dim 512 --kpe 64 --mla-heads 16 --page-size 16 --dtype bf16 \
    --sm-scale 0.0721687836 -o "$dir/chk_mla_h16"
  rm -rf "$build/pybundles"
  PYTHONPATH="$root/python" PAGEDATTN_COMPILER="$pac" "$build/pyenv/bin/python" -m pagedattn \
    prebuild "$build/pybundles" --from "$root/bench/python_vs_flashinfer.py"
  exit 0
fi

gpu="${2:?STAGED}"; out="${3:?OUT}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
S="$out/summary.md"
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
  [[ "${PA_NO_CHECKS:-0}" == 1 ]] || for d in "$B"/*; do
    case "$(basename "$d")" in
      *prefill*) c=check-prefill ;;
      *mla*) c=check-mla ;;
      *) c=check ;;
    esac
    q=--quick; [[ $c == check-mla ]] && q=
    echo "$c $(basename "$d"): $(timeout 120 "$R" $c $q "$d" 2>&1 | tail -1 | cut -c1-100)"
  done
  [[ "${PA_NO_CHECKS:-0}" == 1 ]] || for d in gqa4_new fp8_new; do
    c=check; [[ $d == prefill* ]] && c=check-prefill
    echo "memcheck $d: $(timeout 200 compute-sanitizer --tool memcheck --report-api-errors no "$R" $c --quick "$B/$d" 2>&1 \
      | grep -E "SUMMARY|all bundles|FAIL" | sort -u | tr '\n' ' ')"
  done
} > "$S" 2>&1
grid=(--batches 1,16,64,256 --lens 512,2048,8192,32768 --max-kv-gib 9)
# PA_VARIANTS: the bundles to time (default all); PA_REPS: 1 or 2;
# PA_NO_CHECKS=1, PA_NO_FI=1, PA_NO_PYTHON=1 skip those parts.
read -r -a vs <<< "${PA_VARIANTS:-gqa4_new gqa4_old gqa4_pad16 g8_new g8_old fp8_new fp8_old mha_cc}"
for rep in $(seq 1 "${PA_REPS:-2}"); do
  for v in "${vs[@]}"; do
    timeout 150 "$R" bench "${grid[@]}" --out "$out/d_${v}_$rep.md" "$B/$v" > /dev/null 2>&1
    case "$v" in gqa4*) timeout 60 "$R" bench --batches 1 --lens 65536,262144 \
      --out "$out/d_${v}_long_$rep.md" "$B/$v" > /dev/null 2>&1 ;; esac
  done
done
{
  echo; echo "## decode: B | L | Hq/Hkv | plan | time us rep 1 | time us rep 2 | % read roof rep 2"
  grep -m1 "read roof:" "$out/d_gqa4_new_1.md"
  for v in "${vs[@]}"; do
    echo "### $v"
    paste -d'|' <(cat "$out/d_${v}_1.md" "$out/d_${v}_long_1.md" 2>/dev/null | grep -E "^\| [0-9]" | cut -d'|' -f2-5,7) \
                <(cat "$out/d_${v}_2.md" "$out/d_${v}_long_2.md" 2>/dev/null | grep -E "^\| [0-9]" | cut -d'|' -f7,10)
  done
  echo; echo "## prefill (bench-prefill: shape | B | q | kv | kernel | median us | min us | TFLOP/s)"
  [[ -d "$B/prefill_gqa4_new" ]] && timeout 120 "$R" bench-prefill "$B/prefill_gqa4_new" 2>&1 | grep -E "^\| (causal|append)"
} >> "$S" 2>&1
[[ "${PA_NO_FI:-0}" == 1 ]] && { cat "$S"; exit 0; }
eval "$(bash .gpu-fi/kit/setup-on-device.sh .gpu-fi)" > /dev/null
{
  echo; echo "## FlashInfer tensor-core decode (Hkv 8, 32)"
  timeout 200 python3 .gpu-fi/kit/fi_bench.py decode --batches 1,16,64,256 \
    --lens 512,2048,8192,32768 --kv-heads 8,32 --paths tc --max-kv-gib 9 2>&1 | grep -E "^\| [0-9]"
  timeout 60 python3 .gpu-fi/kit/fi_bench.py decode --batches 1 --lens 65536,262144 \
    --kv-heads 8 --paths tc 2>&1 | grep -E "^\| [0-9]"
  timeout 100 python3 .gpu-fi/kit/fi_bench.py decode --batches 16,64,256 --lens 2048,8192 \
    --kv-heads 4 --paths tc 2>&1 | grep -E "^\| [0-9]"
  [[ -d "$B/prefill_gqa4_new" ]] && echo && echo "## FlashInfer FA2 prefill" && \
  timeout 200 python3 .gpu-fi/kit/fi_bench.py prefill \
    --cases 64x512,16x2048,4x8192,2x16384,8x512:8192 --backend fa2 --kv-heads 8 2>&1 | grep -E "^\|"
  if [[ "${PA_NO_PYTHON:-0}" != 1 ]]; then
    echo; echo "## Python wrappers beside FlashInfer's"
    PYTHONPATH="python:${PYTHONPATH:-}" PAGEDATTN_RUNTIME=build/lib/Runtime/libpa_runtime.so \
      PAGEDATTN_POOL_LIB=build/lib/Runtime/libpa_pool.so PAGEDATTN_BUNDLE_DIR=build/pybundles \
      timeout 300 python3 bench/python_vs_flashinfer.py 2>&1 | grep -vE "INFO|Building JIT" | tail -20
  fi
} >> "$S" 2>&1
cat "$S"
