#!/usr/bin/env bash
# The prefill measurement of docs/PERFORMANCE.md in one device call: every
# prefill bundle checked against the float64 reference, compute-sanitizer on
# three of them, the benchmark bundles timed, FlashInfer FA2 + SDPA + the
# bf16 GEMM ceiling beside them (FlashInfer kit staged in .gpu-fi), and the
# decode bundles re-checked. Usage on the device machine (carry build/gpu and
# .gpu-fi; staged by bench/make_bundles.sh + bench/stage_gpu.sh):
#   bench/run_prefill_h200.sh build/gpu $OUT
# PA_PARTS="bench check sanitize decode" (the default: all) picks the parts,
# so that the whole can be split over two calls of at most 10 minutes.
set -uo pipefail
gpu="${1:?usage: run_prefill_h200.sh STAGED_DIR OUT}"; out="${2:?}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
export PATH="$PATH:/usr/local/cuda/bin"
parts=" ${PA_PARTS:-bench check sanitize decode} "
part() { [[ "$parts" == *" $1 "* ]]; }
part check && {
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
  for d in "$B"/prefill_*; do
    echo "check-prefill $(basename "$d"): $(timeout 120 "$R" check-prefill --quick "$d" 2>&1 | tail -1)"
  done
  echo "check-prefill (full) gqa4: $(timeout 200 "$R" check-prefill "$B"/prefill_gqa4_d128_p16_f16_nhd_joint_causal 2>&1 | tail -1)"
} > "$out/check.log" 2>&1
part bench && {
  for d in "$B"/prefill_gqa4_d128_p16_f16_nhd_joint_causal "$B"/prefill_mha_d128_p16_f16_nhd_joint_causal; do
    timeout 120 "$R" bench-prefill "$d" 2>&1
  done
  eval "$(bash .gpu-fi/kit/setup-on-device.sh .gpu-fi)"
  timeout 240 python3 .gpu-fi/kit/fi_bench.py prefill \
    --cases 64x512,16x2048,4x8192,2x16384,8x512:8192 --backend fa2 \
    --sdpa flash,cudnn --matmul 8192 --kv-heads 8,32 2>&1
} > "$out/bench.md" 2>&1
part sanitize && {
  for tool in memcheck racecheck; do
    for d in prefill_gqa4_d128_p16_f16_nhd_joint_causal prefill_g8_d64_p5_bf16_nhd_joint_custommask prefill_g4_d256_p1_f16_nhd_joint_window_none; do
      echo "== $tool $d"
      extra=(); [[ "$tool" == memcheck ]] && extra=(--report-api-errors no)
      timeout 150 compute-sanitizer --tool "$tool" "${extra[@]}" "$R" check-prefill --quick --seeds 1 "$B/$d" 2>&1 \
        | grep -E "=========|all bundles|FAIL" | grep -v "^=========\s*$" | head -12
    done
  done
} > "$out/sanitizer.log" 2>&1
part decode && for d in "$B"/*; do
  case "$(basename "$d")" in prefill_*) continue ;; esac
  echo "check $(basename "$d"): $(timeout 120 "$R" check "$d" 2>&1 | tail -1)"
done > "$out/decode_check.log" 2>&1
for f in check.log sanitizer.log decode_check.log; do
  [[ -f "$out/$f" ]] && cat "$out/$f"
done
[[ -f "$out/bench.md" ]] && grep -E "^\| (causal|append|FlashInfer|SDPA|torch)" "$out/bench.md"
