#!/usr/bin/env bash
# The fp8 one-pass decode's K/V stages (issue 9). pa-compile's default now
# compiles a one-pass decode over an fp8 cache (D a multiple of 128) with
# 3 stages and keeps 2 for the split-KV kernel and MHA. Against the old
# default (2 stages everywhere, --decode-kv-stages 2) for e4m3 GQA 4, e5m2
# GQA 4 and the f16 reference, and MHA at 2 (its default) against 3 stages
# (f8_mha_st3; `f8_mha` in the 2026-11-28 raw file, when 3 was briefly its
# default too), over the decode grid; then 4 stages (one
# pass: 167 registers) against 3 at 3 CTAs an SM (--ctas-per-sm 3, one-pass
# rows B 64 / 256: a --decode-kv-stages 4 bundle's split kernel holds 194
# registers, so its own plans would assume 2). Clean eviction, two rounds
# interleaved; check --quick of every bundle, memcheck / racecheck of the
# default e4m3 GQA 4 one.
#
#   bench/run_fp8_onepass_stages.sh prep DIR    # here
#   PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu DIR/*
#   bench/run_fp8_onepass_stages.sh run build/gpu OUT   # device; carry build/gpu
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/device_lib.sh"
mode="${1:?usage: run_fp8_onepass_stages.sh prep DIR | run STAGED OUT}"
vs=(f8_gqa4_st2 f8_gqa4 e5_gqa4 f8_mha f8_mha_st3 f16_gqa4)
four=(f8_gqa4 f8_gqa4_st4 f8_mha_st3 f8_mha_st4)
if [[ "$mode" == prep ]]; then
  set -e
  dir="${2:?DIR}"
  PA_PAIRS_ONLY=1 pa_prep "$dir"
  "$pac" "${pa_base[@]}" "${pa_g4[@]}" --kv-dtype e4m3 -o "$dir/f8_gqa4"
  "$pac" "${pa_base[@]}" "${pa_g4[@]}" --kv-dtype e4m3 --decode-kv-stages 2 -o "$dir/f8_gqa4_st2"
  "$pac" "${pa_base[@]}" "${pa_g4[@]}" --kv-dtype e4m3 --decode-kv-stages 4 -o "$dir/f8_gqa4_st4"
  "$pac" "${pa_base[@]}" "${pa_g4[@]}" --kv-dtype e5m2 -o "$dir/e5_gqa4"
  "$pac" "${pa_base[@]}" "${pa_mha[@]}" --kv-dtype e4m3 -o "$dir/f8_mha"
  "$pac" "${pa_base[@]}" "${pa_mha[@]}" --kv-dtype e4m3 --decode-kv-stages 3 -o "$dir/f8_mha_st3"
  "$pac" "${pa_base[@]}" "${pa_mha[@]}" --kv-dtype e4m3 --decode-kv-stages 4 -o "$dir/f8_mha_st4"
  "$pac" "${pa_base[@]}" "${pa_g4[@]}" -o "$dir/f16_gqa4"
  exit 0
fi
out="${3:?OUT}"
pa_run_init "${2:?STAGED}" "$out"
raw4="$(mktemp -d)"
PA_SANITIZE_TIMEOUT=120 pa_checks "$out" f8_gqa4 "${vs[@]}" f8_gqa4_st4 f8_mha_st4
{
  pa_grid_table "${vs[@]}"
  pa_bench_rounds "$R" "$B" "$raw4" "${four[@]}" -- --batches 64,256 \
    --lens 512,2048,8192 --max-kv-gib 9 --l2-flush clean --ctas-per-sm 3
  echo; echo "## 3 against 4 stages at --ctas-per-sm 3"
  pa_rounds_table "$raw4" "${four[@]}"
} >> "$out/summary.md"
tar czf "$out/raw.tgz" -C "$raw" .; tar czf "$out/raw4.tgz" -C "$raw4" .
cat "$out/summary.md"
