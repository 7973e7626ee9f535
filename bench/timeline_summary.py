#!/usr/bin/env python3
"""Summarizes bench/ptx_timeline.py's per-CTA lines (an experiment's tool).

    timeline_summary.py FILE

Splits the lines into launches (a gap of 20 us between CTA starts: the
bench's L2 eviction between launches takes longer), and
prints for each launch, in us from its first CTA's start: the spread of the
CTAs' starts, when their first K / V tile was in (t1), their KV loop done
(t2), their arrival done (t3) and their end (t4), as min / median / p90 /
max, and the kernel's span.
"""
import sys


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * (len(v) - 1) + 0.5))]


def main():
    rows = []
    for line in open(sys.argv[1]):
        f = line.split()
        if len(f) == 9 and f[0] == "T":
            rows.append([int(x) for x in f[1:]])
    rows.sort(key=lambda r: r[3])
    launches, cur = [], []
    for r in rows:
        if cur and r[3] - cur[-1][3] > 20000:
            launches.append(cur)
            cur = []
        cur.append(r)
    if cur:
        launches.append(cur)
    print(f"{len(rows)} CTA lines, {len(launches)} launches")
    for n, l in enumerate(launches):
        base = min(r[3] for r in l)
        line = [f"launch {n}: {len(l)} CTAs, span {(max(r[7] for r in l) - base) / 1e3:.2f} us"]
        for name, i in (("start", 3), ("first KV", 4), ("loop done", 5),
                        ("arrived", 6), ("end", 7)):
            v = [(r[i] - base) / 1e3 for r in l if r[i] > 0]
            if v:
                line.append(f"{name} {pct(v, 0):.2f}/{pct(v, .5):.2f}/"
                            f"{pct(v, .9):.2f}/{pct(v, 1):.2f}")
        loop = [(r[5] - r[4]) / 1e3 for r in l if r[5] > 0 and r[4] > 0]
        if loop:
            line.append(f"loop (t2 - t1) {pct(loop, 0):.2f}/{pct(loop, .5):.2f}/"
                        f"{pct(loop, .9):.2f}/{pct(loop, 1):.2f}")
        print("; ".join(line))
        if n == len(launches) - 1:
            print("  last to finish (x y smid: t0 t1 t2 t3 t4 us):")
            for r in sorted(l, key=lambda r: r[7])[-6:]:
                t = " ".join(f"{(x - base) / 1e3:.2f}" if x else "-"
                             for x in r[3:])
                print(f"   {r[0]} {r[1]} {r[2]}: {t}")


if __name__ == "__main__":
    main()
