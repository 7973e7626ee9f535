#!/usr/bin/env bash
# Issue 13, caches of more than 2^31 elements: decode, prefill and append
# checked against the float64 reference over a device page pool of more
# than 4 Gi elements per cache tensor (pa-gpu-runner --pool-elements,
# docs/Runtime.md "Large page pools"). Each case's pages are placed at the
# pool's top end, around elements 2^31 and 2^32 (and bytes 2^31 / 2^32),
# at its start and at random over it; the rest of the pool is poisoned; the
# host reference holds only the case's pages. Run on the device machine
# after staging (carry build/gpu):
#
#   bench/run_large_cache.sh make DIR                 # here: the bundles
#   PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu DIR/*
#   bench/run_large_cache.sh build/gpu $OUT           # on the device
#
# Runs, for each of those bundles that is staged: `check` (decode; joint NHD
# and split HND), `check-prefill` (joint NHD causal and split HND causal)
# and `check-append` (pa_append_kv_slots, pa_append_kv, pa_scatter_kv on the
# decode bundles), each with --pool-elements $PA_POOL_ELEMENTS (default 5G
# = 5 x 2^30 elements: 10 GiB per f16/bf16 tensor, 20 GiB for a split
# cache), a fixed seed (PA_SEED, default 13), and prints its elapsed time
# and verdict. Full outputs go to OUT/<name>.log, the summary to
# OUT/large_cache.log. Exit status 0 if every run passed. PA_PARTS="decode
# prefill append" (the default: all) picks the parts, so that the runs can
# be split over device calls of at most 10 minutes (each run is cut off
# after 240 s, 240 s and 120 s).
set -uo pipefail
if [[ "${1:-}" == make ]]; then
  # The bundles: decode with every kernel (--kernels all: append_kv_slots,
  # append_kv, scatter_kv for check-append) on the tensor-core decode (GQA
  # 4, joint NHD f16; GQA 4, split HND bf16, P 64), the CUDA-core decode
  # (MHA) and an fp8 cache; causal prefill (GQA 4 joint NHD; MHA split HND,
  # P 1; fp8).
  set -e
  o="${2:?usage: run_large_cache.sh make DIR}"
  root="$(cd "$(dirname "$0")/.." && pwd)"
  pac="${PA_BUILD_DIR:-$root/build}/bin/pa-compile"
  export PATH="$PATH:/usr/local/cuda/bin"
  c() { "$pac" --chip sm_90 "$@" | tail -1; }
  c --kernels all --kv-heads 8 --group 4 --head-dim 128 --page-size 16 --dtype f16 --layout nhd --kv joint -o "$o/gqa4_d128_p16_f16_nhd_joint"
  c --kernels all --kv-heads 4 --group 4 --head-dim 64 --page-size 64 --dtype bf16 --layout hnd --kv split -o "$o/g4_d64_p64_bf16_hnd_split"
  c --kernels all --kv-heads 32 --group 1 --head-dim 128 --page-size 16 --dtype f16 --layout nhd --kv joint --decode-kernel cuda-core -o "$o/cc_mha_d128_p16_f16_nhd_joint"
  c --kv-heads 8 --group 4 --head-dim 128 --page-size 16 --dtype f16 --layout nhd --kv joint --kv-dtype e4m3 --kv-scale tensor -o "$o/fp8_gqa4_d128_p16_f16_nhd_joint_e4m3"
  c --kernels prefill --kv-heads 8 --group 4 --head-dim 128 --page-size 16 --dtype f16 --layout nhd --kv joint --causal -o "$o/prefill_gqa4_d128_p16_f16_nhd_joint_causal"
  c --kernels prefill --kv-heads 4 --group 1 --head-dim 64 --page-size 1 --dtype f16 --layout hnd --kv split --causal -o "$o/prefill_g1_d64_p1_f16_hnd_split_causal"
  c --kernels prefill --kv-heads 8 --group 4 --head-dim 128 --page-size 16 --dtype f16 --layout nhd --kv joint --kv-dtype e4m3 --kv-scale tensor --causal -o "$o/prefill_fp8_gqa4_d128_p16_f16_nhd_joint_causal_e4m3"
  exit 0
fi
gpu="${1:?usage: run_large_cache.sh make DIR | STAGED_DIR OUT}"; out="${2:?}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
pool="${PA_POOL_ELEMENTS:-5G}"; seed="${PA_SEED:-13}"
parts=" ${PA_PARTS:-decode prefill append} "
part() { [[ "$parts" == *" $1 "* ]]; }
mkdir -p "$out"
summary="$out/large_cache.log"
status=0

# run NAME TIMEOUT_S ARGS...: one runner call, timed; the verdict is the
# runner's last line, plus how many cases had pages past element 2^32.
run() {
  local name="$1" limit="$2"; shift 2
  local t0 t1 rc
  t0=$(date +%s.%N)
  timeout "$limit" "$R" "$@" >"$out/$name.log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  local past32 cases
  cases=$(grep -c " pool: " "$out/$name.log")
  past32=$(grep -cE " pool: .* [1-9][0-9]* past 2\^32" "$out/$name.log")
  printf '%-58s rc %-3d %7.1f s  %s/%s cases past 2^32  %s\n' "$name" "$rc" \
    "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" "$past32" "$cases" \
    "$(tail -1 "$out/$name.log")"
  [[ $rc == 0 ]] || { status=1; grep -E "FAIL|FATAL|error" "$out/$name.log" | head -8; }
}

{
  nvidia-smi --query-gpu=name,driver_version,memory.total,memory.free \
    --format=csv,noheader
  date -u
  echo "pool: --pool-elements $pool per cache tensor, seed $seed"
  found=0
  part decode && for d in gqa4_d128_p16_f16_nhd_joint g4_d64_p64_bf16_hnd_split \
      cc_mha_d128_p16_f16_nhd_joint fp8_gqa4_d128_p16_f16_nhd_joint_e4m3; do
    [[ -d "$B/$d" ]] || { echo "not staged: $d"; continue; }
    found=1
    run "check_$d" 240 check --quick --seed "$seed" --pool-elements "$pool" "$B/$d"
  done
  part prefill && for d in prefill_gqa4_d128_p16_f16_nhd_joint_causal prefill_g1_d64_p1_f16_hnd_split_causal \
      prefill_fp8_gqa4_d128_p16_f16_nhd_joint_causal_e4m3; do
    [[ -d "$B/$d" ]] || { echo "not staged: $d"; continue; }
    found=1
    run "check-prefill_$d" 240 check-prefill --quick --seeds 2 --seed "$seed" \
      --pool-elements "$pool" "$B/$d"
  done
  # check-append needs an append_kv_slots kernel: pa-compile's decode
  # bundles have it (and append_kv / scatter_kv with --kernels all).
  part append && for d in gqa4_d128_p16_f16_nhd_joint g4_d64_p64_bf16_hnd_split; do
    [[ -d "$B/$d" ]] || { echo "not staged: $d"; continue; }
    found=1
    run "check-append_$d" 120 check-append --seed "$seed" --pool-elements "$pool" "$B/$d"
  done
  [[ $found == 1 ]] || { echo "no bundle staged under $B"; status=1; }
  echo "large-cache checks: $([[ $status == 0 ]] && echo PASS || echo FAIL)"
  exit "$status"
} 2>&1 | tee "$summary"
exit "${PIPESTATUS[0]}"
