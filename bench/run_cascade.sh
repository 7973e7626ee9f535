#!/usr/bin/env bash
# pa.merge / pa.merge_states and pa.cascade on the GPU: checked against the
# float64 oracle and timed, beside FlashInfer's cascade in the same run.
#
#   bench/run_cascade.sh make OUT_DIR          # here: compile the bundles
#   bench/run_cascade.sh run STAGED OUT [FI]   # device: checks + benchmarks
#
# `make` compiles `--kernels all` bundles (decode, prefill, split-KV,
# merge, merge_states): f16 NHD joint GQA 4 and MHA (FlashInfer's cascade
# setting: Hq 32, D 128, P 16), bf16 HND split with pages of 5, and an e4m3
# cache with per-head scales. Stage them with
# `PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu OUT_DIR/*`; FI is the
# staged FlashInfer folder (.gpu-fi, ../shared/tools/flashinfer/README.md).
set -uo pipefail
what="${1:?usage: run_cascade.sh make|run ...}"
root="$(cd "$(dirname "$0")/.." && pwd)"
if [[ "$what" == make ]]; then
  set -e
  out="${2:?usage: run_cascade.sh make OUT_DIR}"
  pac="${PA_BUILD_DIR:-$root/build}/bin/pa-compile"
  export PATH="$PATH:/usr/local/cuda/bin"
  mkdir -p "$out"
  # name kv_heads group head_dim page_size dtype layout kv extra flags
  configs=(
    "casc_gqa4_d128_p16_f16_nhd_joint 8 4 128 16 f16 nhd joint"
    "casc_mha_d128_p16_f16_nhd_joint 32 1 128 16 f16 nhd joint"
    "casc_g4_d128_p5_bf16_hnd_split 4 4 128 5 bf16 hnd split"
    "casc_fp8_gqa4_d128_p16_e4m3_head 8 4 128 16 f16 nhd joint --kv-dtype e4m3 --kv-scale head"
  )
  for c in "${configs[@]}"; do
    read -r name hkv g d p dt lay kv flags <<<"$c"
    # shellcheck disable=SC2086
    "$pac" --kernels all --kv-heads "$hkv" --group "$g" --head-dim "$d" \
      --page-size "$p" --dtype "$dt" --layout "$lay" --kv "$kv" ${flags:-} \
      --chip sm_90a -o "$out/$name"
  done
  exit 0
fi
gpu="${2:?STAGED dir}"; out="${3:?OUT dir}"; fi="${4:-}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
export PATH="$PATH:/usr/local/cuda/bin"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
timeout 240 "$R" check-cascade "$B"/casc_* > "$out/check_cascade.log" 2>&1
grep -E "FAIL|FATAL|^PASS|^bundle|seed" "$out/check_cascade.log" | head -40
echo "memcheck: $(timeout 150 compute-sanitizer --tool memcheck --report-api-errors no "$R" check-cascade \
  "$B/casc_gqa4_d128_p16_f16_nhd_joint" 2>&1 | grep -E "ERROR SUMMARY|FAIL" | head -3 | tr '\n' ' ')"
echo "racecheck: $(timeout 150 compute-sanitizer --tool racecheck "$R" check-cascade \
  "$B/casc_mha_d128_p16_f16_nhd_joint" 2>&1 | grep -E "RACECHECK SUMMARY|FAIL" | head -3 | tr '\n' ' ')"
cases=1024:256:64,1024:256:256,8192:256:64,8192:256:256,32768:256:64,32768:256:256
for n in casc_gqa4_d128_p16_f16_nhd_joint casc_mha_d128_p16_f16_nhd_joint; do
  timeout 300 "$R" bench-cascade --cases "$cases" --out "$out/bench_$n.md" "$B/$n" > /dev/null 2>&1
  echo "== $n"; grep -E "copy:|^\| [0-9]|^\| merge" "$out/bench_$n.md"
done
if [[ -n "$fi" && -d "$fi" ]]; then
  eval "$(bash "$fi/kit/setup-on-device.sh" "$fi")"
  timeout 400 python3 "$fi/kit/fi_bench.py" cascade --cases "$cases" --kv-heads 8,32 \
    --backend fa2 --decode-paths cuda,tc --out "$out/fi_cascade.md" > "$out/fi_cascade.log" 2>&1
  echo "== FlashInfer cascade (fa2 levels)"; grep -E "^\| [0-9]" "$out/fi_cascade.md"
fi
