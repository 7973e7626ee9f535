#!/usr/bin/env bash
# FP8 KV caches on the GPU: every staged bundle (fp8_*: the tensor-core
# decode over fp8; prefill_*: check-prefill --quick; the others: check)
# checked against the float64 reference, racecheck on the GQA-4 decode
# (fp8 and f16) and the key-split prefill, then the decode benchmark of the
# fp8 bundles beside their f16 counterparts (and the CUDA-core GQA-4 f16
# kernel, cc_*) (GQA 4 and MHA on the full grid, GQA 8 on part of it: the
# read roof in bytes is the measure; an fp8 cache reads half the bytes) and
# the prefill benchmark of fp8 vs f16 (GQA 4, causal). With FI=1 and the
# FlashInfer kit staged in .gpu-fi, FlashInfer's decode over an fp8 cache
# (bench/fi_decode_fp8.py) and over an f16 cache (the kit's fi_bench.py)
# beside it. Usage on the device machine (carry
# build/gpu [and .gpu-fi]; staged by pa-compile + bench/stage_gpu.sh):
#   bench/run_fp8_h200.sh build/gpu $OUT [check|bench|all]
set -uo pipefail
gpu="${1:?usage: run_fp8_h200.sh STAGED_DIR OUT [check|bench|all]}"; out="${2:?}"
what="${3:-all}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
export PATH="$PATH:/usr/local/cuda/bin"
full=(--batches 1,16,64,256 --lens 512,2048,8192,32768 --max-kv-gib 9)
part=(--batches 16,64,256 --lens 2048,8192 --max-kv-gib 9)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
if [[ "$what" != bench ]]; then
  for d in "$B"/*; do
    [[ -d "$d" ]] || continue
    n="$(basename "$d")"
    case "$n" in
      prefill_*) r="$(timeout 150 "$R" check-prefill --quick "$d" 2>&1 | tail -1)" ;;
      *) r="$(timeout 100 "$R" check "$d" 2>&1 | tee "$out/check_$n.log" | tail -1)" ;;
    esac
    echo "check $n: ${r:0:200}"
  done
  grep -h "FAIL" "$out"/check_*.log 2>/dev/null | head -20
  for n in fp8_gqa4_d128_p16_f16_nhd_joint_e4m3 gqa4_d128_p16_f16_nhd_joint; do
    [[ -d "$B/$n" ]] || continue
    echo "racecheck $n: $(timeout 150 compute-sanitizer --tool racecheck "$R" check --quick \
      "$B/$n" 2>&1 | grep -E "SUMMARY|FAIL" | head -3 | tr '\n' ' ')"
  done
  n=prefill_gqa4_d128_p16_f16_nhd_joint_causal_kvsplit
  [[ -d "$B/$n" ]] && echo "racecheck $n: $(timeout 200 compute-sanitizer --tool racecheck "$R" check-prefill --quick \
      "$B/$n" 2>&1 | grep -E "SUMMARY|FAIL" | head -3 | tr '\n' ' ')"
fi
[[ "$what" == check ]] && exit 0
bench() { # NAME GRID...
  local name="$1"; shift
  [[ -d "$B/$name" ]] || return 0
  timeout 200 "$R" bench "$@" --out "$out/bench_$name.md" "$B/$name" > /dev/null 2>&1
  echo "== $name"; grep -E "^\|" "$out/bench_$name.md" | cut -d'|' -f2-5,7,10 | tail -n +3
}
bench fp8_gqa4_d128_p16_f16_nhd_joint_e4m3 "${full[@]}"
bench cc_gqa4_d128_p16_f16_nhd_joint "${full[@]}"
bench gqa4_d128_p16_f16_nhd_joint "${full[@]}"
bench fp8_mha_d128_p16_f16_nhd_joint_e4m3 "${full[@]}"
bench mha_d128_p16_f16_nhd_joint "${full[@]}"
bench fp8_g8_d128_p16_f16_nhd_joint_e4m3 "${part[@]}"
bench g8_d128_p16_f16_nhd_joint "${part[@]}"
for d in prefill_fp8_gqa4_d128_p16_f16_nhd_joint_causal_e4m3 prefill_gqa4_d128_p16_f16_nhd_joint_causal; do
  [[ -d "$B/$d" ]] || continue
  echo "== bench-prefill $d"
  timeout 150 "$R" bench-prefill --only causal "$B/$d" 2>&1 | grep -E "^\| causal" | cut -d'|' -f2-9
done
if [[ "${FI:-0}" == 1 && -d .gpu-fi ]]; then
  eval "$(bash .gpu-fi/kit/setup-on-device.sh .gpu-fi)" > /dev/null
  timeout 240 python3 bench/fi_decode_fp8.py --check 2>&1 | tail -4
  timeout 240 python3 bench/fi_decode_fp8.py --batches 1,16,64,256 \
    --lens 512,2048,8192,32768 --kv-heads 8,32 --paths cuda,tc --max-kv-gib 9 \
    --out "$out/fi_decode_fp8.md" > /dev/null 2>&1
  echo "== FlashInfer fp8 decode"; cat "$out/fi_decode_fp8.md" 2>/dev/null | tail -n +1
  timeout 200 python3 .gpu-fi/kit/fi_bench.py decode --batches 1,16,64,256 \
    --lens 512,2048,8192,32768 --kv-heads 8,32 --paths cuda,tc --max-kv-gib 9 \
    --out "$out/fi_decode_f16.md" > /dev/null 2>&1
  echo "== FlashInfer f16 decode"; cat "$out/fi_decode_f16.md" 2>/dev/null
fi
