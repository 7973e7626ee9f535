#!/usr/bin/env bash
# Kernel-shape experiments for prefill in one device call: every staged
# prefill bundle is checked (quick) against the float64 reference, then
# timed by bench-prefill, with FlashInfer FA2 + SDPA + the GEMM ceiling in
# the same run (FlashInfer kit staged in .gpu-fi). Bundle names carry the
# variant (e.g. _w4b1: 4 warps, one barrier per KV tile); a bundle with
# both prefill kernels (prefill, prefill_short) is also timed with each one
# forced. Usage on the
# device machine (carry build/gpu and .gpu-fi):
#   bench/run_prefill_variants.sh build/gpu $OUT
set -uo pipefail
gpu="${1:?usage: run_prefill_variants.sh STAGED_DIR OUT}"; out="${2:?}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
export PATH="$PATH:/usr/local/cuda/bin"
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
  for d in "$B"/prefill_*; do
    echo "check-prefill $(basename "$d"): $(timeout 120 "$R" check-prefill --quick "$d" 2>&1 | tail -1)"
  done
} > "$out/check.log" 2>&1
{
  for d in "$B"/prefill_gqa4_* "$B"/prefill_mha_*; do
    echo "## $(basename "$d")"
    timeout 120 "$R" bench-prefill "$d" 2>&1 | grep -E "^\| (causal|append)"
    # A bundle with both prefill kernels: each one on every shape, too (the
    # rows above are the planner's choice per shape).
    if grep -q '^kernel prefill_short ' "$d/bundle.manifest"; then
      for kernel in prefill short; do
        echo "## $(basename "$d") --kernel $kernel"
        timeout 120 "$R" bench-prefill --kernel "$kernel" "$d" 2>&1 |
          grep -E "^\| (causal|append)"
      done
    fi
  done
  if [[ -d .gpu-fi && "${PA_NO_FI:-0}" != 1 ]]; then
    eval "$(bash .gpu-fi/kit/setup-on-device.sh .gpu-fi)"
    timeout 240 python3 .gpu-fi/kit/fi_bench.py prefill \
      --cases 64x512,16x2048,4x8192,2x16384,8x512:8192 --backend fa2 \
      --sdpa flash,cudnn --matmul 8192 --kv-heads 8,32 2>&1
  fi
} > "$out/bench.md" 2>&1
cat "$out/check.log"
grep -E "^## |^\| (causal 32k|append|FlashInfer|torch)" "$out/bench.md"
