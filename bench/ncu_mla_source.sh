#!/usr/bin/env bash
# Where the MLA decode kernel's warps stall, instruction by instruction:
# Nsight Compute's warp-state sampling of one launch (B x L, no split),
# printed as SASS with its stall samples (PA_SPLITS: splits, default 1; 0 automatic); the top instructions by samples
# and the samples summed by stall reason go to OUT/top.txt.
#
#   bench/ncu_mla_source.sh STAGED OUT BUNDLE [B] [L]
set -uo pipefail
gpu="${1:?STAGED}"; out="${2:?OUT}"; bundle="${3:?BUNDLE}"
b="${4:-64}"; l="${5:-8192}"
R="$gpu/bin/pa-gpu-runner"
export PATH="$PATH:/usr/local/cuda/bin"
timeout 300 ncu -k regex:'pa_mla' --launch-skip 2 --launch-count 1 \
  --section WarpStateStats --section SourceCounters --import-source no \
  -o "$out/mla" -f "$R" bench-mla --batches "$b" --lengths "$l" --splits "${PA_SPLITS:-1}" \
  --reps 3 --warmup 1 "$bundle" > "$out/ncu_run.log" 2>&1
timeout 200 ncu --import "$out/mla.ncu-rep" --page source --print-source sass --csv \
  > "$out/sass.csv" 2> "$out/sass.err"
python3 - "$out/sass.csv" > "$out/top.txt" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
hdr = next(i for i, r in enumerate(rows) if any('Source' == c for c in r))
h = rows[hdr]; data = rows[hdr + 1:]
src = h.index('Source')
samp = [i for i, c in enumerate(h) if c.startswith('Warp Stall Sampling (All')]
si = samp[0] if samp else None
print('columns:', h)
def num(x):
    try: return float(x.replace(',', ''))
    except: return 0.0
tot = sum(num(r[si]) for r in data if len(r) > si)
print('total samples', tot)
for r in sorted(data, key=lambda r: -num(r[si]) if len(r) > si else 0)[:60]:
    print(f"{num(r[si]):8.0f} {100*num(r[si])/max(tot,1):5.1f}%  {r[src][:110]}")
PY
head -80 "$out/top.txt"
