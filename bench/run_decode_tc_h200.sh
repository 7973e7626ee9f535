#!/usr/bin/env bash
# The tensor-core decode (pa-compile --decode-kernel auto / tensor-core) in
# one device call: every staged decode bundle checked against the float64
# reference, racecheck on the GQA-4 tensor-core bundle, the key-split
# prefill bundles (*_kvsplit) checked, then the decode benchmark of the
# CUDA-core (cc_*) and default (tensor-core for GQA) bundles and of MHA on
# both kernels, with FlashInfer's CUDA-core and tensor-core decode beside
# them (kit staged in .gpu-fi), and the key-split split-KV prefill on the
# few-query shapes beside the default bundle. Usage on the device machine
# (carry build/gpu and .gpu-fi; staged by bench/make_bundles.sh +
# bench/stage_gpu.sh):
#   bench/run_decode_tc_h200.sh build/gpu $OUT
set -uo pipefail
gpu="${1:?usage: run_decode_tc_h200.sh STAGED_DIR OUT}"; out="${2:?}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
export PATH="$PATH:/usr/local/cuda/bin"
full=(--batches 1,16,64,256 --lens 512,2048,8192,32768 --max-kv-gib 9)
part=(--batches 16,64,256 --lens 2048,8192 --max-kv-gib 9)
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
  for d in "$B"/*; do
    n="$(basename "$d")"
    case "$n" in
      prefill_*kvsplit) r="$(timeout 150 "$R" check-prefill --quick "$d" 2>&1 | tail -1)" ;;
      prefill_*) continue ;;
      *) r="$(timeout 100 "$R" check "$d" 2>&1 | tail -1)" ;;
    esac
    echo "check $n: ${r:0:160}"
  done
} > "$out/check.log" 2>&1
cat "$out/check.log"
if [[ -d "$B/gqa4_d128_p16_f16_nhd_joint" ]]; then
  timeout 150 compute-sanitizer --tool racecheck "$R" check "$B/gqa4_d128_p16_f16_nhd_joint" 2>&1 \
    | grep -E "SUMMARY|all bundles|FAIL" | head -6 > "$out/racecheck.log"
  cat "$out/racecheck.log"
fi
bench() { # NAME GRID...
  local name="$1"; shift
  [[ -d "$B/$name" ]] || return 0
  timeout 200 "$R" bench "$@" --out "$out/bench_$name.md" "$B/$name" > /dev/null 2>&1
  echo "== $name"; grep -E "^\|" "$out/bench_$name.md" | cut -d'|' -f2-5,7,10 | tail -n +3
}
bench cc_gqa4_d128_p16_f16_nhd_joint "${full[@]}"
bench gqa4_d128_p16_f16_nhd_joint "${full[@]}"
bench mha_d128_p16_f16_nhd_joint "${full[@]}"
bench tc_mha_d128_p16_f16_nhd_joint "${full[@]}"
for g in g8 g16; do
  bench "cc_${g}_d128_p16_f16_nhd_joint" "${part[@]}"
  bench "${g}_d128_p16_f16_nhd_joint" "${part[@]}"
done
for d in prefill_gqa4_d128_p16_f16_nhd_joint_causal prefill_gqa4_d128_p16_f16_nhd_joint_causal_kvsplit; do
  [[ -d "$B/$d" ]] || continue
  echo "== bench-prefill partial few $d"
  timeout 120 "$R" bench-prefill --kernel partial --only few "$B/$d" 2>&1 | grep -E "^\| few" | cut -d'|' -f2-8
done
if [[ -d .gpu-fi ]]; then
  eval "$(bash .gpu-fi/kit/setup-on-device.sh .gpu-fi)" > /dev/null
  timeout 200 python3 .gpu-fi/kit/fi_bench.py decode --batches 1,16,64,256 \
    --lens 512,2048,8192,32768 --kv-heads 8,32 --paths cuda,tc --max-kv-gib 9 --out "$out/fi_decode.md" > /dev/null 2>&1
  timeout 120 python3 .gpu-fi/kit/fi_bench.py decode --batches 16,64,256 \
    --lens 2048,8192 --kv-heads 4,2 --paths cuda,tc --max-kv-gib 9 --out "$out/fi_decode_g8g16.md" > /dev/null 2>&1
  echo "== FlashInfer"
  grep -hE "^\|" "$out/fi_decode.md" "$out/fi_decode_g8g16.md" | grep -v -- "---" | cut -d'|' -f2-6
fi
