#!/usr/bin/env bash
# Experiment (issue 9, the fp8 target): do the KV heads' CTAs of a request,
# kept in step, read an NHD page's 128-byte fp8 rows better? The one-pass
# decode's grid puts the Hkv CTAs of a request side by side (linear id =
# request x Hkv + head, grid x = batch); *_cl bundles edit pa_decode's PTX
# to launch clusters of 8 CTAs along x (.reqnctapercluster 8, 1, 1: the 8
# KV heads of a request at B a multiple of 8) and put a cluster barrier
# (barrier.cluster.arrive.relaxed + wait) after every cp.async group, so
# that the 8 CTAs issue each K / V stage together. e4m3 GQA 4 (Hkv 8) with
# the default 128-byte and a 256-byte L2 prefetch, f16 beside; B 64 / 256 x
# L 2048 / 8192, clean eviction, two rounds interleaved.
#
#   bench/exp_cluster_sync.sh prep DIR        # here
#   PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu DIR/*
#   bench/exp_cluster_sync.sh run build/gpu OUT   # device; carry build/gpu
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/device_lib.sh"
mode="${1:?usage: exp_cluster_sync.sh prep DIR | run STAGED OUT}"
vs=(c_f8 c_f8_cl c_f8_pf256_cl c_f16 c_f16_cl)
# Clusters of 8 along x, a cluster barrier after every cp.async group.
cluster='s/^)$/) .reqnctapercluster 8, 1, 1/; s/^\tcp.async.commit_group;$/\tcp.async.commit_group;\n\tbarrier.cluster.arrive.relaxed.aligned;\n\tbarrier.cluster.wait.aligned;/'
if [[ "$mode" == prep ]]; then
  set -e
  dir="${2:?DIR}"
  PA_PAIRS_ONLY=1 pa_prep "$dir"
  "$pac" "${pa_base[@]}" "${pa_g4[@]}" --kv-dtype e4m3 -o "$dir/c_f8"
  "$pac" "${pa_base[@]}" "${pa_g4[@]}" --kv-dtype e4m3 --l2-prefetch-bytes 256 -o "$dir/c_f8_pf256"
  "$pac" "${pa_base[@]}" "${pa_g4[@]}" -o "$dir/c_f16"
  pa_ptx_edit "$dir/c_f8" "$dir/c_f8_cl" pa_decode "$cluster"
  pa_ptx_edit "$dir/c_f8_pf256" "$dir/c_f8_pf256_cl" pa_decode "$cluster"
  pa_ptx_edit "$dir/c_f16" "$dir/c_f16_cl" pa_decode "$cluster"
  rm -rf "$dir/c_f8_pf256"
  exit 0
fi
out="${3:?OUT}"
pa_run_init "${2:?STAGED}" "$out"
pa_bench_rounds "$R" "$B" "$raw" "${vs[@]}" -- --batches 64,256 \
  --lens 2048,8192 --max-kv-gib 9 --l2-flush clean
pa_rounds_table "$raw" "${vs[@]}" >> "$out/summary.md"
for v in c_f8_cl c_f16_cl; do
  echo "### $v: bench output" >> "$out/summary.md"
  grep -E "error|fail|FAIL" "$raw/${v}_1.md" | head -3 >> "$out/summary.md"
done
tar czf "$out/raw.tgz" -C "$raw" .
cat "$out/summary.md"
