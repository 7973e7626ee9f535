#!/usr/bin/env bash
# Split-KV chunk of few long requests (issue 9: 1 x 2048 and 1 x 32768
# trail FlashInfer; the merge weight of fewerMerges): pa-gpu-runner bench
# with --force-chunk over chunk sizes beside the planner's choice. Carry
# build/gpu.
#   bench/sweep_decode_b1_chunk.sh STAGED OUT BUNDLE...
# PA_BATCHES (default 1) the batch sizes, PA_REPS (default 2) the rounds.
set -uo pipefail
gpu="${1:?STAGED}"; out="${2:?OUT}"; shift 2
R="$gpu/bin/pa-gpu-runner"
nvidia-smi --query-gpu=name --format=csv,noheader; date -u
IFS=, read -r -a batches <<< "${PA_BATCHES:-1}"
for bundle in "$@"; do
  echo "## $(basename "$bundle")"
  for rep in $(seq 1 "${PA_REPS:-2}"); do
    for b in "${batches[@]}"; do
      for len in 512 2048 8192 32768; do
        for c in planner 64 128 256 512 1024 2048 4096 8192; do
          [[ $c != planner && $c -ge $len ]] && continue
          # a chunk giving over 4 waves of 264 CTAs is never a candidate
          [[ $c != planner && $((b * (len / c))) -gt 256 ]] && continue
          f=(); [[ $c != planner ]] && f=(--force-chunk "$c")
          "$R" bench --batches "$b" --lens "$len" "${f[@]}" --out "$out/c.md" "$bundle" > /dev/null 2>&1
          echo "rep $rep | $b x $len | chunk $c | $(grep -E "^\| $b " "$out/c.md" | cut -d'|' -f5,7 | tr -s ' ')"
        done
      done
    done
  done
done
rm -f "$out/c.md"
