#!/usr/bin/env bash
# Experiment (issue 9): the row padding of the K / V tiles in shared memory
# against the L2 sectors the cp.async copies ask for. Bundles gqa4_padN /
# prefill_padN: the default GQA 4 decode / causal prefill with N elements
# of padding per shared-memory row (pa-promote-tiles' stride; 8 = 16 bytes
# was the default). Nsight Compute sector counts at 64 x 8192, then the
# benchmarks twice, interleaved. Carry build/gpu. The bundles of the
# recorded run (bench/results/smem-row-pad_2026-11-26_h200.md) came from
# a temporary build whose Layout::stride() read the padding from
# $PA_EXP_PAD; pads 16 and 32 bytes (N = 8, 16) are now pa-compile's
# --row-pad-bytes 16 / 32.
#   bench/exp_smem_pad.sh STAGED OUT
set -uo pipefail
gpu="$1"; out="$2"; B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
export PATH="$PATH:/usr/local/cuda/bin"
m=gpu__time_duration.sum,dram__sectors_read.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum,smsp__inst_executed_op_ldgsts.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,smsp__inst_executed.sum
pads="${PADS:-8 16 24}"
for p in $pads; do
  echo "== pad $p"
  "$R" check --quick "$B/gqa4_pad$p" 2>&1 | tail -1
  ncu -k regex:'^pa_decode' --launch-skip 3 --launch-count 1 --metrics "$m" \
    "$R" bench --batches 64 --lens 8192 --reps 3 --warmup 1 --max-sets 1 "$B/gqa4_pad$p" 2>&1 | grep -E "^\s+(dram|gpu|lts|smsp|l1tex)" | sed -E 's/ +/ /g'
done
for rep in 1 2; do for p in $pads; do
  echo "== bench pad $p rep $rep (B | L | us | % read roof)"
  "$R" bench --batches 1,16,64,256 --lens 512,2048,8192,32768 --max-kv-gib 9 --out "$out/b_${p}_$rep.md" "$B/gqa4_pad$p" > /dev/null 2>&1
  grep -E "^\| [0-9]" "$out/b_${p}_$rep.md" | cut -d'|' -f2,3,7,10 | tr '\n' ';'; echo
done; done
for p in $pads; do
  [[ -d "$B/prefill_pad$p" ]] || continue
  echo "== prefill pad $p"
  "$R" check-prefill --quick "$B/prefill_pad$p" 2>&1 | tail -1
  for rep in 1 2; do "$R" bench-prefill "$B/prefill_pad$p" 2>&1 | grep -E "^\| (causal|append)" | cut -d'|' -f2-4,7,9; done
done
