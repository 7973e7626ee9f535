#!/usr/bin/env bash
# Experiment (issue 9, the 1 x 32768 target and the fp8 one). f16 GQA 4
# split decode (Hkv 8, P 16):
#   s_old   the previous head's bundle (prep with PA_BUILD_DIR at its build
#           and SUFFIX _old: only s_old is then written);
#   s_new   this head: the merge's work_indptr loads before the arrival's
#           fence, the fences before the counter reset / second arrival;
#   s_acq   s_new with fence.acq_rel.gpu for membar.gl (fence.sc.gpu) in
#           its PTX, reassembled with ptxas;
#   s_ip0   s_new with the page table's offset and the key count taken
#           from the work item (kv_indptr[r] read as 0, kv_end not clamped
#           to kv_len): what a work item carrying its page offset would
#           save. Right at B = 1 only (kv_indptr[0] = 0), so timed there and
#           not checked;
#   s_both  s_acq and s_ip0.
# B 1 x L 512 - 32768 (100 timed calls) and B 16 x 512 / 2048, clean
# eviction, two rounds interleaved. And the fp8 gap: e4m3 GQA 4 / MHA
# decode with --l2-prefetch-bytes 256 (a 128-byte NHD row's 256-byte
# block holds the next KV head's row, whose CTA runs beside) against the
# default 128, f16 beside, B 64 / 256 x L 2048 / 8192. check --quick of
# the checkable bundles, memcheck / racecheck of s_new, check-mla of an MLA
# bundle (the merge together's arrival is shared), the SASS of the fences.
#
#   bench/exp_split_chain.sh prep DIR [SUFFIX]   # here
#   PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu DIR/*
#   bench/exp_split_chain.sh run build/gpu OUT   # device; carry build/gpu
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/device_lib.sh"
mode="${1:?usage: exp_split_chain.sh prep DIR [SUFFIX] | run STAGED OUT}"
ss=(s_old s_new s_acq s_ip0 s_both)
f8=(f8 f8_pf256 f8_mha f8_mha_pf256 f16)
if [[ "$mode" == prep ]]; then
  set -e
  dir="${2:?DIR}"; sfx="${3:-}"
  PA_PAIRS_ONLY=1 pa_prep "$dir"
  if [[ "$sfx" == _old ]]; then
    "$pac" "${pa_base[@]}" "${pa_g4[@]}" -o "$dir/s_old"
    exit 0
  fi
  "$pac" "${pa_base[@]}" "${pa_g4[@]}" -o "$dir/s_new"
  acq='s/^\tmembar.gl;/\tfence.acq_rel.gpu;/'
  ip0='s/^\tld.global.b32 \t\(%r[0-9]*\), \[%rd175\];/\tmov.b32 \t\1, 0;/; s/^\tmin.s64 \t\(%rd[0-9]*\), %rd184, \(%rd[0-9]*\);/\tmov.b64 \t\1, \2;/'
  pa_ptx_edit "$dir/s_new" "$dir/s_acq" pa_decode_split "$acq"
  pa_ptx_edit "$dir/s_new" "$dir/s_ip0" pa_decode_split "$ip0"
  pa_ptx_edit "$dir/s_acq" "$dir/s_both" pa_decode_split "$ip0"
  "$pac" "${pa_base[@]}" "${pa_g4[@]}" --kv-dtype e4m3 -o "$dir/f8"
  "$pac" "${pa_base[@]}" "${pa_g4[@]}" --kv-dtype e4m3 --l2-prefetch-bytes 256 -o "$dir/f8_pf256"
  "$pac" "${pa_base[@]}" "${pa_mha[@]}" --kv-dtype e4m3 -o "$dir/f8_mha"
  "$pac" "${pa_base[@]}" "${pa_mha[@]}" --kv-dtype e4m3 --l2-prefetch-bytes 256 -o "$dir/f8_mha_pf256"
  "$pac" "${pa_base[@]}" "${pa_g4[@]}" -o "$dir/f16"
  "$pac" "${pa_base[@]}" --kv-heads 32 --group 1 -o "$dir/s_mha"
  "$pac" --kernels mla --head-dim 512 --kpe 64 --mla-heads 128 --page-size 64 \
    --dtype bf16 --sm-scale 0.0721687836 --chip sm_90a -o "$dir/mla_h128_p64_bf16"
  exit 0
fi
out="${3:?OUT}"
pa_run_init "${2:?STAGED}" "$out"
{
  echo "## checks"
  pa_check_bundles "$R" "$B/s_old" "$B/s_new" "$B/s_acq" "$B/s_mha" "${f8[@]/#/$B/}" \
    "$B/mla_h128_p64_bf16"
  PA_SANITIZE_TIMEOUT=150 pa_sanitize "$R" check "$B/s_new"
  echo "## SASS of the fences (pa_decode_split)"
  for v in s_new s_acq; do
    echo "### $v"
    cuobjdump -sass -fun pa_decode_split "$B/$v/kernels.cubin" 2>&1 |
      grep -E "MEMBAR|FENCE|ATOM|RED|ERRBAR|CCTL" | sed 's/^ *//' | head -20
  done
} >> "$out/summary.md" 2>&1
pa_bench_rounds "$R" "$B" "$raw" "${ss[@]}" -- --batches 1 \
  --lens 512,2048,8192,32768 --reps 100 --l2-flush clean
pa_rounds_table "$raw" "${ss[@]}" >> "$out/summary.md"
mkdir -p "$raw/b16"
pa_bench_rounds "$R" "$B" "$raw/b16" s_old s_new s_acq -- --batches 16 \
  --lens 512,2048 --reps 100 --l2-flush clean
pa_rounds_table "$raw/b16" s_old s_new s_acq >> "$out/summary.md"
mkdir -p "$raw/f8"
pa_bench_rounds "$R" "$B" "$raw/f8" "${f8[@]}" -- --batches 64,256 \
  --lens 2048,8192 --max-kv-gib 9 --l2-flush clean
pa_rounds_table "$raw/f8" "${f8[@]}" >> "$out/summary.md"
tar czf "$out/raw.tgz" -C "$raw" .
cat "$out/summary.md"
