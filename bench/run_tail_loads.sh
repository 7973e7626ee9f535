#!/usr/bin/env bash
# The split decode's tail without work-list loads (issue 9): the previous
# item's request, which the writes of requests without items need, loads
# beside the work item instead of after the merge (with the item count and
# the item's request, already loaded there). Old (bundles of the previous
# head, *_old: prep with PA_BUILD_DIR at its build and SUFFIX _old) against
# new: f16 GQA 4 / 8 / 16 (tensor-core), f16 MHA (CUDA-core), e4m3 GQA 4;
# check --quick of each, memcheck / racecheck of the new f16 GQA 4 one; the
# decode grid (clean eviction, two rounds interleaved), B 1 / 16 again with
# 100 timed calls.
#
#   bench/run_tail_loads.sh prep DIR [SUFFIX]   # here, once per build
#   PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu DIR/*
#   bench/run_tail_loads.sh run build/gpu OUT   # device
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/device_lib.sh"
mode="${1:?usage: run_tail_loads.sh prep DIR [SUFFIX] | run STAGED OUT}"
base=(f16_gqa4 f16_g8 f16_g16 f16_mha f8_gqa4)
if [[ "$mode" == prep ]]; then
  set -e
  dir="${2:?DIR}"; sfx="${3:-}"
  PA_PAIRS_ONLY=1 pa_prep "$dir"
  "$pac" "${pa_base[@]}" "${pa_g4[@]}" -o "$dir/f16_gqa4$sfx"
  "$pac" "${pa_base[@]}" --kv-heads 4 --group 8 -o "$dir/f16_g8$sfx"
  "$pac" "${pa_base[@]}" --kv-heads 2 --group 16 -o "$dir/f16_g16$sfx"
  "$pac" "${pa_base[@]}" "${pa_mha[@]}" -o "$dir/f16_mha$sfx"
  "$pac" "${pa_base[@]}" "${pa_g4[@]}" --kv-dtype e4m3 -o "$dir/f8_gqa4$sfx"
  exit 0
fi
out="${3:?OUT}"
pa_run_init "${2:?STAGED}" "$out"
pa_old_new "$out" f16_gqa4 "${base[@]}"
mkdir -p "$raw/small"
pa_bench_rounds "$R" "$B" "$raw/small" "${vs[@]}" -- --batches 1,16 \
  --lens 512,2048,8192,32768 --reps 100 --l2-flush clean
echo "## B 1 / 16, 100 timed calls" >> "$out/summary.md"
pa_rounds_table "$raw/small" "${vs[@]}" >> "$out/summary.md"
pa_bench_rounds "$R" "$B" "$raw" f16_gqa4_old f16_gqa4 f16_mha_old f16_mha -- \
  --batches 64,256 --lens 512,2048,8192,32768 --max-kv-gib 9 --l2-flush clean
echo "## B 64 / 256 (one-pass kernels, unchanged)" >> "$out/summary.md"
pa_rounds_table "$raw" f16_gqa4_old f16_gqa4 f16_mha_old f16_mha >> "$out/summary.md"
tar czf "$out/raw.tgz" -C "$raw" .
cat "$out/summary.md"
