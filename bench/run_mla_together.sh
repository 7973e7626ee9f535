#!/usr/bin/env bash
# The MLA splits' merge together (issue 9; MLAKernelBase::mergeShare, a
# cooperative launch) against the last CTA's merge, in one device call:
# check-mla of every bundle (both merges), memcheck / racecheck of a wgmma
# and an mma.sync bundle, the MLA tests of python/tests/test_cuda.py (CUDA
# graph capture included), bench-mla --split-merge auto / last twice
# interleaved on the 128-head auto bundle, FlashInfer's FA3 MLA on the same
# shapes (FI: the staged .gpu-fi, or "" for none; PA_MLA_BATCHES /
# PA_MLA_LENGTHS: the shapes, default 1,2,4,16,64 x 1024,8192,32768).
#
#   bench/run_mla_together.sh make DIR build/bin/pa-compile   # here
#   PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu DIR/*
#   PYTHONPATH=python PAGEDATTN_COMPILER=build/bin/pa-compile build/pyenv/bin/python \
#     -m pagedattn prebuild build/pybundles --from python/tests/test_cuda.py
#   bench/run_mla_together.sh run build/gpu OUT FI   # device; carry build/gpu,
#     .gpu-fi, build/pybundles, build/lib/Runtime/libpa_runtime.so, libpa_pool.so
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/device_lib.sh"
mode="${1:?usage: run_mla_together.sh make DIR PA_COMPILE | run STAGED OUT FI}"
if [[ "$mode" == make ]]; then
  out="${2:?DIR}"; pac="${3:?PA_COMPILE}"
  scale=0.0721687836
  mkdir -p "$out"
  configs=(
    "mla_h128_p64_bf16_auto 128 64 bf16"
    "mla_h128_p64_bf16_wg 128 64 bf16 --mla-mma wgmma"
    "mla_h64_p16_f16_wg_cap 64 16 f16 --mla-mma wgmma --logits-soft-cap 30 --lse-base2"
    "mla_h40_p5_f16_wg 40 5 f16 --mla-mma wgmma"
    "mla_h40_p5_f16_wg_csync 40 5 f16 --mla-mma wgmma --mla-consumer-sync"
    "mla_h128_p1_bf16_wg 128 1 bf16"
    "mla_h16_p64_bf16 16 64 bf16"
    "mla_h40_p16_bf16_sync 40 16 bf16 --mla-mma mma.sync"
  )
  for c in "${configs[@]}"; do
    read -r name h p dt flags <<<"$c"
    # shellcheck disable=SC2086
    "$pac" --kernels mla --head-dim 512 --kpe 64 --mla-heads "$h" \
      --page-size "$p" --dtype "$dt" --sm-scale "$scale" ${flags:-} \
      --chip sm_90a -o "$out/$name" || exit 1
  done
  exit 0
fi
out="${3:?OUT}"; fi="${4:-}"
batches="${PA_MLA_BATCHES:-1,2,4,16,64}"; lengths="${PA_MLA_LENGTHS:-1024,8192,32768}"
pa_run_init "${2:?STAGED}" "$out"
pa_mla_checks "$R" "$B" "$raw" 21 mla_h40_p5_f16_wg mla_h40_p16_bf16_sync >> "$out/summary.md" 2>&1
for round in 1 2; do
  for m in auto last; do
    timeout 150 "$R" bench-mla --split-merge "$m" --batches "$batches" --lengths "$lengths" --sets 2 \
      --out "$raw/${m}_$round.md" "$B/mla_h128_p64_bf16_auto" > /dev/null 2>&1 || echo "bench $m: rc $?" >> "$out/summary.md"
  done
done
{
  echo "## B | L | together r1 | together r2 | last r1 | last r2 (us)"
  paste -d'|' <(grep -E "^\| [0-9]" "$raw/auto_1.md" | cut -d'|' -f2,3,5) \
              <(grep -E "^\| [0-9]" "$raw/auto_2.md" | cut -d'|' -f5) \
              <(grep -E "^\| [0-9]" "$raw/last_1.md" | cut -d'|' -f5) \
              <(grep -E "^\| [0-9]" "$raw/last_2.md" | cut -d'|' -f5)
} >> "$out/summary.md"
pa_fa3_mla "$out" "$raw" "$fi" "$batches" "$lengths"
tar czf "$out/raw.tgz" -C "$raw" .
cat "$out/summary.md"
