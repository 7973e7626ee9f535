#!/usr/bin/env bash
# A short device check of the decode's split-KV merges after a change that
# the longer run_decode_merge_loads.sh call did not cover: check --quick of
# run_l2_flush.sh's lf_* bundles (each split case with both merges), then
# bench of GQA 4 / GQA 8 at one request (clean eviction) into OUT.
#
#   bench/run_l2_flush.sh prep DIR && PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu DIR/lf_*
#   bench/quick_merge_check.sh build/gpu OUT     # device; carry build/gpu
set -uo pipefail
gpu="${1:?STAGED}"; out="${2:?OUT}"
R="$gpu/bin/pa-gpu-runner"; B="$gpu/bundles"
for d in lf_gqa4 lf_g8 lf_mha lf_fp8; do
  echo "check $d: $(timeout 60 "$R" check --quick "$B/$d" 2>&1 | tail -1)"
done
for d in lf_gqa4 lf_g8; do
  timeout 40 "$R" bench --batches 1 --lens 512,2048,32768 --l2-flush clean \
    --out "$out/$d.md" "$B/$d" > /dev/null 2>&1
  echo "## $d"; grep -E "^\| [0-9]|read roof" "$out/$d.md" | cut -d'|' -f2-12
done
