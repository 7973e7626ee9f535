#!/usr/bin/env bash
# Where a large-batch decode's last 4% goes (issue 9): one launch of our
# tensor-core decode and one of FlashInfer 0.7.2's tensor-core decode at
# B 64 x 8192 (GQA 4, D 128, P 16, fp16, one pass: no split-KV), Nsight
# Compute counters side by side: time, DRAM and L2 sectors, instructions
# and issue activity, warp stalls. Carry build/gpu and .gpu-fi.
#   bench/ncu_decode_b64.sh STAGED OUT BUNDLE
set -uo pipefail
gpu="${1:?STAGED}"; out="${2:?OUT}"; bundle="${3:?BUNDLE}"
R="$gpu/bin/pa-gpu-runner"
export PATH="$PATH:/usr/local/cuda/bin"
m=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__sectors_read.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed_op_ldgsts.sum,smsp__inst_executed_op_global_ld.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_ldsm.sum,smsp__inst_executed_pipe_tensor.sum,sm__warps_active.avg.pct_of_peak_sustained_active,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,launch__registers_per_thread,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem
m="$m,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$"
ncu -k regex:'^pa_decode' --launch-skip 3 --launch-count 1 --metrics "$m" \
  "$R" bench --batches 64 --lens 8192 --reps 3 --warmup 1 --max-sets 1 "$bundle" > "$out/ncu_b64_ours.txt" 2>&1
eval "$(bash .gpu-fi/kit/setup-on-device.sh .gpu-fi)" > /dev/null
ncu -k regex:'BatchPrefill' --launch-skip 2 --launch-count 1 --metrics "$m" \
  python3 .gpu-fi/kit/fi_bench.py decode --batches 64 --lens 8192 --kv-heads 8 \
  --paths tc --reps 3 --warmup 1 > "$out/ncu_b64_fi.txt" 2>&1
for f in "$out"/ncu_b64_ours.txt "$out"/ncu_b64_fi.txt; do
  echo "== $(basename "$f")"
  grep -E "\)x\(|^\s+(dram|gpu|lts|smsp|sm__|l1tex|launch)" "$f" | grep -vE " 0$|0\.00$" | sed -E 's/ +/ /g'
done
