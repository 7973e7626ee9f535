#!/usr/bin/env bash
# Nsight Compute beside FlashInfer (issue 8, docs/PERFORMANCE.md): one launch
# of our prefill kernel and one of FlashInfer's FA2 prefill on the same shape,
# the sections that say where a tensor-core kernel's time goes (speed of
# light, pipes, warp stalls, scheduler, shared-memory bank conflicts,
# instruction mix, occupancy) and the warp stall reasons (warps stalled per
# issued instruction, by reason). Device only; carry build/gpu and .gpu-fi.
#
#   bench/ncu_prefill.sh STAGED OUT BUNDLE KERNEL ONLY FI_CASE HKV [SKIP]
#
# e.g. build/gpu $OUT build/gpu/bundles/pf_gqa4_def prefill append 8x512:8192 8
set -uo pipefail
gpu="${1:?STAGED}"; out="${2:?OUT}"; bundle="${3:?BUNDLE}"; kernel="${4:?KERNEL}"
only="${5:?ONLY}"; ficase="${6:?FI_CASE}"; hkv="${7:?HKV}"; skip="${8:-3}"
R="$gpu/bin/pa-gpu-runner"
export PATH="$PATH:/usr/local/cuda/bin"
sections=(--section SpeedOfLight --section ComputeWorkloadAnalysis
          --section WarpStateStats --section SchedulerStats
          --section InstructionStats --section Occupancy --section LaunchStats
          --section MemoryWorkloadAnalysis_Tables
          --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$')
tag="$(basename "$bundle")_${kernel}_${only// /_}"
ncu -k regex:'^pa_prefill' --launch-skip "$skip" --launch-count 1 "${sections[@]}" \
  "$R" bench-prefill --kernel "$kernel" --only "$only" --reps 3 --warmup 1 \
  --max-sets 1 "$bundle" > "$out/ncu_$tag.txt" 2>&1
if [[ -d .gpu-fi ]]; then
  eval "$(bash .gpu-fi/kit/setup-on-device.sh .gpu-fi)" > /dev/null
  ncu -k regex:'Prefill' --launch-skip "$skip" --launch-count 1 "${sections[@]}" \
    python3 .gpu-fi/kit/fi_bench.py prefill --cases "$ficase" --backend fa2 \
    --kv-heads "$hkv" --reps 3 --warmup 1 > "$out/ncu_fa2_${ficase//:/_}_h$hkv.txt" 2>&1
fi
