#!/usr/bin/env bash
# The wgmma MLA kernel with a producer and a consumer warpgroup (issue 9;
# docs/GPU.md "MLA decode on wgmma") against the previous kernel (both
# warpgroups computing S of their own keys and exchanging row maxima), in
# one device call: check-mla of every bundle of DIR, memcheck / synccheck of
# two wgmma bundles and racecheck of their --mla-consumer-sync builds, the
# MLA python tests (pa_mla_checks), then bench-mla of new / old bundles
# twice interleaved and FlashInfer's FA3 MLA on the same shapes.
#
#   bench/run_mla_roles.sh prep DIR OLD_BUILD    # here: this compiler's MLA
#     bundles (run_mla_together.sh make) + old_* from OLD_BUILD's pa-compile
#   PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu DIR/*
#   bench/run_mla_roles.sh run build/gpu OUT FI   # device; carry build/gpu,
#     .gpu-fi (FI = .gpu-fi, or "" for none), build/pybundles,
#     build/lib/Runtime/libpa_runtime.so, build/lib/Runtime/libpa_pool.so
# PA_MLA_BATCHES / PA_MLA_LENGTHS: the shapes (default 1,2,4,16,64 x
# 1024,8192,32768); PA_OLD_RUNNER: a runner of STAGED for the old_* bundles
# (the previous runtime; default the staged one); PA_MLA_EXTRA: more bundles of STAGED to time beside
# them (e.g. a variant under study), one column each per round.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/device_lib.sh"
mode="${1:?usage: run_mla_roles.sh prep DIR OLD_BUILD | run STAGED OUT FI}"
if [[ "$mode" == prep ]]; then
  dir="${2:?DIR}"; old="${3:?OLD_BUILD}"
  "$root/bench/run_mla_together.sh" make "$dir" "$root/build/bin/pa-compile" || exit 1
  "$root/build/bin/pa-compile" --kernels mla --head-dim 512 --kpe 64 --mla-heads 128 \
    --page-size 64 --dtype bf16 --sm-scale 0.0721687836 --mla-mma wgmma --mla-consumer-sync \
    --chip sm_90a -o "$dir/mla_h128_p64_bf16_wg_csync" || exit 1
  tmp="$(mktemp -d)"
  "$root/bench/run_mla_together.sh" make "$tmp" "$old/bin/pa-compile" || exit 1
  for b in mla_h128_p64_bf16_auto mla_h128_p64_bf16_wg; do
    rm -rf "$dir/old_$b"; mv "$tmp/$b" "$dir/old_$b"
  done
  rm -rf "$tmp"
  exit 0
fi
out="${3:?OUT}"; fi="${4:-}"
batches="${PA_MLA_BATCHES:-1,2,4,16,64}"; lengths="${PA_MLA_LENGTHS:-1024,8192,32768}"
pa_run_init "${2:?STAGED}" "$out"
pa_mla_checks "$R" "$B" "$raw" 23 mla_h40_p5_f16_wg mla_h128_p64_bf16_wg >> "$out/summary.md" 2>&1
extra=(${PA_MLA_EXTRA:-})
for round in 1 2; do
  for b in mla_h128_p64_bf16_auto old_mla_h128_p64_bf16_auto mla_h128_p64_bf16_wg old_mla_h128_p64_bf16_wg "${extra[@]}"; do
    # PA_OLD_RUNNER: the runner (the previous runtime) that times old_*.
    r="$R"; [[ "$b" == old_* && -n "${PA_OLD_RUNNER:-}" ]] && r="$PA_OLD_RUNNER"
    timeout 150 "$r" bench-mla --batches "$batches" --lengths "$lengths" --sets 2 \
      --out "$raw/${b}_$round.md" "$B/$b" > /dev/null 2>&1 || echo "bench $b round $round: rc $?" >> "$out/summary.md"
  done
done
{
  echo "## B | L | new auto r1 | new auto r2 | old auto r1 | old auto r2 | new wgmma r1 | r2 | old wgmma r1 | r2 (us)"
  col() { grep -E "^\| [0-9]" "$raw/$1.md" | cut -d'|' -f5; }
  paste -d'|' <(grep -E "^\| [0-9]" "$raw/mla_h128_p64_bf16_auto_1.md" | cut -d'|' -f2,3) \
    <(col mla_h128_p64_bf16_auto_1) <(col mla_h128_p64_bf16_auto_2) \
    <(col old_mla_h128_p64_bf16_auto_1) <(col old_mla_h128_p64_bf16_auto_2) \
    <(col mla_h128_p64_bf16_wg_1) <(col mla_h128_p64_bf16_wg_2) \
    <(col old_mla_h128_p64_bf16_wg_1) <(col old_mla_h128_p64_bf16_wg_2)
  for b in "${extra[@]}"; do
    echo "### $b: B | L | r1 | r2 (us)"
    paste -d'|' <(grep -E "^\| [0-9]" "$raw/${b}_1.md" | cut -d'|' -f2,3) <(col "${b}_1") <(col "${b}_2")
  done
} >> "$out/summary.md"
pa_fa3_mla "$out" "$raw" "$fi" "$batches" "$lengths"
tar czf "$out/raw.tgz" -C "$raw" .
cat "$out/summary.md"
