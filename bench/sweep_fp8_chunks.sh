#!/usr/bin/env bash
# Does a finer grid help the fp8 decode at many requests (issue 9)? Its
# one-pass plans run a request's KV head in one CTA (256 x 8192: 2048 CTAs,
# 5.2 CTAs a slot at 3 per SM), and a CTA of an fp8 cache spends twice the
# math per byte of an f16 one, so the last CTAs to run may leave bandwidth
# unused. Forced chunks (pa-gpu-runner bench --force-chunk) of the fp8 GQA 4
# decode with 2 and 3 K/V stages (bench/exp_decode_stages.sh's s_f8,
# s_f8_st3) and of the f16 one as the control, --l2-flush clean.
#
#   bench/sweep_fp8_chunks.sh STAGED OUT   # device, after exp_decode_stages.sh prep
set -uo pipefail
gpu="${1:?STAGED}"; out="${2:?OUT}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
raw="$(mktemp -d)"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } | tee "$out/chunks.md"
for v in s_f8 s_f8_st3 s_f16; do
  for c in 0 4096 2048 1024; do
    f=()
    [[ "$c" != 0 ]] && f=(--force-chunk "$c")
    timeout 100 "$R" bench --batches 64,256 --lens 2048,8192 --l2-flush clean "${f[@]}" \
      --out "$raw/${v}_$c.md" "$B/$v" > /dev/null 2>&1
    echo "### $v chunk $c"
    grep -E "^\| [0-9]" "$raw/${v}_$c.md" | cut -d'|' -f2,3,5,7,10,12,13
  done
done | tee -a "$out/chunks.md"
# The f16 one long request (1 x 32768 >= 75% of the read roof): chunks
# around the planner's 1008, at 2 and 3 CTAs per SM.
for cps in 2 3; do
  for c in 0 672 768 1008 1344; do
    f=(--ctas-per-sm "$cps")
    [[ "$c" != 0 ]] && f+=(--force-chunk "$c")
    timeout 100 "$R" bench --batches 1 --lens 32768 --l2-flush clean "${f[@]}" \
      --out "$raw/b1_${cps}_$c.md" "$B/s_f16" > /dev/null 2>&1
    echo "### f16 1 x 32768, $cps/SM, chunk $c: $(grep -E "^\| [0-9]" "$raw/b1_${cps}_$c.md" | cut -d'|' -f5,7,10,12,13)"
  done
done | tee -a "$out/chunks.md"
