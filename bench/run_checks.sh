#!/usr/bin/env bash
# Every staged bundle checked against the float64 reference in one device
# call: check-prefill --quick on the prefill bundles (prefill_*, pf_*), a
# full check-prefill of the GQA 4 benchmark bundle, and check on the decode
# bundles. For a change that touches every tensor-core kernel (e.g.
# pa-tile-to-mma). Staged by bench/make_bundles.sh + bench/stage_gpu.sh.
#
#   bench/run_checks.sh STAGED OUT
set -uo pipefail
gpu="${1:?usage: run_checks.sh STAGED OUT}"; out="${2:?OUT}"
R="$gpu/bin/pa-gpu-runner"; B="$gpu/bundles"
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
  for d in "$B"/prefill_* "$B"/pf_*; do
    [[ -d "$d" ]] || continue
    echo "check-prefill $(basename "$d"): $(timeout 100 "$R" check-prefill --quick "$d" 2>&1 | tail -1)"
  done
  g="$B/prefill_gqa4_d128_p16_f16_nhd_joint_causal"
  [[ -d "$g" ]] && echo "check-prefill (full) $(basename "$g"): $(timeout 200 "$R" check-prefill "$g" 2>&1 | tail -1)"
  for d in "$B"/*; do
    case "$(basename "$d")" in prefill_*|pf_*|mla_*) continue ;; esac
    echo "check $(basename "$d"): $(timeout 100 "$R" check "$d" 2>&1 | tail -1)"
  done
} > "$out/checks.txt" 2>&1
cat "$out/checks.txt"
