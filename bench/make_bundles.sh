#!/usr/bin/env bash
# Compiles the decode and prefill bundles that the GPU checks and benchmarks
# use, with pa-compile (the compiler's tuned default shape for each):
#
#   bench/make_bundles.sh OUT_DIR [PA_COMPILE]
#
# One sub-directory per configuration, named gG_dD_pP_DTYPE_LAYOUT_KV (plus
# gqa4_... and mha_..., the two benchmark shapes): every dtype, head dims
# 64/128/256, page sizes 1/5/16/64, groups 1/2/3/4/7/8/11/16/32 and 64 (the
# CUDA-core decode in 8 chunks of 8 heads), NHD/HND, joint/split.
# Prefill bundles (pa-compile --kernels prefill) are named prefill_...: the
# two benchmark shapes (gqa4 / mha, causal) and check variants covering
# f16/bf16, head dims 64/80/96/128/192/256 (80 and 96: a partial last round
# of 16-byte K/V copies), page sizes 1/5/16/64, groups 1/4/8,
# NHD/HND, joint/split and the masks: causal, none, window, soft-cap, alibi,
# positions, custom mask, lse-base2. With no shape flag, the prefill
# bundles up to head dim 128 hold two prefill kernels, `prefill` (8 warps)
# and `prefill_short` (4 warps, prefill_short.cubin), which check-prefill
# checks both and the planner picks between. PA_SKIP_DECODE=1 /
# PA_SKIP_PREFILL=1 skip one family.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:?usage: make_bundles.sh OUT_DIR [PA_COMPILE]}"
pac="${2:-${PA_BUILD_DIR:-$root/build}/bin/pa-compile}"
export PATH="$PATH:/usr/local/cuda/bin"
mkdir -p "$out"
# name kv_heads group head_dim page_size dtype layout kv
configs=(
  "gqa4_d128_p16_f16_nhd_joint 8 4 128 16 f16 nhd joint"
  "mha_d128_p16_f16_nhd_joint 32 1 128 16 f16 nhd joint"
  "g1_d128_p1_f16_hnd_joint 4 1 128 1 f16 hnd joint"
  "g1_d256_p64_bf16_hnd_joint 4 1 256 64 bf16 hnd joint"
  "g2_d128_p5_f16_nhd_joint 4 2 128 5 f16 nhd joint"
  "g4_d128_p16_bf16_nhd_joint 4 4 128 16 bf16 nhd joint"
  "g4_d64_p16_f32_nhd_joint 4 4 64 16 f32 nhd joint"
  "g4_d64_p64_bf16_hnd_split 4 4 64 64 bf16 hnd split"
  "g7_d128_p16_f16_nhd_joint 4 7 128 16 f16 nhd joint"
  "g8_d256_p16_f16_nhd_split 2 8 256 16 f16 nhd split"
  "g8_d64_p1_f16_hnd_split 4 8 64 1 f16 hnd split"
  "g11_d128_p16_bf16_nhd_joint 2 11 128 16 bf16 nhd joint"
  "g16_d256_p16_f16_hnd_split 2 16 256 16 f16 hnd split"
  "g32_d64_p5_f32_nhd_joint 1 32 64 5 f32 nhd joint"
  "g64_d128_p16_f16_nhd_joint 1 64 128 16 f16 nhd joint"
  "g3_d64_p16_bf16_nhd_joint 4 3 64 16 bf16 nhd joint"
  "g1_d128_p16_f32_hnd_split 4 1 128 16 f32 hnd split"
)
if [[ "${PA_SKIP_DECODE:-0}" != 1 ]]; then
  for c in "${configs[@]}"; do
    read -r name hkv g d p dt lay kv <<<"$c"
    "$pac" --kv-heads "$hkv" --group "$g" --head-dim "$d" --page-size "$p" \
      --dtype "$dt" --layout "$lay" --kv "$kv" --chip sm_90a -o "$out/$name"
  done
fi

# The decode bundles above take pa-compile's default kernel
# (--decode-kernel auto: tensor cores for f16/bf16 with GQA groups 4..32).
# Decode bundles with a forced kernel, named tc_... (tensor-core) and cc_...
# (CUDA-core): the benchmark shapes on the other kernel (MHA on tensor
# cores; GQA 4, 8 and 16 on CUDA cores), head dims 80 and 96 (no CUDA-core
# kernel), groups 1/7/32, page sizes 1/5/16/64, f16/bf16, NHD/HND,
# joint/split, the 128-key tile. PA_SKIP_FORCED=1 skips them.
forced=(
  "tc_mha_d128_p16_f16_nhd_joint 32 1 128 16 f16 nhd joint --decode-kernel tensor-core"
  "tc_gqa4_d128_p16_f16_nhd_joint_kv128 8 4 128 16 f16 nhd joint --decode-kernel tensor-core --decode-tile-kv 128"
  "tc_g1_d128_p16_bf16_hnd_split 4 1 128 16 bf16 hnd split --decode-kernel tensor-core"
  "tc_g7_d80_p5_f16_nhd_joint 2 7 80 5 f16 nhd joint --decode-kernel tensor-core"
  "tc_g4_d96_p1_bf16_nhd_split 2 4 96 1 bf16 nhd split --decode-kernel tensor-core"
  "tc_g16_d64_p64_f16_hnd_joint 2 16 64 64 f16 hnd joint --decode-kernel tensor-core"
  "tc_g32_d128_p16_bf16_nhd_joint 1 32 128 16 bf16 nhd joint --decode-kernel tensor-core"
  "tc_g4_d256_p16_f16_nhd_joint 2 4 256 16 f16 nhd joint --decode-kernel tensor-core"
  "cc_gqa4_d128_p16_f16_nhd_joint 8 4 128 16 f16 nhd joint --decode-kernel cuda-core"
  "cc_g8_d128_p16_f16_nhd_joint 4 8 128 16 f16 nhd joint --decode-kernel cuda-core"
  "cc_g16_d128_p16_f16_nhd_joint 2 16 128 16 f16 nhd joint --decode-kernel cuda-core"
  "cc_g12_d128_p16_bf16_hnd_split 2 12 128 16 bf16 hnd split --decode-kernel cuda-core"
  "g8_d128_p16_f16_nhd_joint 4 8 128 16 f16 nhd joint"
  "g16_d128_p16_f16_nhd_joint 2 16 128 16 f16 nhd joint"
)
if [[ "${PA_SKIP_FORCED:-0}" != 1 ]]; then
  for c in "${forced[@]}"; do
    read -r name hkv g d p dt lay kv flags <<<"$c"
    # shellcheck disable=SC2086
    "$pac" --kv-heads "$hkv" --group "$g" --head-dim "$d" --page-size "$p" \
      --dtype "$dt" --layout "$lay" --kv "$kv" ${flags:-} --chip sm_90a \
      -o "$out/$name"
  done
fi

# name kv_heads group head_dim page_size dtype layout kv [prefill flags...]
prefill=(
  "prefill_gqa4_d128_p16_f16_nhd_joint_causal 8 4 128 16 f16 nhd joint --causal"
  "prefill_gqa4_d128_p16_f16_nhd_joint_causal_kvsplit 8 4 128 16 f16 nhd joint --causal --prefill-warps 4 --prefill-warp-rows 16 --prefill-kv-warps 4 --prefill-tile-kv 64 --prefill-variants one"
  "prefill_g4_d96_p5_bf16_nhd_split_window_kvsplit 2 4 96 5 bf16 nhd split --causal --window 100 --prefill-warps 4 --prefill-warp-rows 16 --prefill-kv-warps 4 --prefill-tile-kv 64 --prefill-variants one"
  "prefill_mha_d128_p16_f16_nhd_joint_causal 32 1 128 16 f16 nhd joint --causal"
  "prefill_g4_d128_p16_bf16_nhd_joint_none 2 4 128 16 bf16 nhd joint"
  "prefill_g1_d64_p1_f16_hnd_split_causal 4 1 64 1 f16 hnd split --causal"
  "prefill_g8_d256_p64_bf16_hnd_joint_causal 1 8 256 64 bf16 hnd joint --causal"
  "prefill_g4_d96_p5_f16_nhd_split_window 2 4 96 5 f16 nhd split --causal --window 100"
  "prefill_g4_d80_p16_bf16_nhd_joint_causal 2 4 80 16 bf16 nhd joint --causal"
  "prefill_g1_d192_p16_f16_nhd_joint_softcap 2 1 192 16 f16 nhd joint --causal --logits-soft-cap 30"
  "prefill_g4_d128_p64_f16_hnd_joint_alibi 2 4 128 64 f16 hnd joint --causal --alibi"
  "prefill_g4_d128_p16_f16_nhd_joint_positions 2 4 128 16 f16 nhd joint --causal --positions"
  "prefill_g1_d128_p16_bf16_nhd_joint_positions_window 4 1 128 16 bf16 nhd joint --causal --positions --window 300"
  "prefill_g8_d64_p5_bf16_nhd_joint_custommask 1 8 64 5 bf16 nhd joint --custom-mask"
  "prefill_g1_d128_p16_f16_hnd_split_lsebase2 4 1 128 16 f16 hnd split --causal --lse-base2 --sm-scale 0.1"
  "prefill_g4_d256_p1_f16_nhd_joint_window_none 2 4 256 1 f16 nhd joint --window 64"
  "prefill_g8_d128_p16_bf16_hnd_split_positions_mask 1 8 128 16 bf16 hnd split --positions --custom-mask --alibi"
  "prefill_g1_d64_p64_bf16_nhd_joint_softcap_none 4 1 64 64 bf16 nhd joint --logits-soft-cap 20 --lse-base2"
  "prefill_gqa4_d128_p16_f16_nhd_joint_causal_w4kv64 8 4 128 16 f16 nhd joint --causal --prefill-warps 4 --prefill-tile-kv 64 --prefill-variants one"
  "prefill_g4_d96_p5_f16_nhd_split_window_pagelist 2 4 96 5 f16 nhd split --causal --window 100 --page-list-rounds 1"
  "prefill_g1_d64_p1_bf16_hnd_joint_causal_pagelist 4 1 64 1 bf16 hnd joint --causal --page-list-rounds 1"
)
if [[ "${PA_SKIP_PREFILL:-0}" != 1 ]]; then
  for c in "${prefill[@]}"; do
    read -r name hkv g d p dt lay kv flags <<<"$c"
    # shellcheck disable=SC2086
    "$pac" --kernels prefill --kv-heads "$hkv" --group "$g" --head-dim "$d" \
      --page-size "$p" --dtype "$dt" --layout "$lay" --kv "$kv" ${flags:-} \
      --chip sm_90a -o "$out/$name"
  done
fi

# FP8 KV caches (pa-compile --kv-dtype e4m3|e5m2 --kv-scale tensor|head):
# decode bundles fp8_... (the tensor-core decode: the only kernel that reads
# fp8, for every group) and prefill bundles prefill_fp8_...: the benchmark
# shapes (GQA 4, MHA, GQA 8 at D 128 P 16, e4m3, per-tensor scales) and
# check variants over both formats, both scale granularities, f16/bf16
# queries, head dims 64/80/96/112/128/256 (80 and 112: a warp's last round
# of 16-byte fp8 chunks is partial), page sizes 1/5/16/64, groups
# 1/4/5/7/32, NHD/HND, joint/split. PA_SKIP_FP8=1 skips them.
# name kv_heads group head_dim page_size dtype layout kv kv_dtype kv_scale [flags...]
fp8=(
  "fp8_gqa4_d128_p16_f16_nhd_joint_e4m3 8 4 128 16 f16 nhd joint e4m3 tensor"
  "fp8_mha_d128_p16_f16_nhd_joint_e4m3 32 1 128 16 f16 nhd joint e4m3 tensor"
  "fp8_g8_d128_p16_f16_nhd_joint_e4m3 4 8 128 16 f16 nhd joint e4m3 tensor"
  "fp8_g4_d128_p16_bf16_hnd_split_e5m2_head 8 4 128 16 bf16 hnd split e5m2 head"
  "fp8_g1_d64_p1_f16_nhd_joint_e5m2 4 1 64 1 f16 nhd joint e5m2 tensor"
  "fp8_g7_d96_p5_bf16_nhd_joint_e4m3_head 2 7 96 5 bf16 nhd joint e4m3 head"
  "fp8_g4_d256_p64_f16_hnd_joint_e4m3 2 4 256 64 f16 hnd joint e4m3 tensor"
  "fp8_g32_d128_p16_f16_nhd_split_e4m3_head 1 32 128 16 f16 nhd split e4m3 head"
  "fp8_g5_d80_p5_bf16_nhd_joint_e4m3_head 2 5 80 5 bf16 nhd joint e4m3 head"
  "fp8_g1_d112_p16_f16_hnd_split_e5m2 4 1 112 16 f16 hnd split e5m2 tensor"
  "prefill_fp8_g4_d80_p16_f16_nhd_joint_causal_e4m3 2 4 80 16 f16 nhd joint e4m3 tensor --kernels prefill --causal"
  "prefill_fp8_gqa4_d128_p16_f16_nhd_joint_causal_e4m3 8 4 128 16 f16 nhd joint e4m3 tensor --kernels prefill --causal"
  "prefill_fp8_g4_d64_p5_bf16_hnd_split_window_e5m2_head 2 4 64 5 bf16 hnd split e5m2 head --kernels prefill --causal --window 100"
  "prefill_fp8_g1_d128_p16_f16_nhd_joint_none_e4m3_head 4 1 128 16 f16 nhd joint e4m3 head --kernels prefill"
  "prefill_fp8_g4_d64_p5_f16_nhd_joint_causal_e4m3_pagelist 2 4 64 5 f16 nhd joint e4m3 tensor --kernels prefill --causal --page-list-rounds 1"
)
if [[ "${PA_SKIP_FP8:-0}" != 1 ]]; then
  for c in "${fp8[@]}"; do
    read -r name hkv g d p dt lay kv kvd kvs flags <<<"$c"
    # shellcheck disable=SC2086
    "$pac" --kv-heads "$hkv" --group "$g" --head-dim "$d" --page-size "$p" \
      --dtype "$dt" --layout "$lay" --kv "$kv" --kv-dtype "$kvd" \
      --kv-scale "$kvs" ${flags:-} --chip sm_90a -o "$out/$name"
  done
fi
