#!/usr/bin/env bash
# An A/B of two compilers' decode bundles at the split plans (B = 1 and 16)
# under --l2-flush clean, with checks and sanitizers of the new ones, in one
# device call. Used for the fused split-KV merge unrolled by 32 / 16 instead
# of 8 (commit a61577e, reverted: bench/results/merge-unroll_2026-11-27_h200.md).
#
#   bench/run_merge_unroll.sh prep OLD_PA_COMPILE DIR   # here: DIR/old_*
#                                                     # (OLD_PA_COMPILE) and
#                                                     # DIR/new_* (this build)
#   PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu DIR/*
#   bench/run_merge_unroll.sh run build/gpu OUT       # device
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
mode="${1:?usage: run_merge_unroll.sh prep OLD_PA_COMPILE DIR | run STAGED OUT}"
if [[ "$mode" == prep ]]; then
  set -e
  old="${2:?OLD_PA_COMPILE}"; dir="${3:?DIR}"
  new="${PA_BUILD_DIR:-$root/build}/bin/pa-compile"
  mkdir -p "$dir"
  c=(--head-dim 128 --page-size 16 --dtype f16 --layout nhd --kv joint --chip sm_90a)
  for v in old new; do
    pac="$old"; [[ $v == new ]] && pac="$new"
    "$pac" "${c[@]}" --kv-heads 8 --group 4 -o "$dir/${v}_gqa4"
    "$pac" "${c[@]}" --kv-heads 4 --group 8 -o "$dir/${v}_g8"
    "$pac" "${c[@]}" --kv-heads 32 --group 1 -o "$dir/${v}_mha"
    "$pac" "${c[@]}" --kv-heads 8 --group 4 --kv-dtype e4m3 -o "$dir/${v}_fp8"
  done
  exit 0
fi
gpu="${2:?STAGED}"; out="${3:?OUT}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
export PATH="$PATH:/usr/local/cuda/bin"
raw="$(mktemp -d)"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > "$out/summary.md"
echo "## checks" >> "$out/summary.md"
timeout 300 "$R" check --quick "$B"/new_* > "$raw/check.log" 2>&1
echo "check rc $?: $(grep -c PASS "$raw/check.log") PASS lines, $(grep -c FAIL "$raw/check.log") FAIL lines" >> "$out/summary.md"
grep -E "FAIL|seed" "$raw/check.log" | head -5 >> "$out/summary.md"
for tool in memcheck racecheck; do
  echo "$tool new_gqa4: $(timeout 200 compute-sanitizer --tool $tool --report-api-errors no "$R" check --quick "$B/new_gqa4" 2>&1 \
    | grep -E "SUMMARY|FAIL" | sort -u | tr '\n' ' ')" >> "$out/summary.md"
done
grid=(--batches 1,16 --lens 512,2048,8192,32768 --l2-flush clean)
for round in 1 2; do
  for t in gqa4 g8 mha fp8; do
    for v in old new; do
      timeout 100 "$R" bench "${grid[@]}" --out "$raw/${v}_${t}_$round.md" "$B/${v}_$t" > /dev/null 2>&1
    done
  done
done
# Forced small chunks (many rows a merge) at one request.
for t in gqa4 g8; do
  for v in old new; do
    timeout 100 "$R" bench --batches 1 --lens 8192,32768 --force-chunk 256 --l2-flush clean \
      --out "$raw/${v}_${t}_c256.md" "$B/${v}_$t" > /dev/null 2>&1
  done
done
{
  echo "## B | L | plan | old r1 | old r2 | new r1 | new r2 (us, --l2-flush clean)"
  grep -m1 "read roof:" "$raw/new_gqa4_1.md"
  for t in gqa4 g8 mha fp8; do
    echo "### $t"
    paste -d'|' <(grep -E "^\| [0-9]" "$raw/old_${t}_1.md" | cut -d'|' -f2,3,5,7) \
                <(grep -E "^\| [0-9]" "$raw/old_${t}_2.md" | cut -d'|' -f7) \
                <(grep -E "^\| [0-9]" "$raw/new_${t}_1.md" | cut -d'|' -f7) \
                <(grep -E "^\| [0-9]" "$raw/new_${t}_2.md" | cut -d'|' -f7)
  done
  echo "### forced chunk 256: old | new"
  for t in gqa4 g8; do
    paste -d'|' <(grep -E "^\| [0-9]" "$raw/old_${t}_c256.md" | cut -d'|' -f2,3,4,5,7) \
                <(grep -E "^\| [0-9]" "$raw/new_${t}_c256.md" | cut -d'|' -f7)
  done
} >> "$out/summary.md"
tar czf "$out/raw.tgz" -C "$raw" .
cat "$out/summary.md"
