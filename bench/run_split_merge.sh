#!/usr/bin/env bash
# Split-KV decode in one launch (decode_split, split-kv-merge=fused) against
# the two-launch form (decode_partial + merge_segments, split-kv-merge=
# separate).
#
#   bench/run_split_merge.sh make OUT_DIR        # here: compile the bundles
#   bench/run_split_merge.sh check STAGED OUT    # device: check + sanitizers
#   bench/run_split_merge.sh bench STAGED OUT    # device: fused vs separate
#   bench/run_split_merge.sh sweep STAGED OUT    # device: small batches,
#                                                # alternated, forced chunks
#   bench/run_split_merge.sh ctas STAGED OUT     # device: planner budget
#
# `make` compiles (pa-compile, the tuned defaults) fused bundles over both
# decode kernels: GQA 4 f16 (tensor cores), MHA f16 (CUDA cores), GQA 4
# e4m3, a group of 7 in chunks of 4 heads (a partial last chunk: 3 heads),
# group 11 bf16 (chunks of 6 and 5), f32 head dim 64, head dim 96 on tensor
# cores; and sep_* twins of the two benchmark shapes with
# --split-kv-merge separate. Stage them with
# `PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu OUT_DIR/*`.
# `check` runs pa-gpu-runner check on each (split plans with forced chunks,
# empty requests, a CUDA graph replayed over 7 length sets: the counters
# must be back at 0 after every launch), racecheck and memcheck on the fused
# GQA-4 and MHA bundles. `bench` times fused and separate side by side
# (B 1/16/64 x L 512..32768, where the planner splits) and, with FI=1 and
# the FlashInfer kit staged in .gpu-fi, FlashInfer's decode on the same grid
# in the same call.
set -uo pipefail
what="${1:?usage: run_split_merge.sh make|check|bench ...}"
root="$(cd "$(dirname "$0")/.." && pwd)"
if [[ "$what" == make ]]; then
  set -e
  out="${2:?usage: run_split_merge.sh make OUT_DIR}"
  pac="${PA_BUILD_DIR:-$root/build}/bin/pa-compile"
  export PATH="$PATH:/usr/local/cuda/bin"
  mkdir -p "$out"
  # name kv_heads group head_dim page_size dtype extra flags
  configs=(
    "gqa4_d128_f16 8 4 128 16 f16"
    "mha_d128_f16 32 1 128 16 f16"
    "fp8_gqa4_d128_e4m3 8 4 128 16 f16 --kv-dtype e4m3 --kv-scale head"
    "cc_g7h4_d128_f16 4 7 128 16 f16 --decode-kernel cuda-core --heads-per-cta 4"
    "cc_g11_d128_bf16 2 11 128 5 bf16 --decode-kernel cuda-core"
    "cc_g4_d64_f32 4 4 64 16 f32"
    "tc_g4_d96_bf16 2 4 96 1 bf16 --decode-kernel tensor-core"
    "sep_gqa4_d128_f16 8 4 128 16 f16 --split-kv-merge separate"
    "sep_mha_d128_f16 32 1 128 16 f16 --split-kv-merge separate"
  )
  for c in "${configs[@]}"; do
    read -r name hkv g d p dt flags <<<"$c"
    # shellcheck disable=SC2086
    "$pac" --kv-heads "$hkv" --group "$g" --head-dim "$d" --page-size "$p" \
      --dtype "$dt" ${flags:-} --chip sm_90 -o "$out/$name"
  done
  exit 0
fi
gpu="${2:?STAGED dir}"; out="${3:?OUT dir}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
export PATH="$PATH:/usr/local/cuda/bin"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
if [[ "$what" == check ]]; then
  for d in "$B"/*; do
    [[ -d "$d" ]] || continue
    n="$(basename "$d")"
    r="$(timeout 120 "$R" check "$d" 2>&1 | tee "$out/check_$n.log" | tail -1)"
    echo "check $n: ${r:0:200}"
    grep -E "graph step|split 1" "$out/check_$n.log" | head -3
  done
  grep -h "FAIL" "$out"/check_*.log 2>/dev/null | head -20
  for n in gqa4_d128_f16 mha_d128_f16; do
    for tool in racecheck memcheck; do
      echo "$tool $n: $(timeout 200 compute-sanitizer --tool "$tool" --report-api-errors no "$R" check --quick \
        "$B/$n" 2>&1 | grep -E "SUMMARY|FAIL|ERROR" | head -3 | tr '\n' ' ')"
    done
  done
  exit 0
fi
if [[ "$what" == sweep ]]; then
  # Fused and separate alternated three times (B 1 and 16), then forced
  # chunks of 64..2048 tokens at B = 1.
  for rep in 1 2 3; do
    for n in gqa4_d128_f16 sep_gqa4_d128_f16; do
      timeout 120 "$R" bench --batches 1,16 --lens 512,2048,8192 \
        --out "$out/s.md" "$B/$n" > /dev/null 2>&1
      echo "== $n rep $rep"; grep -E "^\| (1|16) \|" "$out/s.md" | cut -d'|' -f2,3,5,7
    done
  done
  for chunk in 64 128 256 512 1024 2048; do
    for n in gqa4_d128_f16 sep_gqa4_d128_f16 mha_d128_f16 sep_mha_d128_f16; do
      timeout 120 "$R" bench --batches 1 --lens 2048,8192,32768 --force-chunk "$chunk" \
        --out "$out/s.md" "$B/$n" > /dev/null 2>&1
      echo "== $n chunk $chunk"; grep -E "^\| 1 \|" "$out/s.md" | cut -d'|' -f2,3,5,7
    done
  done
  exit 0
fi
if [[ "$what" == ctas ]]; then
  # The planner's CTA-slot budget: the occupancy (default) against 1 CTA
  # per SM, on the grid where it splits.
  for n in ${CTAS_BUNDLES:-gqa4_d128_f16 mha_d128_f16}; do
    for c in default 1; do
      flag=(); [[ "$c" == default ]] || flag=(--ctas-per-sm "$c")
      timeout 120 "$R" bench --batches 1,16,64 --lens 512,2048,8192,32768 \
        --max-kv-gib 9 "${flag[@]}" --out "$out/c.md" "$B/$n" > /dev/null 2>&1
      echo "== $n ctas-per-sm $c"; grep -E "^\| [0-9]+ \|" "$out/c.md" | cut -d'|' -f2,3,5,7
    done
  done
  exit 0
fi
grid=(--batches 1,16,64 --lens 512,2048,8192,32768 --max-kv-gib 9)
bench() { # NAME
  local name="$1"
  [[ -d "$B/$name" ]] || return 0
  timeout 240 "$R" bench "${grid[@]}" --out "$out/bench_$name.md" "$B/$name" > /dev/null 2>&1
  echo "== $name"; grep -E "^\|" "$out/bench_$name.md" | cut -d'|' -f2-5,7,10 | tail -n +3
}
for n in gqa4_d128_f16 sep_gqa4_d128_f16 mha_d128_f16 sep_mha_d128_f16 \
         gqa4_d128_f16 sep_gqa4_d128_f16; do
  bench "$n"
done
if [[ "${FI:-0}" == 1 && -d .gpu-fi ]]; then
  eval "$(bash .gpu-fi/kit/setup-on-device.sh .gpu-fi)" > /dev/null
  timeout 200 python3 .gpu-fi/kit/fi_bench.py decode --batches 1,16,64 \
    --lens 512,2048,8192,32768 --kv-heads 8,32 --paths cuda,tc --max-kv-gib 9 \
    --out "$out/fi_decode_f16.md" > /dev/null 2>&1
  echo "== FlashInfer f16 decode"; cat "$out/fi_decode_f16.md" 2>/dev/null
fi
