#!/usr/bin/env bash
# The MLA splits' merges with their loads issued together (issue 9;
# MLAKernelBase::headStats / mergeSlots / mergeShare, docs/GPU.md "MLA
# decode") against the previous merges, in one device call: the checks and
# new / old timings of run_mla_roles.sh (plus FlashInfer's FA3 MLA) over B 1
# - 64 x L 1024 - 32768, forced splits together / last at B 8 - 32
# (sweep_mla_together_splits.sh, to re-fit mlaPrefersTogether), and Nsight
# Compute's warp-state sampling of 16 x 1024 with automatic splits.
#
#   bench/run_mla_roles.sh prep DIR OLD_BUILD          # here
#   PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu DIR/*
#   (pybundles: see run_mla_together.sh)
#   bench/run_mla_merge_loads.sh build/gpu OUT FI       # device
# PA_OLD_RUNNER (run_mla_roles.sh), PA_SWEEP=0, PA_NCU=0: below.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
gpu="${1:?STAGED}"; out="${2:?OUT}"; fi="${3:-}"
mkdir -p "$out/roles" "$out/sweep" "$out/ncu"
PA_MLA_BATCHES="${PA_MLA_BATCHES:-1,2,4,8,16,32,64}" \
PA_MLA_LENGTHS="${PA_MLA_LENGTHS:-1024,2048,8192,32768}" \
  bash "$root/bench/run_mla_roles.sh" run "$gpu" "$out/roles" "$fi"
# PA_SWEEP=0: no forced splits.
if [[ "${PA_SWEEP:-1}" != 0 ]]; then
  PA_SWEEP_RUNS="${PA_SWEEP_RUNS:-wg 2,wg 2 last,wg 4,wg 4 last}" \
  PA_SWEEP_BATCHES="${PA_SWEEP_BATCHES:-8,16,24,32}" \
  PA_SWEEP_LENGTHS="${PA_SWEEP_LENGTHS:-1024,2048,8192}" \
    bash "$root/bench/sweep_mla_together_splits.sh" run "$gpu" "$out/sweep"
fi
# PA_NCU=0: no Nsight Compute run.
if [[ "${PA_NCU:-1}" != 0 ]]; then
  PA_SPLITS=0 bash "$root/bench/ncu_mla_source.sh" "$gpu" "$out/ncu" \
    "$gpu/bundles/mla_h128_p64_bf16_wg" 16 1024 > /dev/null 2>&1
  head -40 "$out/ncu/top.txt" 2>/dev/null
fi
