#!/usr/bin/env bash
# Experiment (issue 9, the fp8 target): the fp8 one-pass decode at 4 CTAs
# an SM. Its 3-stage kernel holds 167 registers (3 CTAs an SM, 12 warps:
# Nsight Compute showed 8.7 cycles a warp between instructions and the
# conversions' chains exposed). Here pa_decode's PTX gets `.maxntid 128, 1,
# 1` and `.minnctapersm 4` (what gpu.func attributes nvvm.maxntid /
# nvvm.minctasm would write), reassembled with ptxas: 128 registers, 32
# bytes of spills, and 4 x 53248 bytes of shared memory fit. e4m3 GQA 4
# (3 stages) and MHA (3 stages; its 2-stage default runs 4 CTAs an SM at
# 120 registers) against the unpatched bundles, f16 beside; decode grid,
# clean eviction, two rounds interleaved; check --quick of each.
#
#   bench/exp_fp8_min_ctas.sh prep DIR    # here (pa-compile + ptxas)
#   PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu DIR/*
#   bench/exp_fp8_min_ctas.sh run build/gpu OUT   # device; carry build/gpu
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/device_lib.sh"
mode="${1:?usage: exp_fp8_min_ctas.sh prep DIR | run STAGED OUT}"
vs=(f8_gqa4 f8_gqa4_mn4 f8_mha f8_mha_st3 f8_mha_st3_mn4 f16_gqa4)
if [[ "$mode" == prep ]]; then
  set -e
  dir="${2:?DIR}"
  PA_PAIRS_ONLY=1 pa_prep "$dir"
  "$pac" "${pa_base[@]}" "${pa_g4[@]}" --kv-dtype e4m3 -o "$dir/f8_gqa4"
  "$pac" "${pa_base[@]}" "${pa_mha[@]}" --kv-dtype e4m3 -o "$dir/f8_mha"
  "$pac" "${pa_base[@]}" "${pa_mha[@]}" --kv-dtype e4m3 --decode-kv-stages 3 -o "$dir/f8_mha_st3"
  "$pac" "${pa_base[@]}" "${pa_g4[@]}" -o "$dir/f16_gqa4"
  for b in f8_gqa4 f8_mha_st3; do
    pa_ptx_edit "$dir/$b" "$dir/${b}_mn4" pa_decode \
      's/^)$/)\n.maxntid 128, 1, 1\n.minnctapersm 4/' | grep ": pa_decode:"
  done
  exit 0
fi
out="${3:?OUT}"
pa_run_init "${2:?STAGED}" "$out"
pa_checks "$out" "" "${vs[@]}"
pa_grid_table "${vs[@]}" >> "$out/summary.md"
tar czf "$out/raw.tgz" -C "$raw" .
cat "$out/summary.md"
