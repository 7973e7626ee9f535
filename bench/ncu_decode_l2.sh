#!/usr/bin/env bash
# Where a B = 1 decode's L2 hits come from (issue 9; see docs/PERFORMANCE.md,
# "One long request"): Nsight Compute's memory tables and sector counts of
# one launch of ours and of FlashInfer's tensor-core decode at 1 x 65536,
# GQA 4. Carry build/gpu and .gpu-fi.
#   bench/ncu_decode_l2.sh STAGED OUT BUNDLE
set -uo pipefail
gpu="${1:?STAGED}"; out="${2:?OUT}"; bundle="${3:?BUNDLE}"
R="$gpu/bin/pa-gpu-runner"
export PATH="$PATH:/usr/local/cuda/bin"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
m=lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum,lts__t_sectors_srcunit_tex_op_write.sum,lts__t_sectors_srcunit_tex_op_atom.sum,dram__sectors_read.sum,dram__sectors_write.sum,smsp__inst_executed_op_ldgsts.sum,smsp__inst_executed_op_global_ld.sum,smsp__inst_executed_op_global_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_bypass.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts_cache_bypass.sum,lts__t_sectors_srcunit_tex_lookup_hit.sum,lts__t_sectors_lookup_hit.sum,lts__t_sectors.sum,gpu__time_duration.sum
ncu -k regex:'^pa_decode' --launch-skip 3 --launch-count 1 --section MemoryWorkloadAnalysis_Tables --metrics "$m" \
  "$R" bench --batches 1 --lens 65536 --reps 3 --warmup 1 --max-sets 1 "$bundle" > "$out/ncu_l2_ours.txt" 2>&1
eval "$(bash .gpu-fi/kit/setup-on-device.sh .gpu-fi)" > /dev/null
ncu -k regex:'BatchPrefill' --launch-skip 2 --launch-count 1 --section MemoryWorkloadAnalysis_Tables --metrics "$m" \
  python3 .gpu-fi/kit/fi_bench.py decode --batches 1 --lens 65536 --kv-heads 8 \
  --paths tc --reps 3 --warmup 1 > "$out/ncu_l2_fi.txt" 2>&1
for f in "$out"/ncu_l2_*.txt; do
  echo "== $(basename "$f")"
  grep -vE "^==PROF==|^\s*$|^\[" "$f" | grep -A200 -E "\)x\(" | head -90
done
