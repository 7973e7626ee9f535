#!/usr/bin/env python3
# ===- sdpa_baseline.py - PyTorch SDPA decode baseline ----------------------===#
#
# Part of the PagedAttn project.
#
# ===------------------------------------------------------------------------===#
#
# The decode shapes of `pa-gpu-runner bench` through PyTorch's
# scaled_dot_product_attention with the flash and cuDNN backends, the KV
# stored contiguously ([B, Hkv, L, D], fp16), GQA through enable_gqa=True
# (or, when a backend refuses it, K/V expanded with repeat_interleave outside
# the timing, counted as the bytes the kernel then reads). Same method as the
# bench: L2 evicted before every timed call (a 256 MiB fill, not timed), CUDA
# events around each call, median over the timed calls after warm-up, input
# sets rotated when memory allows. Prints a markdown table (and writes it to
# --out); GB/s = (K + V + q + o bytes) / time, 1 GB = 1e9 B.
#
# ===------------------------------------------------------------------------===#

import argparse
import datetime
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

GIB = 1024**3


def int_list(s):
    return [int(x) for x in s.split(",") if x]


def time_calls(call, flush, warmup, reps):
    """Median / min microseconds of `call(i)`, L2 evicted before each call."""
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(warmup):
        flush.fill_(i & 0xFF)
        call(i)
    for i in range(reps):
        flush.fill_((i + 7) & 0xFF)
        starts[i].record()
        call(warmup + i)
        ends[i].record()
    torch.cuda.synchronize()
    us = [s.elapsed_time(e) * 1000.0 for s, e in zip(starts, ends)]
    return statistics.median(us), min(us)


def copy_ceiling(flush, gib, reps):
    n = int(gib * GIB) // 2
    src = torch.rand(n, dtype=torch.float16, device="cuda")
    dst = torch.empty_like(src)
    t, _ = time_calls(lambda i: dst.copy_(src), flush, 2, reps)
    bw = 2.0 * n * 2 / t / 1e3
    del src, dst
    torch.cuda.empty_cache()
    return bw


BACKENDS = [("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)]


def bench_config(args, flush, B, L, hkv, rows):
    hq, d = args.hq, args.head_dim
    kv_bytes = 2.0 * B * hkv * L * d * 2
    qo_bytes = 2.0 * B * hq * d * 2
    heads = f"{hq}/{hkv}"
    if kv_bytes > args.max_kv_gib * GIB:
        rows.append(f"| {B} | {L} | {heads} | all | skipped: KV {kv_bytes / GIB:.3g} GiB > "
                    f"{args.max_kv_gib:.3g} GiB | | | | |")
        print(rows[-1], flush=True)
        return
    free, _ = torch.cuda.mem_get_info()
    sets = min(args.max_sets, int((free - 4 * GIB) // kv_bytes))
    if sets < 1:
        rows.append(f"| {B} | {L} | {heads} | all | skipped: KV {kv_bytes / GIB:.3g} GiB does "
                    f"not fit ({free / GIB:.3g} GiB free) | | | | |")
        print(rows[-1], flush=True)
        return
    qs, ks, vs = [], [], []
    for _ in range(sets):
        # In place: no temporaries of the size of a cache.
        qs.append(torch.empty(B, hq, 1, d, dtype=torch.float16, device="cuda").uniform_(-1, 1))
        ks.append(torch.empty(B, hkv, L, d, dtype=torch.float16, device="cuda").uniform_(-1, 1))
        vs.append(torch.empty(B, hkv, L, d, dtype=torch.float16, device="cuda").uniform_(-1, 1))
    gqa = hkv != hq
    for name, backend in BACKENDS:
        note, read_bytes = "", kv_bytes
        kk, vv, enable_gqa = ks, vs, gqa

        def call(i):
            s = i % len(qs)
            F.scaled_dot_product_attention(qs[s], kk[s], vv[s], enable_gqa=enable_gqa)

        try:
            with sdpa_kernel([backend]):
                try:
                    call(0)
                    torch.cuda.synchronize()
                except RuntimeError as e:
                    if not gqa:
                        raise
                    # The backend refused enable_gqa: expand K/V (not timed).
                    expanded = kv_bytes * hq / hkv
                    free, _ = torch.cuda.mem_get_info()
                    if expanded * len(qs) > free - 4 * GIB or expanded > args.max_kv_gib * GIB:
                        raise RuntimeError(f"enable_gqa refused ({str(e).splitlines()[0][:80]}); "
                                           f"expanded KV {expanded / GIB:.3g} GiB does not fit")
                    kk = [k.repeat_interleave(hq // hkv, dim=1) for k in ks]
                    vv = [v.repeat_interleave(hq // hkv, dim=1) for v in vs]
                    enable_gqa = False
                    note, read_bytes = "expanded KV (enable_gqa refused)", expanded
                    call(0)
                    torch.cuda.synchronize()
                t, tmin = time_calls(call, flush, args.warmup, args.reps)
            bw = (read_bytes + qo_bytes) / t / 1e3
            rows.append(f"| {B} | {L} | {heads} | {name} | {t:.1f} | {tmin:.1f} | {bw:.0f} | "
                        f"{100 * bw / args.copy_gbs:.1f} | {note} |")
        except RuntimeError as e:
            msg = str(e).splitlines()[0][:120] if str(e) else type(e).__name__
            rows.append(f"| {B} | {L} | {heads} | {name} | n/a | | | | {msg.replace('|', '/')} |")
        finally:
            kk = vv = None  # frees expanded copies
        print(rows[-1], flush=True)
    del qs, ks, vs
    torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--batches", type=int_list, default=[1, 16, 64, 256])
    ap.add_argument("--lens", type=int_list, default=[512, 2048, 8192, 32768])
    ap.add_argument("--kv-heads", type=int_list, default=[8, 32])
    ap.add_argument("--hq", type=int, default=32)
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--max-kv-gib", type=float, default=60)
    ap.add_argument("--max-sets", type=int, default=2)
    ap.add_argument("--ceiling-gib", type=float, default=4)
    ap.add_argument("--out", default="")
    args = ap.parse_args()

    if not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    args.copy_gbs = copy_ceiling(flush, args.ceiling_gib, max(args.reps // 2, 10))
    props = torch.cuda.get_device_properties(0)
    lines = [
        "## PyTorch SDPA decode baseline (contiguous KV)",
        "",
        f"- device: {props.name} ({props.multi_processor_count} SMs), torch {torch.__version__}, "
        f"cuDNN {torch.backends.cudnn.version()}",
        f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"- method: q [B, Hq, 1, D], K/V [B, Hkv, L, D] fp16, D {args.head_dim}; median of "
        f"{args.reps} timed calls after {args.warmup} warm-up calls, CUDA events, L2 evicted "
        f"before every call (256 MiB fill, not timed), up to {args.max_sets} input sets rotated",
        f"- copy (torch, {args.ceiling_gib:.3g} GiB, read + write counted): **{args.copy_gbs:.0f} GB/s**",
        "",
        "| B | kv_len | Hq/Hkv | backend | time us | min us | GB/s | % copy | note |",
        "|---:|---:|---|---|---:|---:|---:|---:|---|",
    ]
    for line in lines:
        print(line, flush=True)
    rows = []
    for hkv in args.kv_heads:
        for B in args.batches:
            for L in args.lens:
                bench_config(args, flush, B, L, hkv, rows)
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines + rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
