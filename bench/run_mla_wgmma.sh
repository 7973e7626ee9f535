#!/usr/bin/env bash
# The MLA decode on Hopper warpgroup MMAs (--mla-mma wgmma; auto's choice
# from 64 heads on sm_90a) beside the mma.sync kernel and FlashInfer's
# BatchMLAPagedAttentionWrapper (FA2, FA3), in one device call.
#
#   bench/run_mla_wgmma.sh make OUT_DIR           # here: compile the bundles
#   bench/run_mla_wgmma.sh run STAGED OUT [FI]    # device: checks, sanitizers,
#                                                 # timings (FI: .gpu-fi)
#
# `make` compiles for sm_90a: DeepSeek-V3's shape (128 heads, ckv 512 + kpe
# 64, bf16, pages of 64) with auto (mla_decode on wgmma and
# mla_decode_small on mma.sync, the runtime's choice), on wgmma alone and
# on mma.sync alone; wgmma at 64 heads
# (f16, pages of 16, soft-cap, base-2 lse), 40 heads (a partial head block,
# f16, pages of 5), 128 heads with pages of 1; 16 heads (auto: mma.sync).
# Stage with `PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu OUT_DIR/*`.
set -uo pipefail
what="${1:?usage: run_mla_wgmma.sh make|run ...}"
root="$(cd "$(dirname "$0")/.." && pwd)"
scale=0.0721687836
if [[ "$what" == make ]]; then
  set -e
  out="${2:?usage: run_mla_wgmma.sh make OUT_DIR}"
  pac="${PA_BUILD_DIR:-$root/build}/bin/pa-compile"
  export PATH="$PATH:/usr/local/cuda/bin"
  mkdir -p "$out"
  # name heads page_size dtype extra flags
  configs=(
    "mla_h128_p64_bf16_auto 128 64 bf16"
    "mla_h128_p64_bf16_wg 128 64 bf16 --mla-mma wgmma"
    "mla_h128_p64_bf16_sync 128 64 bf16 --mla-mma mma.sync"
    "mla_h64_p16_f16_wg_cap 64 16 f16 --mla-mma wgmma --logits-soft-cap 30 --lse-base2"
    "mla_h40_p5_f16_wg 40 5 f16 --mla-mma wgmma"
    "mla_h40_p5_f16_wg_csync 40 5 f16 --mla-mma wgmma --mla-consumer-sync"
    "mla_h128_p1_bf16_wg 128 1 bf16"
    "mla_h16_p64_bf16 16 64 bf16"
  )
  for c in "${configs[@]}"; do
    read -r name h p dt flags <<<"$c"
    # shellcheck disable=SC2086
    "$pac" --kernels mla --head-dim 512 --kpe 64 --mla-heads "$h" \
      --page-size "$p" --dtype "$dt" --sm-scale "$scale" ${flags:-} \
      --chip sm_90a -o "$out/$name"
  done
  exit 0
fi
gpu="${2:?STAGED dir}"; out="${3:?OUT dir}"; fi="${4:-}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
export PATH="$PATH:/usr/local/cuda/bin"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
timeout 300 "$R" check-mla --seed 11 "$B"/mla_* 2>&1 | tee "$out/check_mla.log" | grep -E "FAIL|rejected|^bundle|seed" | tail -40
echo "PASS lines: $(grep -c ": PASS" "$out/check_mla.log"), FAIL lines: $(grep -c "FAIL" "$out/check_mla.log")"
# racecheck on the --mla-consumer-sync build (docs/GPU.md, "MLA decode on
# wgmma": racecheck reports hazards after the kernel's bar.arrive hand-offs).
[[ "${PA_MLA_SANITIZE:-1}" == 1 ]] && for tool in memcheck racecheck; do
  h40="$B/mla_h40_p5_f16_wg"; [[ $tool == racecheck ]] && h40="${h40}_csync"
  echo "$tool: $(timeout 240 compute-sanitizer --tool $tool --report-api-errors no "$R" check-mla --seed 3 \
    "$h40" "$B/mla_h64_p16_f16_wg_cap" 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|FAIL" | head -3 | tr '\n' ' ')"
done
for n in ${PA_MLA_BENCH:-mla_h128_p64_bf16_auto mla_h128_p64_bf16_wg mla_h128_p64_bf16_sync}; do
  timeout 200 "$R" bench-mla --batches 1,16,64,128 --lengths 1024,4096,8192 \
    --out "$out/ours_$n.md" "$B/$n" > /dev/null 2>&1
  cat "$out/ours_$n.md"
done
if [[ -n "$fi" ]]; then
  eval "$(bash "$fi/kit/setup-on-device.sh" "$fi")"
  timeout 400 python3 "$root/bench/fi_mla_bench.py" --heads 128 \
    --batches 1,16,64,128 --lens 1024,4096,8192 --backends fa2,fa3 \
    --out "$out/fi_h128.md" > "$out/fi_h128.log" 2>&1
  cat "$out/fi_h128.md"
  tail -3 "$out/fi_h128.log"
fi
# PA_MLA_SWEEP=1: forced split counts against the automatic one at few
# requests (the planner's mlaSplits), for the wgmma and mma.sync kernels.
if [[ "${PA_MLA_SWEEP:-0}" == 1 ]]; then
  for n in mla_h128_p64_bf16_wg mla_h128_p64_bf16_sync mla_h16_p64_bf16; do
    for s in 0 4 8 16 32; do
      timeout 120 "$R" bench-mla --batches 1,4,16 --lengths 1024,8192,32768 --splits "$s" \
        --out "$out/sweep_${n}_$s.md" "$B/$n" > /dev/null 2>&1
      grep -E "^\| [0-9]" "$out/sweep_${n}_$s.md" | awk -F'|' -v n="$n" -v s="$s" \
        '{printf "| %s | %s | %s | %s | %s |\n", n, s, $2, $3, $5}'
    done
  done | tee "$out/sweep.md"
fi
