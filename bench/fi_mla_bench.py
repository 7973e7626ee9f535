#!/usr/bin/env python3
"""FlashInfer's BatchMLAPagedAttentionWrapper on the shapes of bench-mla.

  fi_mla_bench.py --heads 128 --batches 1,16,64,128 --lens 1024,4096,8192 \
      --backends fa2,fa3 --out OUT.md

The peer of `pa-gpu-runner bench-mla` (same method): a latent cache
[pages, 64, 512 + 64] (bf16) packed as FlashInfer's MLA layout, pages in a
random order, one query token per request, sm_scale 1/sqrt(192). Timing: 5
warm-up calls, then 30 calls, each after zeroing a 256 MiB buffer (evicts
L2), CUDA events around run() alone; median and min. plan() runs once,
before. A first small case is checked against a float32 torch reference so
that the timed call is the right attention.
"""

import argparse
import math
import os
import statistics
import sys
import traceback

import torch

SM_SCALE = 1.0 / math.sqrt(192.0)


def log(*a):
    print(*a, flush=True)


def tables(B, L, P, gen):
    per = (L + P - 1) // P
    pages = B * per
    order = torch.randperm(pages, generator=gen).to(torch.int32)
    indptr = torch.arange(0, B + 1, dtype=torch.int32) * per
    kv_len = torch.full((B,), L, dtype=torch.int32)
    return pages, indptr, order, kv_len


def make(backend, B, L, H, P, dt, kv, q_nope, q_pe, indptr, indices, kv_len):
    import flashinfer

    ws = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    w = flashinfer.mla.BatchMLAPagedAttentionWrapper(ws, backend=backend)
    qo_indptr = torch.arange(0, B + 1, dtype=torch.int32, device="cuda")
    w.plan(qo_indptr, indptr.cuda(), indices.cuda(), kv_len.cuda(), H, 512,
           64, P, False, SM_SCALE, dt, dt, kv_cache_layout="packed",
           query_layout="split")
    return lambda: w.run(query=(q_nope, q_pe), kv_cache=kv)


def reference(q_nope, q_pe, kv, indptr, indices, kv_len, P):
    outs = []
    for b in range(q_nope.shape[0]):
        pages = indices[indptr[b]:indptr[b + 1]].long().cuda()
        rows = kv[pages].reshape(-1, 576)[: int(kv_len[b])].float()
        q = torch.cat([q_nope[b], q_pe[b]], dim=-1).float()  # [H, 576]
        s = (q @ rows.T) * SM_SCALE
        p = torch.softmax(s, dim=-1)
        outs.append(p @ rows[:, :512])
    return torch.stack(outs)


def timed(fn, flush, warmup=5, reps=30):
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(reps):
        flush.zero_()
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) * 1e3)
    return statistics.median(ts), min(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--heads", type=int, default=128)
    ap.add_argument("--batches", default="1,16,64,128")
    ap.add_argument("--lens", default="1024,4096,8192")
    ap.add_argument("--page", type=int, default=64)
    ap.add_argument("--backends", default="fa2,fa3")
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--out", default="")
    ap.add_argument("--l2-flush", choices=["dirty", "clean"], default="dirty",
                    help="L2 eviction: zero 256 MiB (dirty) or zero it and read it back (clean), "
                         "as pa-gpu-runner's --l2-flush")
    a = ap.parse_args()
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[a.dtype]
    H, P = a.heads, a.page
    gen = torch.Generator().manual_seed(1)
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    if a.l2_flush == "clean":
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from fi_bench_flush import CleanFlush
        flush = CleanFlush(flush)
    lines = [f"## FlashInfer MLA decode (H {H}, P {P}, {a.dtype})", "",
             f"- device: {torch.cuda.get_device_name()}",
             "- method: run() of BatchMLAPagedAttentionWrapper, plan once; "
             "median of 30 after 5 warm-ups, CUDA events, 256 MiB zeroed "
             f"before each call (--l2-flush {a.l2_flush})", ""]
    backends = a.backends.split(",")
    ok = {}
    # Correctness of each backend on a small ragged-free case first.
    for be in backends:
        try:
            B, L = 3, 300
            pages, indptr, indices, kv_len = tables(B, L, P, gen)
            kv = torch.randn(pages, P, 576, dtype=dt, device="cuda")
            qn = torch.randn(B, H, 512, dtype=dt, device="cuda")
            qp = torch.randn(B, H, 64, dtype=dt, device="cuda")
            fn = make(be, B, L, H, P, dt, kv, qn, qp, indptr, indices, kv_len)
            o = fn()
            if isinstance(o, tuple):
                o = o[0]
            ref = reference(qn, qp, kv, indptr, indices, kv_len, P)
            err = ((o.float() - ref).norm() / ref.norm()).item()
            ok[be] = err < 2e-2
            lines.append(f"- {be}: rel L2 error vs float32 torch {err:.2e} "
                         f"({'ok' if ok[be] else 'WRONG'})")
        except Exception as e:  # noqa: BLE001
            ok[be] = False
            lines.append(f"- {be}: unavailable: "
                         f"{str(e).strip().splitlines()[0][:200] if str(e).strip() else type(e).__name__}")
            traceback.print_exc()
    lines += ["", "| B | L | " + " | ".join(f"{b} us (min)" for b in backends)
              + " |", "|---:|---:|" + "---:|" * len(backends)]
    for B in map(int, a.batches.split(",")):
        for L in map(int, a.lens.split(",")):
            pages, indptr, indices, kv_len = tables(B, L, P, gen)
            kv = torch.randn(pages, P, 576, dtype=dt, device="cuda")
            qn = torch.randn(B, H, 512, dtype=dt, device="cuda")
            qp = torch.randn(B, H, 64, dtype=dt, device="cuda")
            cells = []
            for be in backends:
                if not ok[be]:
                    cells.append("-")
                    continue
                try:
                    fn = make(be, B, L, H, P, dt, kv, qn, qp, indptr,
                              indices, kv_len)
                    med, mn = timed(fn, flush)
                    cells.append(f"{med:.1f} ({mn:.1f})")
                except Exception as e:  # noqa: BLE001
                    cells.append("err: " + str(e).strip().splitlines()[0][:60]
                                 .replace("|", "/"))
            lines.append(f"| {B} | {L} | " + " | ".join(cells) + " |")
            log(lines[-1])
            del kv
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    sys.exit(main())
