#!/usr/bin/env bash
# Where a small-batch decode's time goes (issues 9 and 14: B = 1 over long
# contexts, the per-device step of a sharded decode), in one device call:
# bench of our decode beside FlashInfer's CUDA-core and tensor-core decode
# on the same shapes, then Nsight Compute on one launch of ours and one of
# FlashInfer's tensor-core decode (speed of light, memory, warp stalls,
# occupancy, launch). Carry build/gpu and .gpu-fi.
#
#   bench/ncu_decode.sh STAGED OUT BUNDLE [LENS] [NCU_LEN]
#
# e.g. build/gpu $OUT build/gpu/bundles/gqa4_d128_p16_f16_nhd_joint
set -uo pipefail
gpu="${1:?STAGED}"; out="${2:?OUT}"; bundle="${3:?BUNDLE}"
lens="${4:-32768,65536,262144}"; nlen="${5:-65536}"
R="$gpu/bin/pa-gpu-runner"
export PATH="$PATH:/usr/local/cuda/bin"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
timeout 200 "$R" bench --batches 1 --lens "$lens" --out "$out/bench_b1.md" "$bundle" > /dev/null 2>&1
grep -E "^\| (B|1) " "$out/bench_b1.md"
eval "$(bash .gpu-fi/kit/setup-on-device.sh .gpu-fi)" > /dev/null
timeout 200 python3 .gpu-fi/kit/fi_bench.py decode --batches 1 --lens "$lens" \
  --kv-heads 8 2>&1 | grep -E "^\| " | tee "$out/fi_b1.md"
sections=(--section SpeedOfLight --section MemoryWorkloadAnalysis
          --section WarpStateStats --section Occupancy --section LaunchStats
          --section SchedulerStats
          --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$,gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed')
timeout 200 ncu -k regex:'^pa_decode' --launch-skip 3 --launch-count 2 "${sections[@]}" \
  "$R" bench --batches 1 --lens "$nlen" --reps 3 --warmup 1 --max-sets 1 "$bundle" \
  > "$out/ncu_ours_b1_$nlen.txt" 2>&1
timeout 200 ncu -k regex:'BatchPrefill|BatchDecode|Merge|merge' --launch-skip 6 --launch-count 3 "${sections[@]}" \
  python3 .gpu-fi/kit/fi_bench.py decode --batches 1 --lens "$nlen" --kv-heads 8 \
  --paths tc --reps 3 --warmup 1 > "$out/ncu_fi_tc_b1_$nlen.txt" 2>&1
for f in "$out"/ncu_*.txt; do
  echo "== $(basename "$f")"
  grep -E "\)x\(|Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Grid Size|Block Size|stalled_(long|short|barrier|wait|membar|lg|mio|no_inst|math|drain).*ratio|gpu__time_duration|dram__throughput" "$f" | head -60
done
