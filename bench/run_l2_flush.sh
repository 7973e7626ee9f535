#!/usr/bin/env bash
# The decode grid under both L2 evictions of the benchmarks (pa-gpu-runner
# --l2-flush dirty | clean, docs/Runtime.md "Benchmark"), ours and
# FlashInfer's (bench/fi_bench_flush.py: the kit with the same choice), with
# the same-bytes read pass of every row, in one device call (issue 9: the
# fixed cost a dirty L2 adds to calls of a few hundred MB).
#
#   bench/run_l2_flush.sh prep DIR                 # here: the bundles
#   PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu DIR/*
#   bench/run_l2_flush.sh run build/gpu OUT        # device (carry build/gpu
#                                                  # and .gpu-fi)
#
# Bundles: GQA 4 and GQA 8 (tensor-core decode), MHA (CUDA-core), GQA 4
# over an e4m3 cache; f16, D 128, P 16, NHD joint, Hq 32, sm_90a.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
mode="${1:?usage: run_l2_flush.sh prep DIR | run STAGED OUT}"
if [[ "$mode" == prep ]]; then
  set -e
  dir="${2:?DIR}"
  pac="${PA_BUILD_DIR:-$root/build}/bin/pa-compile"
  mkdir -p "$dir"
  c=(--head-dim 128 --page-size 16 --dtype f16 --layout nhd --kv joint --chip sm_90a)
  "$pac" "${c[@]}" --kv-heads 8 --group 4 -o "$dir/lf_gqa4"
  "$pac" "${c[@]}" --kv-heads 4 --group 8 -o "$dir/lf_g8"
  "$pac" "${c[@]}" --kv-heads 32 --group 1 -o "$dir/lf_mha"
  "$pac" "${c[@]}" --kv-heads 8 --group 4 --kv-dtype e4m3 -o "$dir/lf_fp8"
  exit 0
fi
gpu="${2:?STAGED}"; out="${3:?OUT}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
export PATH="$PATH:/usr/local/cuda/bin"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } | tee "$out/summary.md"
grid=(--batches 1,16,64,256 --lens 512,2048,8192,32768 --max-kv-gib 9)
for round in 1 2; do
  for f in dirty clean; do
    for v in ${PA_VARIANTS:-lf_gqa4 lf_mha lf_fp8 lf_g8}; do
      timeout 150 "$R" bench "${grid[@]}" --l2-flush "$f" --out "$out/d_${v}_${f}_$round.md" "$B/$v" > /dev/null 2>&1 \
        || echo "bench $v $f round $round: rc $?" | tee -a "$out/summary.md"
    done
  done
done
if [[ "${PA_NO_FI:-0}" != 1 ]]; then
  eval "$(bash .gpu-fi/kit/setup-on-device.sh .gpu-fi)" > /dev/null
  for f in dirty clean; do
    timeout 300 python3 "$root/bench/fi_bench_flush.py" --l2-flush "$f" decode --batches 1,16,64,256 \
      --lens 512,2048,8192,32768 --kv-heads 8,4 --paths tc --max-kv-gib 9 --out "$out/fi_gqa_$f.md" > "$out/fi_gqa_$f.log" 2>&1
    timeout 300 python3 "$root/bench/fi_bench_flush.py" --l2-flush "$f" decode --batches 1,16,64,256 \
      --lens 512,2048,8192,32768 --kv-heads 32 --paths cuda,tc --max-kv-gib 9 --out "$out/fi_mha_$f.md" > "$out/fi_mha_$f.log" 2>&1
  done
fi
# The short table: per bundle, B | L | dirty µs (r1, r2) | clean µs (r1, r2) |
# % read roof dirty / clean (r2) | same-bytes read µs dirty / clean (r2).
for v in ${PA_VARIANTS:-lf_gqa4 lf_mha lf_fp8 lf_g8}; do
  echo "### $v" | tee -a "$out/summary.md"
  grep -m1 "read roof:" "$out/d_${v}_dirty_1.md" | tee -a "$out/summary.md"
  paste -d'|' <(grep -E "^\| [0-9]" "$out/d_${v}_dirty_1.md" | cut -d'|' -f2,3,7) \
              <(grep -E "^\| [0-9]" "$out/d_${v}_dirty_2.md" | cut -d'|' -f7,10,12) \
              <(grep -E "^\| [0-9]" "$out/d_${v}_clean_1.md" | cut -d'|' -f7) \
              <(grep -E "^\| [0-9]" "$out/d_${v}_clean_2.md" | cut -d'|' -f7,10,12) | tee -a "$out/summary.md"
done
for f in "$out"/fi_*.md; do
  [[ -f "$f" ]] || continue
  echo "### $(basename "$f")" | tee -a "$out/summary.md"
  grep -E "^\| [0-9]" "$f" | cut -d'|' -f2-6 | tee -a "$out/summary.md"
done
# The device tool brings back a few files: the raw reports go in one archive.
tmp="$(mktemp -d)"
tar czf "$tmp/raw.tgz" -C "$out" --exclude summary.md . && \
  find "$out" -mindepth 1 -maxdepth 1 ! -name summary.md -exec rm -rf {} + && mv "$tmp/raw.tgz" "$out/"
