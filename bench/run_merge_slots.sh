#!/usr/bin/env bash
# The split decode's merges taking several output slots at once (issue 9):
# GQA 16 / 8 at D 128 (512 / 256 slots for 128 threads), f16 and e4m3.
# Tried on 2026-11-28 and not kept (GQA 16 1 x 8192 15.9 -> 25.4 us; raw
# bench/results/merge-slots_2026-11-28_h200.md): "new" was that change,
# not in the tree; the script compares any two builds of these bundles.
# Old (bundles of the previous head, *_old: prep with PA_BUILD_DIR at its
# build and SUFFIX _old) against new over the decode grid, clean eviction,
# two rounds interleaved, B 1 / 16 rows again with 100 timed calls; check
# --quick of each, memcheck / racecheck of the new f16 GQA 16 one;
# FlashInfer 0.7.2's decode (both paths) at Hkv 2 and 4 beside (carry
# .gpu-fi too).
#
#   bench/run_merge_slots.sh prep DIR [SUFFIX]   # here, once per build
#   PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu DIR/*
#   bench/run_merge_slots.sh run build/gpu OUT   # device
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/device_lib.sh"
mode="${1:?usage: run_merge_slots.sh prep DIR [SUFFIX] | run STAGED OUT}"
base=(f16_g16 f16_g8 f8_g16 f8_g8)
if [[ "$mode" == prep ]]; then
  set -e
  dir="${2:?DIR}"; sfx="${3:-}"
  PA_PAIRS_ONLY=1 pa_prep "$dir"
  g16=(--kv-heads 2 --group 16); g8=(--kv-heads 4 --group 8)
  "$pac" "${pa_base[@]}" "${g16[@]}" -o "$dir/f16_g16$sfx"
  "$pac" "${pa_base[@]}" "${g8[@]}" -o "$dir/f16_g8$sfx"
  "$pac" "${pa_base[@]}" "${g16[@]}" --kv-dtype e4m3 -o "$dir/f8_g16$sfx"
  "$pac" "${pa_base[@]}" "${g8[@]}" --kv-dtype e4m3 -o "$dir/f8_g8$sfx"
  exit 0
fi
out="${3:?OUT}"
pa_run_init "${2:?STAGED}" "$out"
pa_old_new "$out" f16_g16 "${base[@]}"
pa_grid_table "${vs[@]}" >> "$out/summary.md"
mkdir -p "$raw/small"
pa_bench_rounds "$R" "$B" "$raw/small" "${vs[@]}" -- --batches 1,16 \
  --lens 512,2048,8192,32768 --reps 100 --l2-flush clean
echo "## B 1 / 16 again, 100 timed calls" >> "$out/summary.md"
pa_rounds_table "$raw/small" "${vs[@]}" >> "$out/summary.md"
if [[ -d .gpu-fi ]]; then
  eval "$(bash .gpu-fi/kit/setup-on-device.sh .gpu-fi)" > /dev/null
  {
    echo "## FlashInfer decode, Hkv 2 / 4"
    timeout 300 python3 .gpu-fi/kit/fi_bench.py decode --batches 1,16,64,256 \
      --lens 512,2048,8192,32768 --kv-heads 2,4 --paths cuda,tc --max-kv-gib 9 2>&1 |
      grep -E "^\| [0-9]"
  } >> "$out/summary.md"
fi
tar czf "$out/raw.tgz" -C "$raw" .
cat "$out/summary.md"
