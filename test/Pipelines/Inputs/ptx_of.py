#!/usr/bin/env python3
"""Prints the PTX of the first gpu.binary in MLIR text (stdin or a file):
the `assembly` string of its #gpu.object, unescaped. Exits 1 if there is
none."""
import re
import sys


def ptx_of(mlir_text):
    m = re.search(r'assembly = "((?:[^"\\]|\\.)*)"', mlir_text, re.S)
    if not m:
        return None
    # MLIR escapes a string attribute's bytes as \XX (hex), \\ and \".
    return re.sub(r'\\([0-9A-Fa-f]{2}|\\|")',
                  lambda e: e.group(1) if len(e.group(1)) == 1
                  else chr(int(e.group(1), 16)), m.group(1))


if __name__ == "__main__":
    text = open(sys.argv[1]).read() if len(sys.argv) > 1 else sys.stdin.read()
    ptx = ptx_of(text)
    if ptx is None:
        sys.exit("ptx_of.py: no gpu.binary with PTX in the input")
    sys.stdout.write(ptx)
