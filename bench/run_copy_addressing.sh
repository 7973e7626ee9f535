#!/usr/bin/env bash
# One address a step for the tile kernels' K / V copies (issue 9): the
# cache as a 1-D memref (page * page elements + a loop-invariant offset),
# the whole-tile branch (no per-round key compares in every step but the
# last) and, in one-pass kernels, one page entry a thread (pa-promote-tiles
# `onePage`). Old (bundles compiled before the change, *_old) against new,
# fp8 e4m3 and f16, GQA 4 (tensor-core) and MHA (the default kernel), and
# the new fp8 GQA 4 decode at 3 and 4 K/V stages (one-pass: 167 registers
# with one page entry a lane), over the decode grid, clean eviction, two
# rounds interleaved; check --quick of every bundle (and check-prefill of
# the prefill ones), memcheck / racecheck of the new fp8 GQA 4 one.
# PA_BENCH (default: all but f16_mha) names the benched bundles.
#
#   bench/run_copy_addressing.sh prep DIR [SUFFIX]   # here, once per build
#   PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu DIR/*
#   bench/run_copy_addressing.sh run build/gpu OUT   # device; carry build/gpu
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/device_lib.sh"
mode="${1:?usage: run_copy_addressing.sh prep DIR [SUFFIX] | run STAGED OUT}"
base=(f8_gqa4 f16_gqa4 f8_mha f16_mha)
if [[ "$mode" == prep ]]; then
  set -e
  dir="${2:?DIR}"; sfx="${3:-}"
  PA_PAIRS_ONLY=1 pa_prep "$dir"
  "$pac" "${pa_base[@]}" "${pa_g4[@]}" --kv-dtype e4m3 -o "$dir/f8_gqa4$sfx"
  "$pac" "${pa_base[@]}" "${pa_g4[@]}" -o "$dir/f16_gqa4$sfx"
  "$pac" "${pa_base[@]}" "${pa_mha[@]}" --kv-dtype e4m3 -o "$dir/f8_mha$sfx"
  "$pac" "${pa_base[@]}" "${pa_mha[@]}" -o "$dir/f16_mha$sfx"
  "$pac" "${pa_base[@]}" "${pa_g4[@]}" --kernels prefill -o "$dir/prefill_f16$sfx"
  if [[ -z "$sfx" ]]; then
    for st in 3 4; do
      "$pac" "${pa_base[@]}" "${pa_g4[@]}" --kv-dtype e4m3 --decode-kv-stages $st -o "$dir/f8_gqa4_st$st"
    done
  fi
  exit 0
fi
out="${3:?OUT}"
pa_run_init "${2:?STAGED}" "$out"
all=()
for v in "${base[@]}"; do all+=("${v}_old" "$v"); done
all+=(f8_gqa4_st3 f8_gqa4_st4)
read -r -a vs <<<"${PA_BENCH:-f8_gqa4_old f8_gqa4 f8_gqa4_st3 f8_gqa4_st4 f16_gqa4_old f16_gqa4 f8_mha_old f8_mha}"
PA_SANITIZE_TIMEOUT=120 pa_checks "$out" f8_gqa4 "${all[@]}" prefill_f16 prefill_f16_old
pa_grid_table "${vs[@]}" >> "$out/summary.md"
tar czf "$out/raw.tgz" -C "$raw" .
cat "$out/summary.md"
