#!/usr/bin/env bash
# The decode beyond the main grid's shapes (issue 9: "groups of 8 and 16,
# head dims 96 and 256 measured too"): f16 GQA 16 (Hkv 2), GQA 4 at D 96
# and D 256 (Hkv 8); check --quick of each, the decode grid with clean
# eviction, two rounds interleaved; FlashInfer 0.7.2's decode beside at Hkv
# 2 (D 128) and at D 256 (Hkv 8; its modules may compile on first use:
# given 300 s) (carry .gpu-fi too).
#
#   bench/run_groups_dims.sh prep DIR        # here
#   PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu DIR/*
#   bench/run_groups_dims.sh run build/gpu OUT   # device
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/device_lib.sh"
mode="${1:?usage: run_groups_dims.sh prep DIR | run STAGED OUT}"
vs=(g16_d128 g4_d96 g4_d256)
if [[ "$mode" == prep ]]; then
  set -e
  dir="${2:?DIR}"
  PA_PAIRS_ONLY=1 pa_prep "$dir"
  "$pac" "${pa_base[@]}" --kv-heads 2 --group 16 -o "$dir/g16_d128"
  "$pac" "${pa_base[@]}" "${pa_g4[@]}" --head-dim 96 -o "$dir/g4_d96"
  "$pac" "${pa_base[@]}" "${pa_g4[@]}" --head-dim 256 -o "$dir/g4_d256"
  exit 0
fi
out="${3:?OUT}"
pa_run_init "${2:?STAGED}" "$out"
pa_checks "$out" "" "${vs[@]}"
pa_grid_table "${vs[@]}" >> "$out/summary.md"
if [[ -d .gpu-fi ]]; then
  eval "$(bash .gpu-fi/kit/setup-on-device.sh .gpu-fi)" > /dev/null
  {
    echo "## FlashInfer decode, Hkv 2, D 128"
    timeout 200 python3 .gpu-fi/kit/fi_bench.py decode --batches 1,16,64,256 \
      --lens 512,2048,8192,32768 --kv-heads 2 --paths cuda,tc --max-kv-gib 9 2>&1 |
      grep -E "^\| [0-9]"
    echo "## FlashInfer decode, Hkv 8, D 256"
    timeout 300 python3 .gpu-fi/kit/fi_bench.py decode --batches 1,16,64,256 \
      --lens 512,2048,8192,32768 --kv-heads 8 --head-dim 256 --paths cuda,tc \
      --max-kv-gib 9 2>&1 | grep -E "^\| [0-9]|rror" | head -40
  } >> "$out/summary.md"
fi
tar czf "$out/raw.tgz" -C "$raw" .
cat "$out/summary.md"
