#!/usr/bin/env bash
# Split-KV prefill's query tile: the few-tile shapes timed with the default
# bundles (prefill_partial with 16 rows a warp, the planner's choice and
# forced) beside bundles whose kernels all have 4 warps x 32 rows
# (pa-compile --prefill-warps 4 --prefill-warp-rows 32 --prefill-variants
# one: prefill_partial as in the first split-KV run), GQA 4 and MHA.
# Usage on the device machine (carry build/gpu):
#   bench/compare_prefill_partial_rows.sh build/gpu $OUT
set -uo pipefail
gpu="${1:?usage: compare_prefill_partial_rows.sh STAGED_DIR OUT}"; out="${2:?}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
  for pair in "prefill_gqa4_d128_p16_f16_nhd_joint_causal prefill_gqa4_rows32" \
              "prefill_mha_d128_p16_f16_nhd_joint_causal prefill_mha_rows32"; do
    set -- $pair
    echo "## $1 (auto, then partial forced) / $2 (partial forced)"
    timeout 60 "$R" bench-prefill --only "few tiles" "$B/$1" 2>&1 | grep "^| few"
    timeout 60 "$R" bench-prefill --only "few tiles" --kernel partial "$B/$1" 2>&1 | grep "^| few"
    timeout 60 "$R" bench-prefill --only "few tiles" --kernel partial "$B/$2" 2>&1 | grep "^| few"
    echo "check-prefill $1: $(timeout 120 "$R" check-prefill --quick "$B/$1" 2>&1 | tail -1)"
  done
} > "$out/rows.md" 2>&1
cat "$out/rows.md"
