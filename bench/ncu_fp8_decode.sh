#!/usr/bin/env bash
# Why the fp8 decode reads its bytes slower than the f16 one (issue 9, the
# fp8 target): in one device call, the event-timed bench (clean L2
# eviction) of the f16 and fp8 GQA 4 decodes at 256 x 8192 and 64 x 32768
# (plus any extra fp8 bundles given, e.g. an HND cache or another
# conversion), then Nsight Compute on one launch of the f16 and the first
# fp8 bundle at 256 x 8192: speed of light, pipe utilization, instruction
# mix, warp stalls, memory; warp-state sampling per SASS instruction
# (top instructions in OUT/top_*.txt) and each cubin's SASS opcode counts.
# Carry build/gpu.
#
#   bench/ncu_fp8_decode.sh STAGED OUT F16_BUNDLE FP8_BUNDLE [FP8_BUNDLE...]
set -uo pipefail
gpu="${1:?STAGED}"; out="${2:?OUT}"; f16="${3:?F16_BUNDLE}"; fp8="${4:?FP8_BUNDLE}"
shift 3
R="$gpu/bin/pa-gpu-runner"
export PATH="$PATH:/usr/local/cuda/bin"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
for round in 1 2; do
  for b in "$f16" "$@"; do
    n=$(basename "$b")
    timeout 200 "$R" bench --batches 256,64 --lens 8192,32768 --l2-flush clean \
      --out "$out/bench_${n}_$round.md" "$b" > /dev/null 2>&1
    echo "== round $round $n"
    grep -E "^\| (B|256 \| 8192|64 \| 32768) " "$out/bench_${n}_$round.md"
  done
done
sections=(--section SpeedOfLight --section ComputeWorkloadAnalysis
          --section InstructionStats --section WarpStateStats
          --section SchedulerStats --section MemoryWorkloadAnalysis
          --section Occupancy --section SourceCounters --import-source no)
for b in "$f16" "$fp8"; do
  n=$(basename "$b")
  timeout 240 ncu -k regex:'^pa_decode$' --launch-skip 2 --launch-count 1 "${sections[@]}" \
    -o "$out/ncu_$n" -f "$R" bench --batches 256 --lens 8192 --reps 3 --warmup 1 \
    --max-sets 1 "$b" > "$out/ncu_run_$n.log" 2>&1
  ncu --import "$out/ncu_$n.ncu-rep" --page details > "$out/details_$n.txt" 2>&1
  ncu --import "$out/ncu_$n.ncu-rep" --page source --print-source sass --csv \
    > "$out/sass_$n.csv" 2> /dev/null
  python3 - "$out/sass_$n.csv" > "$out/top_$n.txt" <<'PY'
import csv, sys, collections
rows = list(csv.reader(open(sys.argv[1])))
hdr = next(i for i, r in enumerate(rows) if 'Source' in r)
h = rows[hdr]; data = rows[hdr + 1:]
src = h.index('Source')
si = next(i for i, c in enumerate(h) if c.startswith('Warp Stall Sampling (All'))
ex = next((i for i, c in enumerate(h) if c.startswith('Instructions Executed')), None)
def num(x):
    try: return float(x.replace(',', ''))
    except ValueError: return 0.0
tot = sum(num(r[si]) for r in data if len(r) > si)
print('total samples', tot)
byop = collections.Counter(); exop = collections.Counter()
for r in data:
    if len(r) <= si: continue
    op = r[src].split()[0] if r[src].split() else '?'
    if op.startswith('@'): op = r[src].split()[1]
    byop[op.split('.')[0]] += num(r[si])
    if ex is not None: exop[op.split('.')[0]] += num(r[ex])
print('samples by opcode:', ', '.join(f'{k} {100*v/max(tot,1):.1f}%' for k, v in byop.most_common(20)))
print('executed by opcode:', ', '.join(f'{k} {v:.3g}' for k, v in exop.most_common(25)))
for r in sorted(data, key=lambda r: -num(r[si]) if len(r) > si else 0)[:40]:
    print(f"{num(r[si]):8.0f} {100*num(r[si])/max(tot,1):5.1f}%  {r[src][:100]}")
PY
  echo "== $n"
  grep -E "Duration|DRAM Throughput|Memory Throughput|Compute \(SM\)|Issue Slots Busy|Executed Ipc Active|No Eligible|Achieved Occupancy|Registers Per|Pipe|Stall|Warp Cycles Per Issued" "$out/details_$n.txt" | head -40
  head -4 "$out/top_$n.txt"
done
for b in "$f16" "$fp8"; do
  n=$(basename "$b")
  cuobjdump -sass "$b/kernels.cubin" | awk '/Function : pa_decode$/{f=1} /Function : pa_decode_split/{f=0} f' \
    | grep -oE '^\s+/\*[0-9a-f]{4}\*/\s+(@!?U?P[0-9T] )?[A-Z0-9_]+' | awk '{print $NF}' \
    | sort | uniq -c | sort -rn > "$out/sassops_$n.txt"
  echo "== SASS ops $n: $(head -25 "$out/sassops_$n.txt" | awk '{printf "%s %s, ", $2, $1}')"
done
cd "$out" && tar czf ncu_fp8.tgz ./*.txt ./*.md ./*.log && rm -f ./*.txt ./*.md ./*.log ./*.csv
