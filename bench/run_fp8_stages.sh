#!/usr/bin/env bash
# The fp8 decode's K/V stages (pa-compile --decode-kv-stages 2 / 3 / 4:
# bundles fp8_*, fp8s3_*, fp8s4_*) on GQA 4 and MHA beside the f16 decode,
# in one device call. Usage on the device machine (carry build/gpu):
#   bench/run_fp8_stages.sh build/gpu $OUT
set -uo pipefail
gpu="${1:?usage: run_fp8_stages.sh STAGED_DIR OUT}"; out="${2:?}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
grid=(--batches 1,16,64,256 --lens 512,2048,8192,32768 --max-kv-gib 9)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
for n in fp8s3_gqa4_d128_p16_f16_nhd_joint_e4m3 fp8s4_mha_d128_p16_f16_nhd_joint_e4m3; do
  [[ -d "$B/$n" ]] && echo "check $n: $(timeout 100 "$R" check --quick "$B/$n" 2>&1 | tail -1)"
done
for shape in gqa4 mha; do
  for pre in fp8 fp8s3 fp8s4; do
    n="${pre}_${shape}_d128_p16_f16_nhd_joint_e4m3"
    [[ -d "$B/$n" ]] || continue
    timeout 200 "$R" bench "${grid[@]}" --out "$out/bench_$n.md" "$B/$n" > /dev/null 2>&1
    echo "== $n"; grep -E "^\|" "$out/bench_$n.md" | cut -d'|' -f2-4,7,10 | tail -n +3
  done
done
