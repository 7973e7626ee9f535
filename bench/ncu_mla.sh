#!/usr/bin/env bash
# Where the MLA decode's time goes at 128 heads (compute-bound): Nsight
# Compute on one launch of ours (bundle BUNDLE) and one of FlashInfer's FA3
# MLA at B x L: speed of light, tensor pipe, shared memory, warp stalls
# and the top stall sites. Carry build/gpu and .gpu-fi.
#
#   bench/ncu_mla.sh STAGED OUT BUNDLE [B] [L]
set -uo pipefail
gpu="${1:?STAGED}"; out="${2:?OUT}"; bundle="${3:?BUNDLE}"
b="${4:-64}"; l="${5:-8192}"
R="$gpu/bin/pa-gpu-runner"
export PATH="$PATH:/usr/local/cuda/bin"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
sections=(--section SpeedOfLight --section ComputeWorkloadAnalysis
          --section MemoryWorkloadAnalysis --section WarpStateStats
          --section Occupancy --section LaunchStats --section SourceCounters
          --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$,gpu__time_duration.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__inst_executed.sum')
timeout 240 ncu -k regex:'pa_mla' --launch-skip 2 --launch-count 1 "${sections[@]}" \
  "$R" bench-mla --batches "$b" --lengths "$l" --splits "${PA_SPLITS:-1}" --reps 3 --warmup 1 "$bundle" \
  > "$out/ncu_ours.txt" 2>&1
if [[ -d .gpu-fi ]]; then
  eval "$(bash .gpu-fi/kit/setup-on-device.sh .gpu-fi)" > /dev/null
  timeout 240 ncu -k regex:'MLA|Mla|mla' --launch-skip 4 --launch-count 1 "${sections[@]}" \
    python3 bench/fi_mla_bench.py --heads 128 --batches "$b" --lens "$l" --backends fa3 \
    > "$out/ncu_fi_fa3.txt" 2>&1
fi
for f in "$out"/ncu_*.txt; do
  echo "== $(basename "$f")"
  grep -E "pa_mla|MLA|Duration|Compute \(SM\) Throughput|Memory Throughput|Registers Per|Grid Size|Block Size|Achieved Occupancy|Issue Slots Busy|Executed Ipc A|stalled_(long|short|barrier|wait|membar|lg|mio|no_inst|math|drain|dispatch|sleeping|tex|branch|selected|not_selected).*ratio|gmma|wavefronts_mem_shared|smsp__inst_executed.sum|Shared Memory|Bank" "$f" | head -70
  grep -A25 -E "Warp Stall Sampling \(All Samples\)" "$f" | head -40
done
