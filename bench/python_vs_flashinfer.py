"""pagedattn's FlashInfer-style Python calls beside FlashInfer's own, on the
same torch tensors in one process: decode (GQA 4 and MHA), causal prefill
and the shared-prefix cascade. Times as a caller sees them (host overhead
of run() included): CUDA events, median of N after warm-up, a 256 MiB
buffer zeroed before every call (L2 evicted).

  PYTHONPATH=python PAGEDATTN_RUNTIME=... PAGEDATTN_BUNDLE_DIR=build/pybundles \\
    python3 bench/python_vs_flashinfer.py [--reps 30]

Bundles: python -m pagedattn prebuild build/pybundles --from bench/python_vs_flashinfer.py
"""

import argparse
import datetime
import os
import sys

import numpy as np

from pagedattn import Config

D, P = 128, 16
BUNDLES = [Config(target="gpu", head_dim=D, page_size=P, kv_heads=8, group=4),
           Config(target="gpu", head_dim=D, page_size=P, kv_heads=32, group=1),
           Config(target="gpu", head_dim=D, page_size=P, kv_heads=8, group=4,
                  causal=True)]


def main():
    import torch
    import flashinfer
    import pagedattn
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=30)
    a = ap.parse_args()
    dev = "cuda"
    flush = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    ws = torch.empty(256 << 20, dtype=torch.uint8, device=dev)

    def timeit(fn):
        for _ in range(5):
            fn()
        ts = []
        for _ in range(a.reps):
            flush.zero_()
            s, e = torch.cuda.Event(True), torch.cuda.Event(True)
            s.record()
            fn()
            e.record()
            e.synchronize()
            ts.append(s.elapsed_time(e) * 1000)
        return float(np.median(ts))

    g = torch.Generator(device=dev).manual_seed(20261125)
    print(f"# pagedattn (Python) vs FlashInfer {flashinfer.__version__}, "
          f"{torch.cuda.get_device_name()}, "
          f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
    print(f"- method: CUDA events around run(), median of {a.reps} after 5 "
          f"warm-ups, 256 MiB zeroed before each call; fp16, D {D}, P {P}, "
          f"NHD joint cache, random page order")
    print()
    print("| op | shape | Hq/Hkv | pagedattn us | FlashInfer us | ours/FI | "
          "max abs diff |")
    print("|---|---|---|---:|---:|---:|---:|")

    def table(B, L):
        n = (L + P - 1) // P
        indptr = torch.arange(B + 1, dtype=torch.int32, device=dev) * n
        pages = torch.randperm(B * n, device=dev, generator=g).int()
        last = torch.full((B,), L - (n - 1) * P, dtype=torch.int32,
                          device=dev)
        return indptr, pages, last, B * n

    for hkv in (8, 32):
        for B, L in ((64, 2048), (256, 2048), (64, 8192)):
            indptr, pages, last, npg = table(B, L)
            kv = torch.randn(npg, 2, P, hkv, D, dtype=torch.float16,
                             device=dev, generator=g)
            q = torch.randn(B, 32, D, dtype=torch.float16, device=dev,
                            generator=g)
            ours = pagedattn.BatchDecodeWithPagedKVCacheWrapper(ws, "NHD")
            ours.plan(indptr, pages, last, 32, hkv, D, P)
            fi = flashinfer.BatchDecodeWithPagedKVCacheWrapper(
                ws.clone(), "NHD", use_tensor_cores=True)
            fi.plan(indptr, pages, last, 32, hkv, D, P)
            to = timeit(lambda: ours.run(q, kv))
            tf = timeit(lambda: fi.run(q, kv))
            diff = (ours.run(q, kv).float() - fi.run(q, kv).float()).abs().max()
            print(f"| decode | {B} x {L} | 32/{hkv} | {to:.1f} | {tf:.1f} "
                  f"(tensor cores) | {to / tf:.2f} | {diff:.1e} |")
    for B, L in ((4, 4096), (16, 1024)):
        indptr, pages, last, npg = table(B, L)
        kv = torch.randn(npg, 2, P, 8, D, dtype=torch.float16, device=dev,
                         generator=g)
        qo = torch.arange(B + 1, dtype=torch.int32, device=dev) * L
        q = torch.randn(B * L, 32, D, dtype=torch.float16, device=dev,
                        generator=g)
        ours = pagedattn.BatchPrefillWithPagedKVCacheWrapper(ws, "NHD")
        ours.plan(qo, indptr, pages, last, 32, 8, D, P, causal=True)
        fi = flashinfer.BatchPrefillWithPagedKVCacheWrapper(ws.clone(), "NHD",
                                                            backend="fa2")
        fi.plan(qo, indptr, pages, last, 32, 8, D, P, causal=True)
        to = timeit(lambda: ours.run(q, kv))
        tf = timeit(lambda: fi.run(q, kv))
        diff = (ours.run(q, kv).float() - fi.run(q, kv).float()).abs().max()
        print(f"| causal prefill | {B} x {L} | 32/8 | {to:.1f} | {tf:.1f} "
              f"(fa2) | {to / tf:.2f} | {diff:.1e} |")
    # cascade: shared prefix S under B requests of U tokens each
    for hkv, (S, U, B) in ((8, (32768, 256, 256)), (8, (8192, 256, 64)),
                           (32, (32768, 256, 256))):
        ns, nu = S // P, U // P
        npg = ns + B * nu
        perm = torch.randperm(npg, device=dev, generator=g).int()
        ip0 = torch.tensor([0, ns], dtype=torch.int32, device=dev)
        ix0 = perm[:ns].contiguous()
        ip1 = torch.arange(B + 1, dtype=torch.int32, device=dev) * nu
        ix1 = perm[ns:].contiguous()
        lp0 = torch.tensor([P], dtype=torch.int32, device=dev)
        lp1 = torch.full((B,), P, dtype=torch.int32, device=dev)
        qo0 = torch.tensor([0, B], dtype=torch.int32, device=dev)
        qo1 = torch.arange(B + 1, dtype=torch.int32, device=dev)
        kv = torch.randn(npg, 2, P, hkv, D, dtype=torch.float16, device=dev,
                         generator=g)
        q = torch.randn(B, 32, D, dtype=torch.float16, device=dev,
                        generator=g)
        args = ([qo0, qo1], [ip0, ip1], [ix0, ix1], [lp0, lp1], 32, hkv, D, P)
        ours = pagedattn.MultiLevelCascadeAttentionWrapper(2, ws, "NHD")
        ours.plan(*args)
        fi = flashinfer.MultiLevelCascadeAttentionWrapper(2, ws.clone(), "NHD")
        fi.plan(*args)
        to = timeit(lambda: ours.run(q, kv))
        tf = timeit(lambda: fi.run(q, kv))
        diff = (ours.run(q, kv).float() - fi.run(q, kv).float()).abs().max()
        print(f"| cascade | S {S}, U {U}, B {B} | 32/{hkv} | {to:.1f} | "
              f"{tf:.1f} (library default levels) | {to / tf:.2f} | "
              f"{diff:.1e} |")


if __name__ == "__main__":
    sys.exit(main())
