#!/usr/bin/env bash
# MLA decode: time against the number of key splits (pa_mla_decode's
# num_splits), to fit the automatic choice (pa::rt::mlaSplits).
#
#   bench/sweep_mla_splits.sh STAGED OUT    # device; bundles of run_mla.sh make
set -uo pipefail
gpu="${1:?STAGED}"; out="${2:?OUT}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
for n in mla_h16_p64_bf16 mla_h128_p64_bf16; do
  for s in 0 1 2 4 8 16 32 64 128; do
    "$R" bench-mla --batches 1,4,16,64 --lengths 1024,8192 --splits "$s" \
      --reps 20 --out "$out/${n}_s$s.md" "$B/$n" > /dev/null 2>&1
  done
  echo "## $n (us; rows B x L, columns splits, 0 = automatic)"
  python3 - "$out" "$n" <<'PY'
import re, sys
out, n = sys.argv[1], sys.argv[2]
splits = [0, 1, 2, 4, 8, 16, 32, 64, 128]
rows = {}
for s in splits:
    try:
        text = open(f"{out}/{n}_s{s}.md").read()
    except OSError:
        continue
    for line in text.splitlines():
        m = re.match(r"\| (\d+) \| (\d+) \| \d+ \| ([\d.]+) \|", line)
        if m:
            rows.setdefault((int(m[1]), int(m[2])), {})[s] = float(m[3])
print("| B x L | " + " | ".join(str(s) for s in splits) + " |")
print("|---|" + "---:|" * len(splits))
for (b, l), t in sorted(rows.items()):
    print(f"| {b} x {l} | " + " | ".join(f"{t[s]:.1f}" if s in t else "-"
                                        for s in splits) + " |")
PY
done
