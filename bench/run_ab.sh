#!/usr/bin/env bash
# Decode bundles side by side in one device call: `check --quick` of every
# bundle, then `bench` of each over the grid (PA_GRID, default B 1/16/64/256
# x L 512/2048/8192/32768, 9 GiB of KV at most, --l2-flush clean), two
# rounds interleaved; a short table last.
#
#   bench/run_ab.sh STAGED OUT BUNDLE...    # device; bundles under STAGED/bundles
set -uo pipefail
gpu="${1:?usage: run_ab.sh STAGED OUT BUNDLE...}"; out="${2:?OUT}"; shift 2
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
export PATH="$PATH:/usr/local/cuda/bin"
read -r -a grid <<< "${PA_GRID:---batches 1,16,64,256 --lens 512,2048,8192,32768 --max-kv-gib 9 --l2-flush clean}"
raw="$(mktemp -d)"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; echo "grid: ${grid[*]}"; } > "$out/summary.md"
timeout 300 "$R" check --quick "${@/#/$B/}" > "$raw/check.log" 2>&1
echo "check rc $?: $(grep -E "all bundles|FAIL" "$raw/check.log" | head -5 | tr '\n' ' ')" >> "$out/summary.md"
[[ -n "${PA_SANITIZE:-}" ]] && for tool in memcheck racecheck; do
  echo "$tool $PA_SANITIZE: $(timeout 200 compute-sanitizer --tool $tool --report-api-errors no "$R" check --quick "$B/$PA_SANITIZE" 2>&1 \
    | grep -E "SUMMARY|FAIL" | sort -u | tr '\n' ' ')" >> "$out/summary.md"
done
for round in 1 2; do
  for v in "$@"; do
    timeout 150 "$R" bench "${grid[@]}" --out "$raw/${v}_$round.md" "$B/$v" > /dev/null 2>&1 \
      || echo "bench $v round $round: rc $?" >> "$out/summary.md"
  done
done
{
  echo "## B | L | plan | r1 us | r2 us | % read roof r2 | same-bytes read us r2"
  grep -m1 "read roof:" "$raw/${1}_1.md"
  for v in "$@"; do
    echo "### $v"
    paste -d'|' <(grep -E "^\| [0-9]" "$raw/${v}_1.md" | cut -d'|' -f2,3,5,7) \
                <(grep -E "^\| [0-9]" "$raw/${v}_2.md" | cut -d'|' -f7,10,12)
  done
} >> "$out/summary.md"
tar czf "$out/raw.tgz" -C "$raw" .
cat "$out/summary.md"
