#!/usr/bin/env bash
# compute-sanitizer memcheck and racecheck of the default GQA 4 (tensor-core)
# and MHA (CUDA-core) decode bundles, split decodes and both merges
# included (`check --quick`), the four runs side by side (each is bound by
# the host's instrumentation, not the GPU) with a longer cut than
# pa_sanitize's: the MHA racecheck ran past 200 s before (issue 9).
#
#   bench/run_decode_sanitize.sh prep DIR    # here
#   PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu DIR/*
#   bench/run_decode_sanitize.sh run build/gpu OUT [TIMEOUT]   # device
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
mode="${1:?usage: run_decode_sanitize.sh prep DIR | run STAGED OUT [TIMEOUT]}"
if [[ "$mode" == prep ]]; then
  set -e
  dir="${2:?DIR}"; pac="${PA_BUILD_DIR:-$root/build}/bin/pa-compile"
  c=(--head-dim 128 --page-size 16 --dtype f16 --kv joint --chip sm_90a --layout nhd)
  "$pac" "${c[@]}" --kv-heads 8 --group 4 -o "$dir/san_gqa4"
  "$pac" "${c[@]}" --kv-heads 32 --group 1 -o "$dir/san_mha"
  exit 0
fi
gpu="${2:?STAGED}"; out="${3:?OUT}"; t="${4:-540}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
export PATH="$PATH:/usr/local/cuda/bin"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > "$out/sanitize.md"
for d in san_gqa4 san_mha; do
  for tool in memcheck racecheck; do
    ( s=$(date +%s)
      timeout "$t" compute-sanitizer --tool $tool --report-api-errors no "$R" check --quick "$B/$d" \
        > "$out/${tool}_$d.log" 2>&1
      echo "rc=$? secs=$(( $(date +%s) - s ))" >> "$out/${tool}_$d.log" ) &
  done
done
wait
for f in "$out"/*check_san_*.log; do
  echo "$(basename "$f" .log): $(grep -E "SUMMARY|all bundles|FAIL|^rc=" "$f" | sort -u | tr '\n' ' ')"
done >> "$out/sanitize.md"
cat "$out/sanitize.md"
