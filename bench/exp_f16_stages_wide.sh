#!/usr/bin/env bash
# The f16 GQA 4 decode at 2 and 3 K/V stages where plans are one pass
# (B 64 / 256; bench/exp_decode_stages.sh's s_f16 / s_f16_st3, which ran
# only B 1 / 16 there): does the fp8 decode's gain from 3 stages at 2 CTAs
# an SM (docs/PERFORMANCE.md) hold for f16 (102400 bytes of shared memory
# at 3 stages: 2 CTAs an SM at most)? Clean eviction, two rounds
# interleaved (issue 9).
#
#   bench/exp_decode_stages.sh prep DIR ; PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu DIR/s_f16 DIR/s_f16_st3
#   bench/exp_f16_stages_wide.sh build/gpu OUT   # device
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/device_lib.sh"
gpu="${1:?STAGED}"; out="${2:?OUT}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
raw="$(mktemp -d)"
pa_header "$out"
pa_bench_rounds "$R" "$B" "$raw" s_f16 s_f16_st3 -- --batches 64,256 \
  --lens 512,2048,8192 --l2-flush clean
pa_rounds_table "$raw" s_f16 s_f16_st3 >> "$out/summary.md"
cat "$out/summary.md"
