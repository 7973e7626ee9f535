#!/usr/bin/env bash
# The MLA runtime's kernel choice at few requests (chooseMLASmall): the
# wgmma kernel alone against the mma.sync kernel alone (128 heads, bundles
# mla_wgmma and mla_mmasync) over B x L, twice interleaved, one device call.
#
#   bench/sweep_mla_kernels.sh STAGED OUT
set -uo pipefail
gpu="${1:?usage: sweep_mla_kernels.sh STAGED OUT}"; out="${2:?OUT}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
raw="$(mktemp -d)"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > "$out/summary.md"
for round in 1 2; do
  for v in wgmma mmasync; do
    timeout 200 "$R" bench-mla --batches 1,2,4,8,16 --lengths 2048,8192,32768,65536 --sets 2 \
      --out "$raw/${v}_$round.md" "$B/mla_$v" > /dev/null 2>&1 || echo "bench $v: rc $?" >> "$out/summary.md"
  done
done
{
  echo "## B | L | wgmma r1 | wgmma r2 | mma.sync r1 | mma.sync r2 (us)"
  paste -d'|' <(grep -E "^\| [0-9]" "$raw/wgmma_1.md" | cut -d'|' -f2,3,5) \
              <(grep -E "^\| [0-9]" "$raw/wgmma_2.md" | cut -d'|' -f5) \
              <(grep -E "^\| [0-9]" "$raw/mmasync_1.md" | cut -d'|' -f5) \
              <(grep -E "^\| [0-9]" "$raw/mmasync_2.md" | cut -d'|' -f5)
} >> "$out/summary.md"
tar czf "$out/raw.tgz" -C "$raw" .
cat "$out/summary.md"
