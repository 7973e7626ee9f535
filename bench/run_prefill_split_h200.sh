#!/usr/bin/env bash
# Split-KV prefill (pa.prefill_partial + merge_segments) in one device call:
# every prefill bundle checked against the float64 reference on all its
# kernels (prefill, prefill_short, prefill_partial with the planner's chunk
# and with a small one), compute-sanitizer on two of them, the benchmark
# bundles timed with the planner's choice (auto) and without split-KV
# (prefill: the kernels before it), FlashInfer FA2 + SDPA on the same shapes
# beside them (FlashInfer kit staged in .gpu-fi), and the decode bundles
# re-checked. Usage on the device machine (carry build/gpu and .gpu-fi;
# staged by bench/make_bundles.sh + bench/stage_gpu.sh):
#   bench/run_prefill_split_h200.sh build/gpu $OUT
set -uo pipefail
gpu="${1:?usage: run_prefill_split_h200.sh STAGED_DIR OUT}"; out="${2:?}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
export PATH="$PATH:/usr/local/cuda/bin"
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
  for d in "$B"/prefill_*; do
    echo "check-prefill $(basename "$d"): $(timeout 150 "$R" check-prefill --quick "$d" 2>&1 | tail -1)"
  done
  timeout 240 "$R" check-prefill "$B"/prefill_gqa4_d128_p16_f16_nhd_joint_causal > "$out/check_full_gqa4.log" 2>&1
  echo "check-prefill (full) gqa4: $(tail -1 "$out/check_full_gqa4.log")"
} > "$out/check.log" 2>&1
{
  for d in "$B"/prefill_gqa4_d128_p16_f16_nhd_joint_causal "$B"/prefill_mha_d128_p16_f16_nhd_joint_causal; do
    for k in auto prefill; do
      timeout 150 "$R" bench-prefill --kernel "$k" "$d" 2>&1
    done
  done
  eval "$(bash .gpu-fi/kit/setup-on-device.sh .gpu-fi)"
  timeout 240 python3 .gpu-fi/kit/fi_bench.py prefill \
    --cases 64x512,16x2048,4x8192,2x16384,8x512:8192,1x512:32768,1x128:16384,4x16:8192 \
    --backend fa2 --sdpa flash --kv-heads 8,32 2>&1
} > "$out/bench.md" 2>&1
{
  for tool in memcheck racecheck; do
    for d in prefill_gqa4_d128_p16_f16_nhd_joint_causal prefill_g8_d64_p5_bf16_nhd_joint_custommask; do
      echo "== $tool $d"
      timeout 200 compute-sanitizer --tool "$tool" "$R" check-prefill --quick --seeds 1 "$B/$d" 2>&1 \
        | grep -E "=========|all bundles|FAIL" | grep -v "^=========\s*$" | head -12
    done
  done
} > "$out/sanitizer.log" 2>&1
for d in "$B"/*; do
  case "$(basename "$d")" in prefill_*) continue ;; esac
  echo "check $(basename "$d"): $(timeout 120 "$R" check "$d" 2>&1 | tail -1)"
done > "$out/decode_check.log" 2>&1
cat "$out/check.log" "$out/sanitizer.log" "$out/decode_check.log"
grep -E "^\| (causal|append|few|FlashInfer|SDPA|torch)|^## |kernel:" "$out/bench.md"
