#!/usr/bin/env bash
# K/V stages of the tensor-core decode (pa-compile --decode-kv-stages) in one
# device call: the st3_* bundles (3 stages) and the default (2) checked
# against the float64 reference, racecheck on st3_gqa4, then the decode
# benchmark of 2 vs 3 stages for GQA 4 / 8 / 16 with FlashInfer's
# tensor-core decode beside them (kit staged in .gpu-fi). Usage on the
# device machine (carry build/gpu and .gpu-fi):
#   bench/run_decode_stages_h200.sh build/gpu $OUT
set -uo pipefail
gpu="${1:?usage: run_decode_stages_h200.sh STAGED_DIR OUT}"; out="${2:?}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
export PATH="$PATH:/usr/local/cuda/bin"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
for d in "$B"/*; do
  echo "check $(basename "$d"): $(timeout 100 "$R" check "$d" 2>&1 | tail -1 | cut -c1-120)"
done
timeout 150 compute-sanitizer --tool racecheck "$R" check "$B/st3_gqa4_d128_p16_f16_nhd_joint" 2>&1 \
  | grep -E "SUMMARY|all bundles|FAIL" | head -4
grid=(--batches 1,16,64,256 --lens 512,2048,8192,32768 --max-kv-gib 9)
for name in gqa4 st3_gqa4 g8 st3_g8 g16 st3_g16; do
  d="$B/${name}_d128_p16_f16_nhd_joint"
  [[ -d "$d" ]] || continue
  timeout 200 "$R" bench "${grid[@]}" --out "$out/bench_$name.md" "$d" > /dev/null 2>&1
  echo "== $name"; grep -E "^\|" "$out/bench_$name.md" | cut -d'|' -f2-5,7,10 | tail -n +3
done
if [[ -d .gpu-fi ]]; then
  eval "$(bash .gpu-fi/kit/setup-on-device.sh .gpu-fi)" > /dev/null
  timeout 240 python3 .gpu-fi/kit/fi_bench.py decode --batches 1,16,64,256 \
    --lens 512,2048,8192,32768 --kv-heads 8,4,2 --paths tc --max-kv-gib 9 --out "$out/fi.md" > /dev/null 2>&1
  echo "== FlashInfer tensor cores"
  grep -E "^\|" "$out/fi.md" | grep -v -- "---" | cut -d'|' -f2-6
fi
