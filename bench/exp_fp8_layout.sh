#!/usr/bin/env bash
# What keeps the fp8 decode at ~90% of the read roof at large sizes on the
# H200 (f16: 97-99%)? Variants of the GQA 4 e4m3 decode (D 128, P 16,
# sm_90a) timed side by side under --l2-flush clean, two rounds
# interleaved: the default (NHD: a page's K rows of one head are 128-byte
# pieces 1 KB apart), HND (2 KB contiguous per head and page), 3 K/V stages,
# 256-byte L2 prefetch on the copies; f16 NHD / HND as the control.
#
#   bench/exp_fp8_layout.sh prep DIR ; PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu DIR/*
#   bench/exp_fp8_layout.sh run build/gpu OUT   # device
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
mode="${1:?usage: exp_fp8_layout.sh prep DIR | run STAGED OUT}"
if [[ "$mode" == prep ]]; then
  set -e
  dir="${2:?DIR}"; pac="${PA_BUILD_DIR:-$root/build}/bin/pa-compile"
  mkdir -p "$dir"
  c=(--head-dim 128 --page-size 16 --dtype f16 --kv joint --chip sm_90a --kv-heads 8 --group 4)
  "$pac" "${c[@]}" --layout nhd --kv-dtype e4m3 -o "$dir/x_f8"
  "$pac" "${c[@]}" --layout hnd --kv-dtype e4m3 -o "$dir/x_f8_hnd"
  "$pac" "${c[@]}" --layout nhd --kv-dtype e4m3 --decode-kv-stages 3 -o "$dir/x_f8_st3"
  "$pac" "${c[@]}" --layout nhd --kv-dtype e4m3 --l2-prefetch-bytes 256 -o "$dir/x_f8_pf256"
  "$pac" "${c[@]}" --layout nhd -o "$dir/x_f16"
  "$pac" "${c[@]}" --layout hnd -o "$dir/x_f16_hnd"
  exit 0
fi
gpu="${2:?STAGED}"; out="${3:?OUT}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
raw="$(mktemp -d)"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > "$out/summary.md"
vs=(x_f8 x_f8_hnd x_f8_st3 x_f8_pf256 x_f16 x_f16_hnd)
timeout 200 "$R" check --quick "${vs[@]/#/$B/}" 2>&1 | grep -E "all bundles|FAIL" | head -8 >> "$out/summary.md"
for round in 1 2; do
  for v in "${vs[@]}"; do
    timeout 100 "$R" bench --batches 64,256 --lens 2048,8192 --l2-flush clean \
      --out "$raw/${v}_$round.md" "$B/$v" > /dev/null 2>&1
    timeout 100 "$R" bench --batches 16 --lens 32768 --l2-flush clean \
      --out "$raw/${v}_long_$round.md" "$B/$v" > /dev/null 2>&1
  done
done
{
  echo "## B | L | plan | r1 us | r2 us | % read roof r2 | same-bytes read us r2 | % of it"
  grep -m1 "read roof:" "$raw/x_f8_1.md"
  for v in "${vs[@]}"; do
    echo "### $v"
    paste -d'|' <(cat "$raw/${v}_1.md" "$raw/${v}_long_1.md" | grep -E "^\| [0-9]" | cut -d'|' -f2,3,5,7) \
                <(cat "$raw/${v}_2.md" "$raw/${v}_long_2.md" | grep -E "^\| [0-9]" | cut -d'|' -f7,10,12,13)
  done
} >> "$out/summary.md"
tar czf "$out/raw.tgz" -C "$raw" .
cat "$out/summary.md"
