#!/usr/bin/env bash
# The MLA kernels' split merge (MLAKernelBase::mergeSplits) with more loads
# in flight, side by side in one device call: 128-head auto bundles (wgmma
# + the mma.sync small kernel) named mla_<variant>, and check bundles
# mla_h*_*. check-mla of every bundle, memcheck / racecheck of the 40-head
# wgmma one, bench-mla of each variant twice interleaved at B 1 / 4 / 16 /
# 64 x L 1024 / 8192 / 32768, FlashInfer's FA3 MLA at B 1 / 4 / 16 (FI: the
# staged .gpu-fi, or "" for none).
#
#   bench/run_mla_merge.sh STAGED OUT FI VARIANT...   # device
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
gpu="${1:?usage: run_mla_merge.sh STAGED OUT FI VARIANT...}"; out="${2:?OUT}"; fi="${3:-}"; shift 3
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
. "$root/bench/device_lib.sh"
export PATH="$PATH:/usr/local/cuda/bin"
raw="$(mktemp -d)"
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
  echo "check-mla: $(timeout 300 "$R" check-mla "$B"/mla_* 2>&1 | grep -E "all bundles|FAIL" | head -5 | tr '\n' ' ')"
  h40="$(ls -d "$B"/mla_h40_* 2>/dev/null | head -1)"
  [[ -n "$h40" ]] && PA_SANITIZE_TIMEOUT=200 pa_sanitize "$R" check-mla "$h40"
} > "$out/summary.md"
for round in 1 2; do
  for v in "$@"; do
    timeout 150 "$R" bench-mla --batches 1,4,16,64 --lengths 1024,8192,32768 --sets 2 \
      --out "$raw/${v}_$round.md" "$B/mla_$v" > /dev/null 2>&1 || echo "bench $v: rc $?" >> "$out/summary.md"
  done
done
{
  echo "## B | L | r1 us | r2 us | TFLOP/s r2"
  for v in "$@"; do
    echo "### $v"
    paste -d'|' <(grep -E "^\| [0-9]" "$raw/${v}_1.md" | cut -d'|' -f2,3,5) \
                <(grep -E "^\| [0-9]" "$raw/${v}_2.md" | cut -d'|' -f5,9)
  done
} >> "$out/summary.md"
if [[ -n "$fi" ]]; then
  eval "$(bash "$fi/kit/setup-on-device.sh" "$fi")" > /dev/null
  timeout 300 python3 "$root/bench/fi_mla_bench.py" --heads 128 --batches 1,4,16 --lens 1024,8192,32768 \
    --backends fa3 --out "$raw/fi.md" > "$raw/fi.log" 2>&1
  { echo "## FlashInfer FA3 MLA"; grep -E "^\|" "$raw/fi.md"; tail -2 "$raw/fi.log"; } >> "$out/summary.md"
fi
tar czf "$out/raw.tgz" -C "$raw" .
cat "$out/summary.md"
