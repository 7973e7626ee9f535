#!/usr/bin/env bash
# MLA decode (pa.mla_decode) on the GPU: checked against the float64
# reference, sanitized, and timed against the read roof.
#
#   bench/run_mla.sh make OUT_DIR        # here: compile the MLA bundles
#   bench/run_mla.sh run STAGED OUT      # device: check-mla, sanitizers, bench-mla
#
# `make` compiles --kernels mla bundles: DeepSeek-V3's shape (128 heads,
# ckv 512 + kpe 64, bf16, pages of 64) with 2 and 1 row blocks per CTA, 16
# heads (bf16, pages of 64; f16, pages of 1 with a soft-cap and base-2 lse),
# and 40 heads (a partial row block) with pages of 5; the 128- and 40-head
# ones also with two m16 blocks per warp (--mla-warp-blocks 2). Stage them with
# `PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu OUT_DIR/*`.
set -uo pipefail
what="${1:?usage: run_mla.sh make|run ...}"
root="$(cd "$(dirname "$0")/.." && pwd)"
scale=0.0721687836
if [[ "$what" == make ]]; then
  set -e
  out="${2:?usage: run_mla.sh make OUT_DIR}"
  pac="${PA_BUILD_DIR:-$root/build}/bin/pa-compile"
  export PATH="$PATH:/usr/local/cuda/bin"
  mkdir -p "$out"
  # name heads page_size dtype extra flags
  configs=(
    "mla_h128_p64_bf16 128 64 bf16"
    "mla_h128_p64_bf16_rb1 128 64 bf16 --mla-row-blocks 1"
    "mla_h128_p64_bf16_wb2 128 64 bf16 --mla-warp-blocks 2"
    "mla_h40_p5_f16_wb2 40 5 f16 --mla-warp-blocks 2"
    "mla_h16_p64_bf16 16 64 bf16"
    "mla_h16_p1_f16_cap 16 1 f16 --logits-soft-cap 30 --lse-base2"
    "mla_h40_p5_f16 40 5 f16"
  )
  for c in "${configs[@]}"; do
    read -r name h p dt flags <<<"$c"
    # shellcheck disable=SC2086
    "$pac" --kernels mla --head-dim 512 --kpe 64 --mla-heads "$h" \
      --page-size "$p" --dtype "$dt" --sm-scale "$scale" ${flags:-} \
      --chip sm_90 -o "$out/$name"
  done
  exit 0
fi
gpu="${2:?STAGED dir}"; out="${3:?OUT dir}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
export PATH="$PATH:/usr/local/cuda/bin"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
timeout 300 "$R" check-mla --seed 11 "$B"/mla_* 2>&1 | tee "$out/check_mla.log" | grep -E "FAIL|rejected|^bundle|seed|    " | tail -40
echo "PASS lines: $(grep -c ": PASS" "$out/check_mla.log")"
for tool in memcheck racecheck; do
  echo "$tool: $(timeout 240 compute-sanitizer --tool $tool --report-api-errors no "$R" check-mla --seed 3 \
    "$B/mla_h16_p64_bf16" "$B/mla_h40_p5_f16" "$B/mla_h40_p5_f16_wb2" 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|FAIL" | head -3 | tr '\n' ' ')"
done
for n in mla_h128_p64_bf16 mla_h16_p64_bf16; do
  for splits in 0 1; do
    timeout 200 "$R" bench-mla --batches 1,16,64,128 --lengths 1024,4096,8192 \
      --splits "$splits" --out "$out/bench_${n}_splits$splits.md" "$B/$n" > /dev/null 2>&1
    cat "$out/bench_${n}_splits$splits.md"
  done
done
