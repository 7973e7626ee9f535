#!/usr/bin/env bash
# Experiment (issue 9, the 1 x 32768 target): a per-CTA timeline of the f16
# GQA 4 decode (bench/ptx_timeline.py: %globaltimer at each CTA's start,
# first K / V tile, KV loop done, arrival done and end, printed by thread
# 0) at 1 x 512 / 8192 / 32768 (split) and 64 x 2048 (one pass), a few
# launches each, summarized by bench/timeline_summary.py; the
# uninstrumented bundle's times beside.
#
#   bench/exp_timeline.sh prep DIR        # here
#   PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu DIR/*
#   bench/exp_timeline.sh run build/gpu OUT   # device; carry build/gpu
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/device_lib.sh"
mode="${1:?usage: exp_timeline.sh prep DIR | run STAGED OUT}"
if [[ "$mode" == prep ]]; then
  set -e
  dir="${2:?DIR}"
  PA_PAIRS_ONLY=1 pa_prep "$dir"
  "$pac" "${pa_base[@]}" "${pa_g4[@]}" -o "$dir/t_plain"
  pa_timeline_bundle "$dir/t_plain" "$dir/t_tl"
  exit 0
fi
out="${3:?OUT}"
pa_run_init "${2:?STAGED}" "$out"
pa_timelines "$R" "$B" "$raw" "$out" t_tl "1 32768" "1 8192" "1 512" "64 2048" "16 2048"
pa_bench_rounds "$R" "$B" "$raw" t_plain t_tl -- --batches 1,16,64 --lens 512,2048,8192,32768 \
  --max-kv-gib 9 --l2-flush clean
pa_rounds_table "$raw" t_plain t_tl >> "$out/summary.md"
tar czf "$out/raw.tgz" -C "$raw" .
cat "$out/summary.md"
