#!/usr/bin/env bash
# The decode's split-KV merged together (issue 9; docs/GPU.md "Split-KV in
# one launch"): where a split plan's grid fits on the device at once, the
# runtime launches decode_split cooperatively and every CTA of a request
# merges a share of its splits; the planner then fills the wave without
# weighing the merge. This script times both merges (pa-gpu-runner bench
# --split-merge auto | last, clean L2 eviction, two rounds interleaved) at
# 1 and 16 requests, where plans split within one wave, beside FlashInfer's
# decode with the same eviction, and checks the bundles.
#
#   bench/run_merge_together_decode.sh prep DIR          # here
#   PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu DIR/*
#   bench/run_merge_together_decode.sh time build/gpu OUT    # device; carry
#                                                           # build/gpu, .gpu-fi
#   bench/run_merge_together_decode.sh oldnew build/gpu OUT  # device (prep
#     with PA_OLD_BUILD=<a build of the previous compiler>)
#   bench/run_merge_together_decode.sh checks build/gpu OUT  # device; carry
#     build/gpu, build/pybundles, build/lib/Runtime/libpa_runtime.so,
#     build/lib/Runtime/libpa_pool.so
#
# time: bundles lf_gqa4 / lf_g8 (tensor-core), lf_mha (CUDA-core), lf_fp8
# (e4m3, GQA 4) of run_l2_flush.sh; PA_BATCHES / PA_LENS override the grid.
# checks: every bundle of DIR (check --quick runs each split case with both
# merges; check-mla for mla_*), memcheck / racecheck of the GQA 4 / GQA 8
# f16 and the fp8 split decodes and of two MLA bundles, test_cuda.py whole.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/device_lib.sh"
mode="${1:?usage: run_merge_together_decode.sh prep DIR | time|oldnew|checks STAGED OUT}"
if [[ "$mode" == prep ]]; then
  "$root/bench/run_arrival_checks.sh" prep "${2:?DIR}" || exit 1
  "$root/bench/run_l2_flush.sh" prep "$2" || exit 1
  # PA_OLD_BUILD: a build of the previous compiler, whose lf_* bundles
  # (as old_lf_*) the oldnew mode times beside this one's.
  if [[ -n "${PA_OLD_BUILD:-}" ]]; then
    tmp="$(mktemp -d)"
    PA_BUILD_DIR="$PA_OLD_BUILD" "$root/bench/run_l2_flush.sh" prep "$tmp" || exit 1
    for d in "$tmp"/lf_*; do mv "$d" "$2/old_$(basename "$d")"; done
    rm -rf "$tmp"
  fi
  exit 0
fi
gpu="${2:?STAGED}"; out="${3:?OUT}"
R="$gpu/bin/pa-gpu-runner"; B="$gpu/bundles"
export PATH="$PATH:/usr/local/cuda/bin"
pa_header "$out"
if [[ "$mode" == oldnew ]]; then
  # The previous compiler's bundles (old_lf_*, last-CTA merge only) beside
  # this one's at PA_BATCHES (default 64,256: multi-wave plans, where the
  # merge together does not apply), two rounds interleaved, clean eviction.
  batches="${PA_BATCHES:-64,256}"; lens="${PA_LENS:-512,2048,8192,32768}"
  variants=(${PA_VARIANTS:-lf_gqa4 lf_g8 lf_mha lf_fp8})
  for round in 1 2; do
    for v in "${variants[@]}"; do
      for w in "$v" "old_$v"; do
        timeout 150 "$R" bench --batches "$batches" --lens "$lens" --l2-flush clean --max-kv-gib 9 \
          --out "$out/d_${w}_$round.md" "$B/$w" > /dev/null 2>&1 \
          || echo "bench $w round $round: rc $?" >> "$out/summary.md"
      done
    done
  done
  {
    echo "## new / old compiler, clean eviction: B | L | plan | new us r1 | new us r2 | old us r1 | old us r2"
    for v in "${variants[@]}"; do
      echo "### $v"
      paste -d'|' <(grep -E "^\| [0-9]" "$out/d_${v}_1.md" | cut -d'|' -f2,3,5,7) \
                  <(grep -E "^\| [0-9]" "$out/d_${v}_2.md" | cut -d'|' -f7) \
                  <(grep -E "^\| [0-9]" "$out/d_old_${v}_1.md" | cut -d'|' -f7) \
                  <(grep -E "^\| [0-9]" "$out/d_old_${v}_2.md" | cut -d'|' -f7)
    done
  } >> "$out/summary.md"
elif [[ "$mode" == time ]]; then
  batches="${PA_BATCHES:-1,16}"; lens="${PA_LENS:-512,2048,8192,32768}"
  variants=(${PA_VARIANTS:-lf_gqa4 lf_g8 lf_mha lf_fp8})
  for round in 1 2; do
    for v in "${variants[@]}"; do
      for m in auto last; do
        timeout 120 "$R" bench --batches "$batches" --lens "$lens" --l2-flush clean \
          --split-merge "$m" --out "$out/d_${v}_${m}_$round.md" "$B/$v" > /dev/null 2>&1 \
          || echo "bench $v $m round $round: rc $?" >> "$out/summary.md"
      done
    done
  done
  {
    echo "## decode, clean eviction: B | L | plan auto | plan last | auto us r1 | auto us r2 | last us r1 | last us r2 | % roof auto r2 | same-bytes read us"
    grep -m1 "read roof:" "$out/d_${variants[0]}_auto_1.md"
    for v in "${variants[@]}"; do
      echo "### $v"
      paste -d'|' <(grep -E "^\| [0-9]" "$out/d_${v}_auto_1.md" | cut -d'|' -f2,3,5,7) \
                  <(grep -E "^\| [0-9]" "$out/d_${v}_last_1.md" | cut -d'|' -f5) \
                  <(grep -E "^\| [0-9]" "$out/d_${v}_auto_2.md" | cut -d'|' -f7) \
                  <(grep -E "^\| [0-9]" "$out/d_${v}_last_1.md" | cut -d'|' -f7) \
                  <(grep -E "^\| [0-9]" "$out/d_${v}_last_2.md" | cut -d'|' -f7) \
                  <(grep -E "^\| [0-9]" "$out/d_${v}_auto_2.md" | cut -d'|' -f10,12)
    done
  } >> "$out/summary.md"
  if [[ "${PA_NO_FI:-0}" != 1 ]]; then
    eval "$(bash .gpu-fi/kit/setup-on-device.sh .gpu-fi)" > /dev/null
    timeout 200 python3 "$root/bench/fi_bench_flush.py" --l2-flush clean decode --batches "$batches" \
      --lens "$lens" --kv-heads 8,4 --paths tc --max-kv-gib 9 --out "$out/fi_gqa.md" > "$out/fi_gqa.log" 2>&1
    timeout 200 python3 "$root/bench/fi_bench_flush.py" --l2-flush clean decode --batches "$batches" \
      --lens "$lens" --kv-heads 32 --paths cuda,tc --max-kv-gib 9 --out "$out/fi_mha.md" > "$out/fi_mha.log" 2>&1
    { echo "## FlashInfer, clean eviction"; grep -hE "^\| [0-9]" "$out"/fi_gqa.md "$out"/fi_mha.md; } >> "$out/summary.md"
  fi
  pa_check_bundles "$R" "$B"/lf_* >> "$out/summary.md" 2>&1
  # Which check runs merged together (plan, forced chunks, the graph plan).
  { echo "## check --quick lf_g8: the runs that merged together";
    timeout 90 "$R" check --quick "$B/lf_g8" 2>&1 | grep -E "together" | head -24; } >> "$out/summary.md"
else
  {
    pa_check_bundles "$R" "$B"/*
    for d in "$B"/lf_gqa4 "$B"/lf_g8 "$B"/lf_fp8; do
      PA_SANITIZE_TIMEOUT=240 pa_sanitize "$R" check "$d"
    done
    for d in mla_h40_p5_f16_wg mla_h40_p16_bf16_sync; do
      PA_SANITIZE_TIMEOUT=240 pa_sanitize "$R" check-mla "$B/$d"
    done
    pa_test_cuda
  } >> "$out/summary.md" 2>&1
fi
cat "$out/summary.md"
