#!/usr/bin/env bash
# The decode's split-KV merges with a step of rows' loads issued together
# (issue 9; SplitKVMerge.cpp: forRowSteps / foldRows in emitMergeRows, the
# last CTA's merge, 8 rows a step, and emitMergeShare, each lane's rows 2 a
# step) against the previous compiler's, in one device call: new / old
# bundles (run_l2_flush.sh's lf_*) at B 1 / 16 x L 512 - 32768, two rounds
# interleaved, clean eviction (run_merge_together_decode.sh oldnew);
# FlashInfer's decode with the same eviction; check --quick of every bundle
# (both merges; check-mla for mla_*); memcheck / racecheck of the GQA 4 and
# MHA split decodes; python/tests/test_cuda.py.
#
#   PA_OLD_BUILD=<old build> bench/run_merge_together_decode.sh prep DIR   # here
#   (plus MLA bundles: bench/run_mla_together.sh make DIR build/bin/pa-compile)
#   PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu DIR/*
#   bench/run_decode_merge_loads.sh build/gpu OUT FI    # device; carry
#     build/gpu, .gpu-fi, build/pybundles, build/lib/Runtime/libpa_runtime.so,
#     build/lib/Runtime/libpa_pool.so
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/device_lib.sh"
gpu="${1:?STAGED}"; out="${2:?OUT}"; fi="${3:-}"
R="$gpu/bin/pa-gpu-runner"; B="$gpu/bundles"
export PATH="$PATH:/usr/local/cuda/bin"
batches="${PA_BATCHES:-1,16}"; lens="${PA_LENS:-512,2048,8192,32768}"
mkdir -p "$out/oldnew"
PA_BATCHES="$batches" PA_LENS="$lens" PA_VARIANTS="${PA_VARIANTS:-lf_gqa4 lf_g8 lf_mha}" \
  bash "$root/bench/run_merge_together_decode.sh" oldnew "$gpu" "$out/oldnew" > /dev/null 2>&1
cat "$out/oldnew/summary.md" > "$out/summary.md"
if [[ -n "$fi" ]]; then
  eval "$(bash "$fi/kit/setup-on-device.sh" "$fi")" > /dev/null
  timeout 200 python3 "$root/bench/fi_bench_flush.py" --l2-flush clean decode --batches "$batches" \
    --lens "$lens" --kv-heads 8,4 --paths tc --max-kv-gib 9 --out "$out/fi_gqa.md" > "$out/fi_gqa.log" 2>&1
  timeout 200 python3 "$root/bench/fi_bench_flush.py" --l2-flush clean decode --batches "$batches" \
    --lens "$lens" --kv-heads 32 --paths cuda,tc --max-kv-gib 9 --out "$out/fi_mha.md" > "$out/fi_mha.log" 2>&1
  { echo "## FlashInfer, clean eviction"; grep -hE "^\| [0-9]" "$out"/fi_gqa.md "$out"/fi_mha.md; } >> "$out/summary.md"
fi
{
  echo "## checks"
  pa_check_bundles "$R" "$B"/lf_* "$B"/g[0-9]* "$B"/cc_* "$B"/mha_* "$B"/gqa4_* "$B"/fp8_gqa4_* \
    "$B"/mla_h128_p64_bf16_auto "$B"/mla_h40_p5_f16_wg
  for d in lf_gqa4 lf_mha; do PA_SANITIZE_TIMEOUT=200 pa_sanitize "$R" check "$B/$d"; done
  pa_test_cuda 240 14
} >> "$out/summary.md" 2>&1
# At most 8 files come back from the device: the raw outputs as one.
(cd "$out" && tar czf raw.tgz oldnew fi_* 2>/dev/null && rm -rf oldnew fi_*)
cat "$out/summary.md"
