#!/usr/bin/env bash
# MLA decode at 16 heads (DeepSeek's 128 split 8 ways by tensor
# parallelism; the mma.sync kernel, one head block) with the splits merged
# together: automatic splits and forced 32 / 64 / 128, B 1 - 64 x L 1024 -
# 32768, then FlashInfer's FA3 MLA at 16 heads on the same shapes (FI: the
# staged .gpu-fi, or "" for none). One device call.
#
#   bench/run_mla_together.sh make DIR build/bin/pa-compile   # here (mla_h16_p64_bf16)
#   bench/sweep_mla16_together.sh STAGED OUT FI               # device
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
gpu="${1:?usage: sweep_mla16_together.sh STAGED OUT FI}"; out="${2:?OUT}"; fi="${3:-}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
raw="$(mktemp -d)"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > "$out/summary.md"
for s in 0 32 64 128; do
  timeout 120 "$R" bench-mla --splits "$s" --batches 1,2,4,8,16,64 --lengths 1024,8192,32768 \
    --sets 2 --reps 20 --out "$raw/h16_$s.md" "$B/mla_h16_p64_bf16" > /dev/null 2>&1 \
    || echo "bench S=$s: rc $?" >> "$out/summary.md"
done
if [[ -n "$fi" ]]; then
  eval "$(bash "$fi/kit/setup-on-device.sh" "$fi")" > /dev/null
  timeout 300 python3 "$root/bench/fi_mla_bench.py" --heads 16 --batches 1,2,4,8,16,64 --lens 1024,8192,32768 \
    --backends fa2,fa3 --out "$raw/fi.md" > "$raw/fi.log" 2>&1
fi
python3 - "$raw" >> "$out/summary.md" <<'PY'
import re, sys, os
raw = sys.argv[1]
cols = ["h16_0", "h16_32", "h16_64", "h16_128"]
rows = {}
for c in cols:
    p = os.path.join(raw, c + ".md")
    if not os.path.exists(p):
        continue
    for line in open(p):
        m = re.match(r"\| (\d+) \| (\d+) \| \d+ \| ([\d.]+)", line)
        if m:
            rows.setdefault((int(m[1]), int(m[2])), {})[c] = m[3]
print("## 16 heads, us: automatic / S=32 / S=64 / S=128")
print("| B | L | auto | 32 | 64 | 128 |")
print("|---:|---:|---:|---:|---:|---:|")
for k in sorted(rows):
    print(f"| {k[0]} | {k[1]} | " + " | ".join(rows[k].get(c, "-") for c in cols) + " |")
fi = os.path.join(raw, "fi.md")
if os.path.exists(fi):
    print("## FlashInfer MLA, 16 heads")
    print("".join(l for l in open(fi) if l.startswith("|")))
PY
tar czf "$out/raw.tgz" -C "$raw" .
cat "$out/summary.md"
