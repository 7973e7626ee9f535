#!/usr/bin/env bash
# The cascade's prefix level under different split-prefill kernel shapes
# (docs/PERFORMANCE.md, "Cascade"): bench-cascade --no-plain, each level
# timed alone, on --kernels all bundles compiled three ways.
#
#   bench/exp_cascade_shapes.sh make OUT_DIR   # here: def, one, kv64 x GQA 4, MHA
#   bench/exp_cascade_shapes.sh run STAGED OUT # device (after bench/stage_gpu.sh)
#
# def: pa-compile's defaults (split kernel = the 4-warp prefill_short
# shape); one: --prefill-variants one (split with the 8-warp shape);
# kv64: --prefill-tile-kv 64 (8 warps, 64-key tiles).
set -uo pipefail
what="${1:?usage: exp_cascade_shapes.sh make|run ...}"
root="$(cd "$(dirname "$0")/.." && pwd)"
if [[ "$what" == make ]]; then
  set -e
  out="${2:?OUT_DIR}"
  pac="${PA_BUILD_DIR:-$root/build}/bin/pa-compile"
  export PATH="$PATH:/usr/local/cuda/bin"
  for hv in "gqa4 8 4" "mha 32 1"; do
    read -r n hkv g <<<"$hv"
    for v in "def:" "one:--prefill-variants one" "kv64:--prefill-tile-kv 64"; do
      # shellcheck disable=SC2086
      "$pac" --kernels all --kv-heads "$hkv" --group "$g" --head-dim 128 \
        --page-size 16 --dtype f16 --layout nhd --kv joint ${v#*:} \
        --chip sm_90 -o "$out/cv_${n}_${v%%:*}"
    done
  done
  exit 0
fi
gpu="${2:?STAGED dir}"; out="${3:?OUT dir}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
nvidia-smi --query-gpu=name --format=csv,noheader
for n in $(ls "$B"); do
  timeout 120 "$R" bench-cascade --no-plain --merge-rows 1 --reps 20 \
    --cases 8192:256:256,32768:256:64,32768:256:256 --out "$out/$n.md" "$B/$n" > /dev/null 2>&1
  echo "== $n"; grep -E "^\| [0-9]" "$out/$n.md"
done
