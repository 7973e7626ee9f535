#!/usr/bin/env bash
# The MLA split count and kernel choice once the splits merge together
# (issue 9): forced splits on the 128-head wgmma-only bundle and the
# mma.sync-only one (run_mla_together.sh make builds the former; this adds
# the latter), B 1 / 2 / 4 / 8 x L 1024 - 65536, one device call. A grid
# that does not fit at once falls back to the last CTA's merge.
#
#   bench/sweep_mla_together_splits.sh make DIR build/bin/pa-compile   # here
#   bench/sweep_mla_together_splits.sh run STAGED OUT                  # device
#     (PA_SWEEP_RUNS, PA_SWEEP_BATCHES, PA_SWEEP_LENGTHS: below)
set -uo pipefail
mode="${1:?usage: sweep_mla_together_splits.sh make DIR PA_COMPILE | run STAGED OUT}"
if [[ "$mode" == make ]]; then
  out="${2:?DIR}"; pac="${3:?PA_COMPILE}"
  "$pac" --kernels mla --head-dim 512 --kpe 64 --mla-heads 128 --page-size 64 \
    --dtype bf16 --sm-scale 0.0721687836 --mla-mma mma.sync --chip sm_90a \
    -o "$out/mla_h128_p64_bf16_sync"
  exit $?
fi
gpu="${2:?STAGED}"; out="${3:?OUT}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
raw="$(mktemp -d)"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > "$out/summary.md"
# PA_SWEEP_RUNS: "kernel splits [merge]" entries (kernel wg / sync, merge
# auto / last); PA_SWEEP_BATCHES / PA_SWEEP_LENGTHS: the shapes.
if [[ -n "${PA_SWEEP_RUNS:-}" ]]; then
  IFS=, read -r -a runs <<<"$PA_SWEEP_RUNS"
else
  runs=("wg 0" "wg 16" "wg 32" "wg 48" "wg 64" "sync 0" "sync 16" "sync 24" "sync 32")
fi
batches="${PA_SWEEP_BATCHES:-1,2,4,8}"; lengths="${PA_SWEEP_LENGTHS:-1024,4096,8192,32768,65536}"
for r in "${runs[@]}"; do
  read -r k s m <<<"$r"; m="${m:-auto}"
  timeout 120 "$R" bench-mla --splits "$s" --split-merge "$m" --batches "$batches" --lengths "$lengths" \
    --sets 2 --reps 20 --out "$raw/${k}_${s}_$m.md" "$B/mla_h128_p64_bf16_$k" > /dev/null 2>&1 \
    || echo "bench $k $s $m: rc $?" >> "$out/summary.md"
done
{
  hdr="## B | L"; cols=()
  for r in "${runs[@]}"; do
    read -r k s m <<<"$r"; m="${m:-auto}"; hdr+=" | $k S=$s $m"; cols+=("$raw/${k}_${s}_$m.md")
  done
  echo "$hdr (us; S=0 automatic)"
  # The columns as files (process substitutions kept in an array close
  # before paste reads them).
  n=0; args=()
  for f in "${cols[@]}"; do
    if (( n == 0 )); then grep -E "^\| [0-9]" "$f" | cut -d'|' -f2,3,5 > "$raw/col_$n"
    else grep -E "^\| [0-9]" "$f" | cut -d'|' -f5 > "$raw/col_$n"; fi
    args+=("$raw/col_$n"); n=$((n + 1))
  done
  paste -d'|' "${args[@]}"
} >> "$out/summary.md"
tar czf "$out/raw.tgz" -C "$raw" .
cat "$out/summary.md"
