#!/usr/bin/env bash
# Experiment (issue 9, the fp8 target): is the fp8 decode's gap to f16 the
# fp8 math or the 128-byte rows? A D 128 e4m3 row is 128 bytes, as is a D
# 64 f16 one; an f16 D 128 row is 256. GQA 4 (Hkv 8, P 16) decodes: e4m3 D
# 128 NHD (the default) and HND (a KV head's 16 rows of a page contiguous,
# 2 KB), f16 D 64 NHD, f16 D 128 NHD; B 64 / 256 x L 2048 / 8192, clean
# eviction, two rounds interleaved; check --quick of each.
#
#   bench/exp_row_bytes.sh prep DIR    # here
#   PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu DIR/*
#   bench/exp_row_bytes.sh run build/gpu OUT   # device; carry build/gpu
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/device_lib.sh"
mode="${1:?usage: exp_row_bytes.sh prep DIR | run STAGED OUT}"
vs=(f8_d128 f8_d128_hnd f16_d64 f16_d128)
if [[ "$mode" == prep ]]; then
  set -e
  dir="${2:?DIR}"
  PA_PAIRS_ONLY=1 pa_prep "$dir"
  "$pac" "${pa_base[@]}" "${pa_g4[@]}" --kv-dtype e4m3 -o "$dir/f8_d128"
  "$pac" "${pa_base[@]}" "${pa_g4[@]}" --kv-dtype e4m3 --layout hnd -o "$dir/f8_d128_hnd"
  "$pac" "${pa_base[@]}" "${pa_g4[@]}" --head-dim 64 -o "$dir/f16_d64"
  "$pac" "${pa_base[@]}" "${pa_g4[@]}" -o "$dir/f16_d128"
  exit 0
fi
out="${3:?OUT}"
pa_run_init "${2:?STAGED}" "$out"
pa_checks "$out" "" "${vs[@]}"
pa_bench_rounds "$R" "$B" "$raw" "${vs[@]}" -- --batches 64,256 \
  --lens 2048,8192 --max-kv-gib 9 --l2-flush clean
pa_rounds_table "$raw" "${vs[@]}" >> "$out/summary.md"
tar czf "$out/raw.tgz" -C "$raw" .
cat "$out/summary.md"
