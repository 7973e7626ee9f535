#!/usr/bin/env bash
# The tensor-core decode (pa-compile --decode-kernel tensor-core) in one
# device call: every staged decode bundle checked against the float64
# reference (tc_* and the CUDA-core ones), racecheck on the GQA-4
# tensor-core bundle, then the decode benchmark of the CUDA-core and
# tensor-core GQA-4 / MHA bundles (and any tc3_* / other variants staged)
# with FlashInfer's CUDA-core and tensor-core decode beside them (kit staged
# in .gpu-fi), all in this one run. Usage on the device machine (carry
# build/gpu and .gpu-fi; staged by bench/make_bundles.sh +
# bench/stage_gpu.sh):
#   bench/run_decode_tc_h200.sh build/gpu $OUT
set -uo pipefail
gpu="${1:?usage: run_decode_tc_h200.sh STAGED_DIR OUT}"; out="${2:?}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
export PATH="$PATH:/usr/local/cuda/bin"
grid=(--batches "${PA_BATCHES:-1,16,64,256}" --lens "${PA_LENS:-512,2048,8192,32768}" --max-kv-gib 9)
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
  for d in "$B"/*; do
    case "$(basename "$d")" in prefill_*) continue ;; esac
    echo "check $(basename "$d"): $(timeout 100 "$R" check "$d" > "$out/check_$(basename "$d").log" 2>&1; echo "rc $?"; tail -1 "$out/check_$(basename "$d").log")"
  done
} > "$out/check.log" 2>&1
cat "$out/check.log"
if [[ -d "$B/tc_gqa4_d128_p16_f16_nhd_joint" ]]; then
  timeout 150 compute-sanitizer --tool racecheck "$R" check "$B/tc_gqa4_d128_p16_f16_nhd_joint" 2>&1 \
    | grep -E "=========|all bundles|FAIL|PASS" | grep -v "^=========\s*$" | head -12 > "$out/racecheck.log"
  cat "$out/racecheck.log"
fi
for name in ${PA_BENCH_BUNDLES:-gqa4_d128_p16_f16_nhd_joint tc_gqa4_d128_p16_f16_nhd_joint mha_d128_p16_f16_nhd_joint tc_mha_d128_p16_f16_nhd_joint}; do
  [[ -d "$B/$name" ]] || continue
  timeout 200 "$R" bench "${grid[@]}" --out "$out/bench_$name.md" "$B/$name" > "$out/bench_$name.log" 2>&1
  echo "== $name"; grep -E "^\|" "$out/bench_$name.md" | cut -d'|' -f2-4,7,10 | tail -n +3
done
if [[ -d .gpu-fi ]]; then
  eval "$(bash .gpu-fi/kit/setup-on-device.sh .gpu-fi)"
  timeout 240 python3 .gpu-fi/kit/fi_bench.py decode --batches "${PA_BATCHES:-1,16,64,256}" \
    --lens "${PA_LENS:-512,2048,8192,32768}" --kv-heads 8,32 --paths cuda,tc --max-kv-gib 9 --out "$out/fi_decode.md" > "$out/fi_decode.log" 2>&1
  grep -E "^\|" "$out/fi_decode.md" | cut -d'|' -f2-6
fi
