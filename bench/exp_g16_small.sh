#!/usr/bin/env bash
# Experiment (issue 9): where GQA 16's small decodes (Hkv 2, D 128, f16:
# 1 x 512 / 2048 / 8192, 16 x 512, behind FlashInfer's tensor-core decode
# by 0.1-1.7 us) spend their time: a per-CTA timeline
# (bench/ptx_timeline.py, bench/timeline_summary.py), and the bench with
# the chunk forced (--force-chunk) and with the last CTA's merge
# (--split-merge last) beside the planner's choice; clean eviction, 100
# timed calls.
#
#   bench/exp_g16_small.sh prep DIR        # here
#   PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu DIR/*
#   bench/exp_g16_small.sh run build/gpu OUT   # device; carry build/gpu
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/device_lib.sh"
mode="${1:?usage: exp_g16_small.sh prep DIR | run STAGED OUT}"
if [[ "$mode" == prep ]]; then
  set -e
  dir="${2:?DIR}"
  PA_PAIRS_ONLY=1 pa_prep "$dir"
  "$pac" "${pa_base[@]}" --kv-heads 2 --group 16 -o "$dir/g16"
  pa_timeline_bundle "$dir/g16" "$dir/g16_tl"
  exit 0
fi
out="${3:?OUT}"
pa_run_init "${2:?STAGED}" "$out"
pa_timelines "$R" "$B" "$raw" "$out" g16_tl "1 512" "1 2048" "1 8192" "16 512"
run() {  # NAME FLAGS...
  local n="$1"; shift
  timeout 150 "$R" bench --reps 100 --l2-flush clean "$@" --out "$raw/$n.md" "$B/g16" > /dev/null 2>&1
  echo "### $n: $*" >> "$out/summary.md"
  grep -E "^\| [0-9]" "$raw/$n.md" | cut -d'|' -f2,3,5,7,9 >> "$out/summary.md"
}
echo "## B | L | plan | us | % read roof" >> "$out/summary.md"
run auto --batches 1,16 --lens 512,2048,8192
run last --batches 1,16 --lens 512,2048,8192 --split-merge last
for c in 64 128 256 512 1024; do
  run "chunk$c" --batches 1 --lens 2048,8192 --force-chunk "$c"
done
run chunk128_16 --batches 16 --lens 512 --force-chunk 128
run chunk256_16 --batches 16 --lens 512 --force-chunk 256
run auto_again --batches 1,16 --lens 512,2048,8192
tar czf "$out/raw.tgz" -C "$raw" .
cat "$out/summary.md"
