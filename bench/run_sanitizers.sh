#!/usr/bin/env bash
# compute-sanitizer over the check runs of every GPU kernel kind (issue 13):
# decode (tensor-core GQA, CUDA-core MHA, fp8, split-KV in one launch),
# prefill (causal; split-KV), the cache writes (append_kv_slots, append_kv,
# scatter_kv), merge / merge_states, the cascade, the CacheBlend ops
# (kv_deviation, select_topk, pack_mask), plan_split_kv and MLA decode.
#
#   bench/run_sanitizers.sh make OUT_DIR            # here: the bundles
#   bench/run_sanitizers.sh run STAGED OUT [TOOLS]  # device
#
# TOOLS: a comma list of memcheck, racecheck, synccheck, initcheck (all by
# default). Each check run's summary line is printed; the script exits 1
# if any run reports an error or fails its checks. memcheck runs with
# --report-api-errors no: the runtime probes cuFuncGetParamInfo at bundle
# load, which fails by design past the last parameter.
set -uo pipefail
what="${1:?usage: run_sanitizers.sh make|run ...}"
root="$(cd "$(dirname "$0")/.." && pwd)"
if [[ "$what" == make ]]; then
  set -e
  out="${2:?usage: run_sanitizers.sh make OUT_DIR}"
  pac="${PA_BUILD_DIR:-$root/build}/bin/pa-compile"
  export PATH="$PATH:/usr/local/cuda/bin"
  mkdir -p "$out"
  common=(--head-dim 128 --page-size 16 --layout nhd --kv joint --chip sm_90)
  "$pac" "${common[@]}" --kv-heads 8 --group 4 --dtype f16 -o "$out/san_dec_gqa4"
  "$pac" "${common[@]}" --kv-heads 32 --group 1 --dtype f16 -o "$out/san_dec_mha"
  "$pac" "${common[@]}" --kv-heads 8 --group 4 --dtype bf16 --kv-dtype e4m3 \
    --kv-scale head -o "$out/san_dec_fp8"
  "$pac" "${common[@]}" --kv-heads 8 --group 4 --dtype f16 --kernels prefill \
    --causal -o "$out/san_pre_causal"
  "$pac" "${common[@]}" --kv-heads 8 --group 4 --dtype f16 --kernels all \
    -o "$out/san_all"
  "$pac" --kernels mla --head-dim 512 --kpe 64 --mla-heads 40 --page-size 16 \
    --dtype bf16 --sm-scale 0.0721687836 --chip sm_90 -o "$out/san_mla"
  exit 0
fi
gpu="${2:?STAGED dir}"; out="${3:?OUT dir}"; tools="${4:-memcheck,racecheck,synccheck,initcheck}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
export PATH="$PATH:/usr/local/cuda/bin"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
compute-sanitizer --version | tail -1
runs=(
  "check --quick --seed 5 $B/san_dec_gqa4 $B/san_dec_mha $B/san_dec_fp8"
  "check-prefill --quick --seeds 1 --seed 5 $B/san_pre_causal"
  "check-append --seed 5 $B/san_dec_gqa4 $B/san_all"
  "check-cascade --seed 5 $B/san_all"
  "check-cacheblend --seed 5 $B/san_all"
  "check-mla --seed 5 $B/san_mla"
)
status=0
IFS=',' read -r -a toolList <<<"$tools"
for tool in "${toolList[@]}"; do
  extra=()
  [[ "$tool" == memcheck ]] && extra=(--report-api-errors no)
  for r in "${runs[@]}"; do
    name="${r%% *}"
    log="$out/${tool}_${name}.log"
    # shellcheck disable=SC2086
    timeout 200 compute-sanitizer --tool "$tool" "${extra[@]}" "$R" $r > "$log" 2>&1
    rc=$?
    summary="$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log" | tail -1)"
    verdict="$(grep -E "all bundles PASS|FAIL|PASS" "$log" | tail -1)"
    echo "$tool $name: rc $rc | ${summary:-no summary} | ${verdict:-no verdict}"
    if [[ $rc -ne 0 ]] || ! grep -qE "ERROR SUMMARY: 0 errors|RACECHECK SUMMARY: 0 hazards" "$log"; then
      status=1
    fi
  done
done
exit $status
