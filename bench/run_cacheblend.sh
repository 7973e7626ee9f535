#!/usr/bin/env bash
# The page-table cache writes (pa.append_kv, pa.scatter_kv) and the
# CacheBlend ops (pa.kv_deviation, pa.select_topk) on the GPU: checked
# against the oracle (byte for byte / exactly) and timed, and one CacheBlend
# layer against a full prefill.
#
#   bench/run_cacheblend.sh make OUT_DIR        # here: compile the bundles
#   bench/run_cacheblend.sh run STAGED OUT      # device
#
# `make` compiles bench/run_cascade.sh's `--kernels all` bundles (f16 GQA 4
# and MHA, bf16 HND split P 5, e4m3 per-head scales) and the layer's bundle
# (f16 GQA 4, `--kernels all --causal --positions`) and a plain causal
# prefill bundle for the full prefill it is compared with. Stage them with
# `PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu OUT_DIR/*`.
set -uo pipefail
what="${1:?usage: run_cacheblend.sh make|run ...}"
root="$(cd "$(dirname "$0")/.." && pwd)"
if [[ "$what" == make ]]; then
  set -e
  out="${2:?usage: run_cacheblend.sh make OUT_DIR}"
  "$root/bench/run_cascade.sh" make "$out"
  export PATH="$PATH:/usr/local/cuda/bin"
  "${PA_BUILD_DIR:-$root/build}/bin/pa-compile" --kernels all --causal \
    --positions --kv-heads 8 --group 4 --head-dim 128 --page-size 16 \
    --dtype f16 --layout nhd --kv joint --chip sm_90a -o "$out/blend_gqa4_d128_p16_f16"
  "${PA_BUILD_DIR:-$root/build}/bin/pa-compile" --kernels prefill --causal \
    --kv-heads 8 --group 4 --head-dim 128 --page-size 16 \
    --dtype f16 --layout nhd --kv joint --chip sm_90a -o "$out/prefill_gqa4_d128_p16_f16_causal"
  exit 0
fi
gpu="${2:?STAGED dir}"; out="${3:?OUT dir}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
export PATH="$PATH:/usr/local/cuda/bin"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
timeout 200 "$R" check-append "$B"/casc_* "$B"/blend_* > "$out/check_append.log" 2>&1
grep -E "FAIL|FATAL|seed|bundle" "$out/check_append.log" | head -20
echo "append pass lines: $(grep -c "PASS" "$out/check_append.log")"
timeout 200 "$R" check-cacheblend "$B"/casc_* "$B"/blend_* > "$out/check_cacheblend.log" 2>&1
grep -E "FAIL|FATAL|seed|bundle" "$out/check_cacheblend.log" | head -20
echo "cacheblend pass lines: $(grep -c "PASS" "$out/check_cacheblend.log")"
timeout 240 "$R" check-cascade "$B"/casc_* > "$out/check_cascade.log" 2>&1
grep -E "FAIL|FATAL|^PASS" "$out/check_cascade.log" | head -10
echo "memcheck: $(timeout 150 compute-sanitizer --tool memcheck --report-api-errors no "$R" check-append \
  "$B/casc_gqa4_d128_p16_f16_nhd_joint" 2>&1 | grep -E "ERROR SUMMARY|FAIL" | head -3 | tr '\n' ' ')"
echo "memcheck: $(timeout 150 compute-sanitizer --tool memcheck --report-api-errors no "$R" check-cacheblend \
  "$B/casc_gqa4_d128_p16_f16_nhd_joint" 2>&1 | grep -E "ERROR SUMMARY|FAIL" | head -3 | tr '\n' ' ')"
echo "racecheck: $(timeout 150 compute-sanitizer --tool racecheck "$R" check-cacheblend \
  "$B/casc_gqa4_d128_p16_f16_nhd_joint" 2>&1 | grep -E "RACECHECK SUMMARY|FAIL" | head -3 | tr '\n' ' ')"
for n in casc_gqa4_d128_p16_f16_nhd_joint casc_mha_d128_p16_f16_nhd_joint; do
  timeout 200 "$R" bench-append --rows 4096,65536 --out "$out/bench_append_$n.md" "$B/$n" > /dev/null 2>&1
  echo "== $n"; grep -E "copy:|^\| [0-9]" "$out/bench_append_$n.md"
done
timeout 200 "$R" bench-cacheblend --out "$out/bench_cacheblend.md" \
  --full-bundle "$B/prefill_gqa4_d128_p16_f16_causal" "$B/blend_gqa4_d128_p16_f16" > /dev/null 2>&1
grep -E "recomputed|^\|" "$out/bench_cacheblend.md"
timeout 200 "$R" bench-cacheblend --out "$out/bench_cacheblend_same.md" "$B/blend_gqa4_d128_p16_f16" > /dev/null 2>&1
grep -E "full causal" "$out/bench_cacheblend_same.md"
