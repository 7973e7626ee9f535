#!/usr/bin/env bash
# Experiment (2026-11-27): the wgmma MLA kernel with the next tile's copies
# issued behind S's wgmma (bundles *_reorder) against the kernel before it
# (*_base), checked, then timed in two interleaved rounds.
#
#   bench/exp_mla_reorder.sh STAGED OUT
set -uo pipefail
gpu="${1:?STAGED}"; out="${2:?OUT}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
timeout 200 "$R" check-mla --seed 7 "$B"/mla_* 2>&1 | grep -E "FAIL|all bundles" | tail -3
for round in 1 2; do
  for n in mla_h128_p64_bf16_wg_base mla_h128_p64_bf16_wg_reorder; do
    timeout 120 "$R" bench-mla --batches 1,16,64,128 --lengths 1024,8192 \
      --out "$out/$n.r$round.md" "$B/$n" > /dev/null 2>&1
    grep -E "^\| [0-9]" "$out/$n.r$round.md" | awk -F'|' -v n="${n##*_}" -v r=$round \
      '{printf "| %s r%s | %s | %s | %s |\n", n, r, $2, $3, $5}'
  done
done | tee "$out/rounds.md"
