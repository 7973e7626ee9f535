#!/usr/bin/env bash
# The CUDA-core decode on the tile pipeline (pa-tile-to-simt) beside the
# lane-group kernel it replaces, in one device call: every staged decode
# bundle checked against the float64 reference, racecheck on the MHA
# bundle, then the decode benchmark of the old kernel's bundles (old_*,
# compiled by the previous pa-compile) and the new ones on the same grid,
# and FlashInfer's CUDA-core and tensor-core decode beside them (kit staged
# in .gpu-fi; PA_NO_FI=1 skips it). Usage on the device machine (carry
# build/gpu and .gpu-fi; staged by bench/stage_gpu.sh):
#   bench/run_simt_decode.sh build/gpu $OUT
set -uo pipefail
gpu="${1:?usage: run_simt_decode.sh STAGED_DIR OUT}"; out="${2:?}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
export PATH="$PATH:/usr/local/cuda/bin"
full=(--batches 1,16,64,256 --lens 512,2048,8192,32768 --max-kv-gib 9)
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
  for d in "$B"/*; do
    n="$(basename "$d")"
    case "$n" in prefill_*) continue ;; esac
    r="$(timeout 100 "$R" check "$d" 2>&1 | tail -1)"
    echo "check $n: ${r:0:160}"
  done
} > "$out/check.log" 2>&1
cat "$out/check.log"
if [[ -d "$B/mha_d128_p16_f16_nhd_joint" ]]; then
  timeout 150 compute-sanitizer --tool racecheck "$R" check "$B/mha_d128_p16_f16_nhd_joint" 2>&1 \
    | grep -E "SUMMARY|all bundles|FAIL" | head -6 > "$out/racecheck.log"
  cat "$out/racecheck.log"
fi
bench() { # NAME GRID...
  local name="$1"; shift
  [[ -d "$B/$name" ]] || return 0
  timeout 150 "$R" bench "$@" --out "$out/bench_$name.md" "$B/$name" > /dev/null 2>&1
  echo "== $name"; grep -E "^\|" "$out/bench_$name.md" | cut -d'|' -f2-5,7,10 | tail -n +3
}
for n in ${PA_BENCH:-old_mha_d128_p16_f16_nhd_joint mha_d128_p16_f16_nhd_joint old_cc_gqa4_d128_p16_f16_nhd_joint cc_gqa4_d128_p16_f16_nhd_joint}; do
  bench "$n" "${full[@]}"
done
if [[ -d .gpu-fi && "${PA_NO_FI:-0}" != 1 ]]; then
  eval "$(bash .gpu-fi/kit/setup-on-device.sh .gpu-fi)" > /dev/null
  timeout 200 python3 .gpu-fi/kit/fi_bench.py decode --batches 1,16,64,256 \
    --lens 512,2048,8192,32768 --kv-heads 8,32 --paths cuda,tc --max-kv-gib 9 --out "$out/fi_decode.md" > /dev/null 2>&1
  echo "== FlashInfer"
  grep -hE "^\|" "$out/fi_decode.md" | grep -v -- "---" | cut -d'|' -f2-6
fi
date -u
