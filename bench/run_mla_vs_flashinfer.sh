#!/usr/bin/env bash
# MLA decode beside FlashInfer's BatchMLAPagedAttentionWrapper (FA2 and FA3
# backends) in one device call, same shapes and method.
#
#   bench/run_mla_vs_flashinfer.sh STAGED OUT FI_STAGED
#
# STAGED: bench/run_mla.sh make + stage_gpu.sh (build/gpu); FI_STAGED: the
# kit's staged FlashInfer (.gpu-fi, ../shared/tools/flashinfer/stage.sh).
set -uo pipefail
gpu="${1:?STAGED}"; out="${2:?OUT}"; fi="${3:?FI_STAGED}"
root="$(cd "$(dirname "$0")/.." && pwd)"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
export PATH="$PATH:/usr/local/cuda/bin"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
eval "$(bash "$fi/kit/setup-on-device.sh" "$fi")"
# Ours first (both MLA kernel shapes at 128 heads), then FlashInfer's
# backends on the same shapes.
for n in mla_h128_p64_bf16 mla_h128_p64_bf16_wb2 mla_h16_p64_bf16; do
  "$R" bench-mla --batches 1,16,64,128 --lengths 1024,4096,8192 \
    --out "$out/ours_$n.md" "$B/$n" > /dev/null 2>&1
  cat "$out/ours_$n.md"
done
for h in 128 16; do
  timeout 400 python3 "$root/bench/fi_mla_bench.py" --heads "$h" \
    --batches 1,16,64,128 --lens 1024,4096,8192 --backends fa2,fa3 \
    --out "$out/fi_h$h.md" > "$out/fi_h$h.log" 2>&1
  cat "$out/fi_h$h.md"
  tail -3 "$out/fi_h$h.log"
done
