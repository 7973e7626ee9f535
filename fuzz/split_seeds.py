#!/usr/bin/env python3
"""Writes the seed inputs of pa-ir-fuzz: every module of examples/*.mlir and
of the lit tests of the CPU path (split at `// -----`), comment lines
dropped, one file per module named by its content hash. Modules above the
target's 4 KiB bound are skipped (the target would skip them too).

  fuzz/split_seeds.py OUT_DIR

scripts/sanitize.sh --regenerate-corpus merges these into fuzz/corpus/ir
(libFuzzer -merge=1 keeps the inputs that add coverage)."""
import hashlib
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
# The CPU path's tests: the GPU conversions and pipelines name the gpu /
# nvvm dialects, which the target skips.
GLOBS = ["examples/*.mlir", "test/Dialect/*.mlir", "test/Transforms/*.mlir",
         "test/Conversion/pa-to-loops.mlir", "test/Conversion/mla-to-loops.mlir",
         "test/Conversion/expand-fp8.mlir",
         "test/Conversion/assert-to-stderr.mlir",
         "test/Integration/CPU/*.mlir", "test/Examples/*.mlir"]
MAX_BYTES = 4096


def modules(text):
    for part in re.split(r"^// -----\s*$", text, flags=re.M):
        lines = [l for l in part.splitlines() if not l.lstrip().startswith("//")]
        body = "\n".join(l.rstrip() for l in lines).strip()
        if body:
            yield body + "\n"


def main():
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    n = skipped = 0
    for g in GLOBS:
        for f in sorted(ROOT.glob(g)):
            for m in modules(f.read_text()):
                data = m.encode()
                if len(data) > MAX_BYTES:
                    skipped += 1
                    continue
                (out / hashlib.sha1(data).hexdigest()).write_bytes(data)
                n += 1
    print(f"split_seeds: {n} modules written to {out}, {skipped} above "
          f"{MAX_BYTES} bytes skipped")


if __name__ == "__main__":
    main()
