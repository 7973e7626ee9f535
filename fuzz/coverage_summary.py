#!/usr/bin/env python3
"""Summarizes `llvm-cov export -summary-only` JSON for lib/: covered / total
lines per directory of lib/ and in all, over the files linked into the fuzz
targets, and the lib/ sources not linked into them (their lines count as
not covered in the second total).

  coverage_summary.py EXPORT.json REPO_ROOT"""
import collections
import json
import pathlib
import sys


def main():
    data = json.load(open(sys.argv[1]))
    root = pathlib.Path(sys.argv[2]).resolve()
    lib = root / "lib"
    per_dir = collections.defaultdict(lambda: [0, 0])
    gpu = [0, 0]  # the GPU lowering, which no target runs
    seen = set()
    for f in data["data"][0]["files"]:
        path = pathlib.Path(f["filename"]).resolve()
        try:
            rel = path.relative_to(lib)
        except ValueError:
            continue
        seen.add(path)
        lines = f["summary"]["lines"]
        d = per_dir[rel.parts[0] if len(rel.parts) > 1 else "."]
        d[0] += lines["covered"]
        d[1] += lines["count"]
        if rel.parts[:2] == ("Conversion", "PAToGPU") or \
                rel.as_posix() == "Pipelines/GPUPipeline.cpp":
            gpu[0] += lines["covered"]
            gpu[1] += lines["count"]
    cov = sum(d[0] for d in per_dir.values())
    tot = sum(d[1] for d in per_dir.values())
    for name in sorted(per_dir):
        c, t = per_dir[name]
        print(f"  lib/{name:<12} {c:6d} / {t:6d} lines  {100.0 * c / max(t, 1):5.1f}%")
    print(f"  lib/ (linked files) {cov:6d} / {tot:6d} lines  "
          f"{100.0 * cov / max(tot, 1):5.1f}%")
    c, t = cov - gpu[0], tot - gpu[1]
    print(f"  lib/ without the GPU lowering (Conversion/PAToGPU, "
          f"GPUPipeline.cpp: {gpu[1]} lines) {c:6d} / {t:6d} lines  "
          f"{100.0 * c / max(t, 1):5.1f}%")
    # Sources of lib/ the targets do not link: their non-blank, non-comment
    # lines, a stand-in for the executable lines llvm-cov would count.
    absent = 0
    names = []
    for src in sorted(lib.rglob("*.cpp")):
        if src.resolve() in seen:
            continue
        n = sum(1 for l in src.read_text().splitlines()
                if l.strip() and not l.strip().startswith("//"))
        absent += n
        names.append(f"{src.relative_to(root)} ({n})")
    print(f"  lib/ (all sources)  {cov:6d} / {tot + absent:6d} lines  "
          f"{100.0 * cov / max(tot + absent, 1):5.1f}%  (not linked: "
          f"{', '.join(names) if names else 'none'})")


if __name__ == "__main__":
    main()
