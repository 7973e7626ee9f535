#!/usr/bin/env bash
# Split-KV prefill: the few-query-tile shapes of bench-prefill timed at a
# range of forced KV chunks (and the planner's choice), GQA and MHA, to
# choose the planner's chunk rule. Usage on the device machine (carry
# build/gpu): bench/sweep_prefill_split_chunk.sh build/gpu $OUT
set -uo pipefail
gpu="${1:?usage: sweep_prefill_split_chunk.sh STAGED_DIR OUT}"; out="${2:?}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
  for d in prefill_gqa4_d128_p16_f16_nhd_joint_causal prefill_mha_d128_p16_f16_nhd_joint_causal; do
    echo "## $d"
    timeout 60 "$R" bench-prefill --only "few tiles" --reps 20 "$B/$d" 2>&1 | grep "^| few"
    for c in 128 256 512 1024 2048 4096 8192; do
      timeout 60 "$R" bench-prefill --kernel partial --kv-chunk "$c" --only "few tiles" --reps 20 "$B/$d" 2>&1 | grep "^| few"
    done
  done
} > "$out/sweep.md" 2>&1
cat "$out/sweep.md"
