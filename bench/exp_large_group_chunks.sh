#!/usr/bin/env bash
# Experiment (issue 9, GQA 8 / 16 small decodes): the planner fills the GPU
# with the smallest chunk (64 keys at GQA 16 1 x 8192: 128 items merged
# together); do fewer, longer items run faster? f16 GQA 16 (Hkv 2) and
# GQA 8 (Hkv 4) bundles of bench/run_tail_loads.sh, the planner's chunk
# against forced ones, 100 timed calls, clean eviction, two rounds.
#
#   bench/exp_large_group_chunks.sh run build/gpu   # device; carry build/gpu
set -uo pipefail
R="${2:?STAGED}/bin/pa-gpu-runner"; B="$2/bundles"
for rep in 1 2; do
  for spec in "f16_g16 1 8192 0" "f16_g16 1 8192 128" "f16_g16 1 32768 0" \
      "f16_g16 1 32768 512" "f16_g16 1 32768 1024" "f16_g8 1 8192 0" \
      "f16_g8 1 8192 256" "f16_g8 1 32768 0" "f16_g8 1 32768 1024" \
      "f16_g16 16 512 0" "f16_g16 16 512 128" "f16_g16 1 2048 0" \
      "f16_g16 1 2048 128"; do
    read -r v b l c <<<"$spec"
    fc=()
    [[ $c != 0 ]] && fc=(--force-chunk "$c")
    printf "r%s %s %s x %s chunk %s: " "$rep" "$v" "$b" "$l" "$c"
    timeout 60 "$R" bench --batches "$b" --lens "$l" --reps 100 --l2-flush clean \
      "${fc[@]}" "$B/$v" 2>&1 | grep -E "^\| [0-9]" | cut -d'|' -f5,7
  done
done
