#!/usr/bin/env bash
# pa.append_kv_slots on the GPU (the cache write of a decode step, vLLM's
# reshape_and_cache): checked byte for byte and timed against the copy
# ceiling.
#
#   bench/run_append.sh make OUT_DIR        # here: compile the bundles
#   bench/run_append.sh run STAGED OUT      # device: check-append + bench
#
# `make` compiles decode bundles (pa-compile's default kernels, which
# include append_kv_slots): f16 NHD joint (GQA 4 and MHA), bf16 HND split,
# f32 D 64, e4m3 per-head and e5m2 per-tensor scales (quantize on write),
# page sizes 1 / 5 / 16. Stage them with
# `PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu OUT_DIR/*`.
set -uo pipefail
what="${1:?usage: run_append.sh make|run ...}"
root="$(cd "$(dirname "$0")/.." && pwd)"
if [[ "$what" == make ]]; then
  set -e
  out="${2:?usage: run_append.sh make OUT_DIR}"
  pac="${PA_BUILD_DIR:-$root/build}/bin/pa-compile"
  export PATH="$PATH:/usr/local/cuda/bin"
  mkdir -p "$out"
  # name kv_heads group head_dim page_size dtype layout kv extra flags
  configs=(
    "app_gqa4_d128_p16_f16_nhd_joint 8 4 128 16 f16 nhd joint"
    "app_mha_d128_p16_f16_nhd_joint 32 1 128 16 f16 nhd joint"
    "app_g4_d128_p5_bf16_hnd_split 4 4 128 5 bf16 hnd split"
    "app_g1_d64_p1_f32_nhd_joint 2 1 64 1 f32 nhd joint"
    "app_fp8_gqa4_d128_p16_e4m3_head 8 4 128 16 f16 nhd joint --kv-dtype e4m3 --kv-scale head"
    "app_fp8_g4_d96_p16_e5m2_tensor 2 4 96 16 bf16 hnd split --kv-dtype e5m2 --kv-scale tensor"
  )
  for c in "${configs[@]}"; do
    read -r name hkv g d p dt lay kv flags <<<"$c"
    # shellcheck disable=SC2086
    "$pac" --kv-heads "$hkv" --group "$g" --head-dim "$d" --page-size "$p" \
      --dtype "$dt" --layout "$lay" --kv "$kv" ${flags:-} --chip sm_90 \
      -o "$out/$name"
  done
  exit 0
fi
gpu="${2:?STAGED dir}"; out="${3:?OUT dir}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
export PATH="$PATH:/usr/local/cuda/bin"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
timeout 300 "$R" check-append "$B"/app_* 2>&1 | tee "$out/check_append.log" | grep -vE "PASS \(cache" | tail -30
grep -c "PASS (cache byte-exact)" "$out/check_append.log"
echo "memcheck: $(timeout 200 compute-sanitizer --tool memcheck --report-api-errors no "$R" check-append \
  "$B/app_gqa4_d128_p16_f16_nhd_joint" "$B/app_fp8_gqa4_d128_p16_e4m3_head" 2>&1 | grep -E "ERROR SUMMARY|FAIL" | head -3 | tr '\n' ' ')"
for n in app_gqa4_d128_p16_f16_nhd_joint app_mha_d128_p16_f16_nhd_joint app_fp8_gqa4_d128_p16_e4m3_head; do
  timeout 200 "$R" bench-append --rows 1024,4096,16384,65536 --out "$out/bench_$n.md" "$B/$n" > /dev/null 2>&1
  echo "== $n"; grep -E "copy:|^\| [0-9]" "$out/bench_$n.md"
done
