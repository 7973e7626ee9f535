#!/usr/bin/env bash
# Split-KV chunk of a single long request (issue 9: 1 x 2048 and 1 x 32768
# trail FlashInfer): pa-gpu-runner bench with --force-chunk over a few
# chunk sizes beside the planner's choice, GQA 4 default bundle. Carry
# build/gpu.   bench/sweep_decode_b1_chunk.sh STAGED OUT BUNDLE
set -uo pipefail
gpu="${1:?STAGED}"; out="${2:?OUT}"; bundle="${3:?BUNDLE}"
R="$gpu/bin/pa-gpu-runner"
nvidia-smi --query-gpu=name --format=csv,noheader; date -u
for rep in 1 2; do
  for len in 512 2048 8192 32768; do
    for c in planner 64 128 256 512 1024 2048; do
      [[ $c != planner && $c -ge $len ]] && continue
      f=(); [[ $c != planner ]] && f=(--force-chunk "$c")
      "$R" bench --batches 1 --lens "$len" "${f[@]}" --out "$out/c.md" "$bundle" > /dev/null 2>&1
      echo "rep $rep | 1 x $len | chunk $c | $(grep -E '^\| 1 ' "$out/c.md" | cut -d'|' -f5,7 | tr -s ' ')"
    done
  done
done
rm -f "$out/c.md"
