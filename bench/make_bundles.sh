#!/usr/bin/env bash
# Compiles the decode bundles that the GPU check and benchmark use, with
# pa-compile (the compiler's tuned default shape for each):
#
#   bench/make_bundles.sh OUT_DIR [PA_COMPILE]
#
# One sub-directory per configuration, named gG_dD_pP_DTYPE_LAYOUT_KV (plus
# gqa4_... and mha_..., the two benchmark shapes): every dtype, head dims
# 64/128/256, page sizes 1/5/16/64, groups 1/2/4/7/8, chunked large groups
# (11: a partial last chunk, 16, 32), NHD/HND, joint/split.
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
)
for c in "${configs[@]}"; do
  read -r name hkv g d p dt lay kv <<<"$c"
  "$pac" --kv-heads "$hkv" --group "$g" --head-dim "$d" --page-size "$p" \
    --dtype "$dt" --layout "$lay" --kv "$kv" --chip sm_90 -o "$out/$name"
done
