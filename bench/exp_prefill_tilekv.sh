#!/usr/bin/env bash
# Prefill kernel variants (docs/PERFORMANCE.md, issue 8): bench-prefill on
# --kernels prefill bundles compiled several ways, beside FlashInfer's FA2
# prefill in the same call.
#
#   bench/exp_prefill_tilekv.sh make OUT_DIR   # here: the variants x GQA 4, MHA
#   bench/exp_prefill_tilekv.sh run STAGED OUT # device (after bench/stage_gpu.sh;
#                                              # carry .gpu-fi for FlashInfer)
#
# def: pa-compile's defaults (prefill = 8 warps x 32 rows, 32-key tiles, and
# prefill_short = 4 warps, the planner's choice: --kernel auto); t0: the
# same with --rescale-threshold 0 (rescale whenever a row's maximum grows);
# w8kv64 / w4kv64: one kernel of 8 / 4 warps x 32 rows with 64-key tiles.
# PA_VARIANTS="name:flags ..." (flags joined by commas) replaces the list.
set -uo pipefail
what="${1:?usage: exp_prefill_tilekv.sh make|run ...}"
root="$(cd "$(dirname "$0")/.." && pwd)"
variants=("def:" "t0:--rescale-threshold 0"
          "w8kv64:--prefill-variants one --prefill-tile-kv 64"
          "w4kv64:--prefill-variants one --prefill-warps 4 --prefill-tile-kv 64")
[[ -n "${PA_VARIANTS:-}" ]] && read -r -a variants <<<"$PA_VARIANTS"
if [[ "$what" == make ]]; then
  set -e
  out="${2:?OUT_DIR}"
  pac="${PA_BUILD_DIR:-$root/build}/bin/pa-compile"
  export PATH="$PATH:/usr/local/cuda/bin"
  for hv in "gqa4 8 4" "mha 32 1"; do
    read -r n hkv g <<<"$hv"
    for v in "${variants[@]}"; do
      # shellcheck disable=SC2086
      f="${v#*:}"; f="${f//,/ }"
      "$pac" --kernels prefill --kv-heads "$hkv" --group "$g" --head-dim 128 \
        --page-size 16 --dtype f16 --layout nhd --kv joint --causal $f \
        --chip sm_90 -o "$out/pf_${n}_${v%%:*}"
    done
  done
  exit 0
fi
gpu="${2:?STAGED dir}"; out="${3:?OUT dir}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
for d in "$B"/pf_*; do
  echo "check-prefill $(basename "$d"): $(timeout 100 "$R" check-prefill --quick --seeds 1 "$d" 2>&1 | tail -1)"
done
for d in "$B"/pf_*; do
  n=$(basename "$d"); k=prefill; [[ "$n" == *_def || "$n" == *_t0 ]] && k=auto
  timeout 150 "$R" bench-prefill --kernel "$k" --out "$out/$n.md" "$d" > /dev/null 2>&1
  echo "== $n (--kernel $k)"; grep -E "^\| (causal|append|few)" "$out/$n.md"
done
if [[ -d .gpu-fi ]]; then
  eval "$(bash .gpu-fi/kit/setup-on-device.sh .gpu-fi)"
  timeout 240 python3 .gpu-fi/kit/fi_bench.py prefill \
    --cases 64x512,16x2048,4x8192,2x16384,8x512:8192 --backend fa2 \
    --kv-heads 8,32 > "$out/fa2.md" 2>&1
  grep -E "^\| " "$out/fa2.md"
fi
