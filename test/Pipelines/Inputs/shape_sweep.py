#!/usr/bin/env python3
"""Compiles kernels over a sweep of shapes with the default kernel shape of
`pa-lower-to-nvvm`, assembles the PTX with `ptxas -v`, and checks that no
kernel spills to local memory (and, for decode, that the static shared
memory of each stays within 48 KiB). Prints one summary line and one line
per failing kernel; exits 1 on any failure.

  --kernel decode (default): every GQA group in --groups, head dim
    64/128/256 and f16/bf16/f32, decode and decode_partial (NHD joint cache,
    page size 16);
  --kernel prefill: pa.prefill, causal and unmasked, f16/bf16, head dims
    16..224 in steps of 16, GQA groups in --groups.

    shape_sweep.py --pa-opt PATH --ptxas PATH [--kernel decode|prefill]
                   [--chip sm_90] [--groups 1-32]
                   [--options "decode-tile-kv=256"]
"""
import argparse
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, __import__("os").path.dirname(__file__))
from ptx_of import ptx_of  # noqa: E402

DTYPES = ["f16", "bf16", "f32"]
HEAD_DIMS = [64, 128, 256]


PREFILL_DTYPES = ["f16", "bf16"]
PREFILL_HEAD_DIMS = list(range(16, 225, 16))
PREFILL_MASKS = ["causal", "none"]


def configs(groups):
    for dtype in DTYPES:
        for d in HEAD_DIMS:
            for g in groups:
                yield dtype, d, g


def prefill_configs(groups, head_dims):
    for dtype in PREFILL_DTYPES:
        for d in head_dims:
            for g in groups:
                for mask in PREFILL_MASKS:
                    yield dtype, d, g, mask


def prefill_program(cfgs):
    out = []
    for i, (dtype, d, g, mask) in enumerate(cfgs):
        hkv = 2
        hq = hkv * g
        q = f"memref<?x{hq}x{d}x{dtype}>"
        lse = f"memref<?x{hq}xf32>"
        kv = f"memref<?x2x16x{hkv}x{d}x{dtype}>"
        idx = "memref<?xi32>"
        cache = f"#pa.paged_kv<nhd, page_size = 16, kv_heads = {hkv}, head_dim = {d}>"
        attrs = f"cache = {cache}" + (", causal" if mask == "causal" else "")
        out.append(
            f"func.func @k{i}(%q: {q}, %qi: {idx}, %kv: {kv}, %ip: {idx}, "
            f"%ix: {idx}, %lp: {idx}, %o: {q}, %l: {lse}) {{\n"
            f"  pa.prefill q(%q, %qi : {q}, {idx}) kv(%kv : {kv}) "
            f"pages(%ip, %ix, %lp : {idx}, {idx}, {idx}) "
            f"outs(%o, %l : {q}, {lse}) {{{attrs}}}\n  return\n}}\n")
    return "".join(out)


def program(cfgs):
    out = []
    for i, (dtype, d, g) in enumerate(cfgs):
        hkv = 2
        hq = hkv * g
        q = f"memref<?x{hq}x{d}x{dtype}>"
        part = f"memref<?x{hq}x{d}xf32>"
        lse = f"memref<?x{hq}xf32>"
        kv = f"memref<?x2x16x{hkv}x{d}x{dtype}>"
        idx = "memref<?xi32>"
        cache = f"#pa.paged_kv<nhd, page_size = 16, kv_heads = {hkv}, head_dim = {d}>"
        out.append(
            f"func.func @k{i}(%q: {q}, %kv: {kv}, %ip: {idx}, %ix: {idx}, "
            f"%lp: {idx}, %wi: {idx}, %wr: {idx}, %ws: {idx}, %we: {idx}, "
            f"%o: {q}, %l: {lse}, %op: {part}, %ol: {lse}) {{\n"
            f"  pa.decode q(%q : {q}) kv(%kv : {kv}) pages(%ip, %ix, %lp : "
            f"{idx}, {idx}, {idx}) outs(%o, %l : {q}, {lse}) {{cache = {cache}}}\n"
            f"  pa.decode_partial q(%q : {q}) kv(%kv : {kv}) pages(%ip, %ix, "
            f"%lp : {idx}, {idx}, {idx}) work(%wi, %wr, %ws, %we : {idx}, "
            f"{idx}, {idx}, {idx}) outs(%op, %ol : {part}, {lse}) "
            f"{{cache = {cache}}}\n  return\n}}\n")
    return "".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pa-opt", required=True)
    ap.add_argument("--ptxas", required=True)
    ap.add_argument("--chip", default="sm_90")
    ap.add_argument("--groups", default="1-32")
    ap.add_argument("--kernel", choices=["decode", "prefill"], default="decode")
    ap.add_argument("--max-spill-bytes", type=int, default=0,
                    help="spill stores / loads / stack a kernel may have")
    ap.add_argument("--head-dims", default="",
                    help="prefill head dims, comma-separated (default "
                         "16..224 by 16)")
    ap.add_argument("--options", default="",
                    help="extra pa-lower-to-nvvm options (a forced shape)")
    args = ap.parse_args()
    if "-" in args.groups:
        lo, hi = (int(x) for x in args.groups.split("-"))
        groups = list(range(lo, hi + 1))
    else:
        groups = [int(x) for x in args.groups.split(",")]
    prefill = args.kernel == "prefill"
    head_dims = ([int(x) for x in args.head_dims.split(",")]
                 if args.head_dims else PREFILL_HEAD_DIMS)
    cfgs = list(prefill_configs(groups, head_dims) if prefill
                else configs(groups))
    with tempfile.TemporaryDirectory() as tmp:
        src = f"{tmp}/sweep.mlir"
        with open(src, "w") as f:
            f.write((prefill_program if prefill else program)(cfgs))
        # Memref form: run the kernel half of the pipeline without
        # bufferization, then the upstream lowering to PTX.
        r = subprocess.run(
            [args.pa_opt, src,
             f"--pa-lower-to-nvvm=chip={args.chip} format=isa {args.options}"],
            capture_output=True, text=True)
        if r.returncode != 0:
            print("FAIL: pa-opt:", r.stderr[-4000:])
            return 1
        ptx = ptx_of(r.stdout)
        if ptx is None:
            print("FAIL: no PTX in the gpu.binary")
            return 1
        with open(f"{tmp}/sweep.ptx", "w") as f:
            f.write(ptx)
        p = subprocess.run(
            [args.ptxas, "-v", f"--gpu-name={args.chip}", f"{tmp}/sweep.ptx",
             "-o", f"{tmp}/sweep.cubin"], capture_output=True, text=True)
        if p.returncode != 0:
            print("FAIL: ptxas:", p.stderr[-4000:])
            return 1
    # ptxas -v: "Compiling entry function 'NAME' for 'sm_90'", then
    # "N bytes stack frame, S bytes spill stores, L bytes spill loads",
    # "Used R registers, ... X bytes smem ...".
    kernels = {}
    cur = None
    for line in p.stderr.splitlines():
        m = re.search(r"Compiling entry function '(\w+)'", line)
        if m:
            cur = kernels.setdefault(m.group(1), {})
            continue
        if cur is None:
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, "
                      r"(\d+) bytes spill loads", line)
        if m:
            cur["stack"], cur["stores"], cur["loads"] = map(int, m.groups())
        m = re.search(r"Used (\d+) registers", line)
        if m:
            cur["regs"] = int(m.group(1))
            s = re.search(r"(\d+) bytes smem", line)
            cur["smem"] = int(s.group(1)) if s else 0
    # Kernels are named pa_decode, pa_decode_0, ... in program order.
    expected = (1 if prefill else 2) * len(cfgs)
    bad = []
    for name, k in sorted(kernels.items()):
        limit = args.max_spill_bytes
        if (k.get("stores", limit + 1) > limit or
                k.get("loads", limit + 1) > limit or
                k.get("stack", limit + 1) > limit):
            bad.append(f"{name}: {k.get('stack')} bytes stack, "
                       f"{k.get('stores')} spill stores, "
                       f"{k.get('loads')} spill loads, {k.get('regs')} regs")
        if not prefill and k.get("smem", 0) > 48 * 1024:
            bad.append(f"{name}: {k['smem']} bytes of shared memory")
    regs = max(k.get("regs", 0) for k in kernels.values()) if kernels else 0
    if prefill:
        dims = (f"{head_dims[0]}..{head_dims[-1]}"
                if head_dims == PREFILL_HEAD_DIMS else f"{head_dims}")
        what = (f"groups {args.groups} x D {dims} x {PREFILL_DTYPES} x "
                f"{PREFILL_MASKS}")
    else:
        what = f"groups {groups[0]}..{groups[-1]} x D {HEAD_DIMS} x {DTYPES}"
    spill = max((max(k.get("stores", 0), k.get("loads", 0))
                 for k in kernels.values()), default=0)
    spilling = sum(1 for k in kernels.values()
                   if k.get("stores", 0) or k.get("loads", 0))
    print(f"shape sweep: {len(kernels)} kernels of {expected} expected "
          f"({len(cfgs)} configurations: {what}), {len(bad)} failing, "
          f"at most {regs} registers")
    if args.max_spill_bytes:
        print(f"spills: {spilling} kernels spill, at most {spill} bytes "
              f"(limit {args.max_spill_bytes})")
    for b in bad:
        print("FAIL:", b)
    return 0 if not bad and len(kernels) == expected else 1


if __name__ == "__main__":
    sys.exit(main())
