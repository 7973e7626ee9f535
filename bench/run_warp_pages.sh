#!/usr/bin/env bash
# Warp-shuffled page lookups of the tensor-core decode (pa-promote-tiles'
# warp-local tiles: one page-table load a lane and tile, gpu.shuffle for the
# rounds; issue 9) in one device call: every staged decode bundle checked
# against the float64 reference (page sizes 1 / 5 / 16 / 64, head dims 64 to
# 256, fp8, the 128-key tile that keeps per-round lookups), memcheck on two,
# then the decode benchmark of the default GQA 4 bundle beside the same
# kernel without the shuffles (--page-list-rounds 0, nolist_...) and
# FlashInfer's tensor-core decode (kit staged in .gpu-fi). Carry build/gpu
# and .gpu-fi:
#   bench/run_warp_pages.sh build/gpu $OUT
set -uo pipefail
gpu="${1:?usage: run_warp_pages.sh STAGED_DIR OUT}"; out="${2:?}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
export PATH="$PATH:/usr/local/cuda/bin"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
for d in "$B"/*; do
  echo "check $(basename "$d"): $(timeout 100 "$R" check --quick "$d" 2>&1 | tail -1 | cut -c1-120)"
done
for d in gqa4_d128_p16_f16_nhd_joint tc_g4_d96_p1_bf16_nhd_split; do
  echo "== memcheck $d: $(timeout 150 compute-sanitizer --tool memcheck --report-api-errors no "$R" check --quick "$B/$d" 2>&1 \
    | grep -E "SUMMARY|all bundles|FAIL" | sort -u | tr '\n' ' ')"
done
for rep in 1 2; do
  for name in gqa4 nolist_gqa4; do
    d="$B/${name}_d128_p16_f16_nhd_joint"
    timeout 150 "$R" bench --batches 1,16,64,256 --lens 512,2048,8192,32768 \
      --max-kv-gib 9 --out "$out/bench_${name}_$rep.md" "$d" > /dev/null 2>&1
    timeout 60 "$R" bench --batches 1 --lens 65536,262144 \
      --out "$out/bench_${name}_long_$rep.md" "$d" > /dev/null 2>&1
    echo "== $name (rep $rep)"
    cat "$out/bench_${name}_$rep.md" "$out/bench_${name}_long_$rep.md" | grep -E "^\| [0-9]" | cut -d'|' -f2-5,7,10
  done
done
eval "$(bash .gpu-fi/kit/setup-on-device.sh .gpu-fi)" > /dev/null
timeout 240 python3 .gpu-fi/kit/fi_bench.py decode --batches 1,16,64,256 \
  --lens 512,2048,8192,32768 --kv-heads 8 --paths tc --max-kv-gib 9 2>&1 | grep -E "^\| [0-9]"
timeout 60 python3 .gpu-fi/kit/fi_bench.py decode --batches 1 --lens 65536,262144 \
  --kv-heads 8 --paths tc 2>&1 | grep -E "^\| [0-9]"
