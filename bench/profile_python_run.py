"""Host time of one run() of pagedattn's decode wrapper beside
FlashInfer's (the Python overhead that bench/python_vs_flashinfer.py sees
whenever the GPU has nothing queued to hide it behind), and a cProfile of
ours: GQA 4 decode, 64 x 2048, fp16, D 128, P 16.

  PYTHONPATH=python:$PYTHONPATH PAGEDATTN_RUNTIME=... PAGEDATTN_BUNDLE_DIR=build/pybundles \\
    python3 bench/profile_python_run.py
"""

import cProfile
import io
import pstats
import time

import torch


def host_us(fn, n=300):
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) / n * 1e6


def main():
    import flashinfer
    import pagedattn
    dev, B, L, D, P, hkv = "cuda", 64, 2048, 128, 16, 8
    g = torch.Generator(device=dev).manual_seed(20261126)
    n = L // P
    indptr = torch.arange(B + 1, dtype=torch.int32, device=dev) * n
    pages = torch.randperm(B * n, device=dev, generator=g).int()
    last = torch.full((B,), P, dtype=torch.int32, device=dev)
    kv = torch.randn(B * n, 2, P, hkv, D, dtype=torch.float16, device=dev,
                     generator=g)
    q = torch.randn(B, 32, D, dtype=torch.float16, device=dev, generator=g)
    ws = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    ours = pagedattn.BatchDecodeWithPagedKVCacheWrapper(ws, "NHD")
    ours.plan(indptr, pages, last, 32, hkv, D, P)
    fi = flashinfer.BatchDecodeWithPagedKVCacheWrapper(ws.clone(), "NHD",
                                                       use_tensor_cores=True)
    fi.plan(indptr, pages, last, 32, hkv, D, P)
    print(f"# host time per run(), {torch.cuda.get_device_name()}, "
          f"torch {torch.__version__}, FlashInfer {flashinfer.__version__}")
    print(f"pagedattn run():          {host_us(lambda: ours.run(q, kv)):8.1f} us")
    print(f"pagedattn _run_eager():   {host_us(lambda: ours._run_eager(q, kv)):8.1f} us")
    from pagedattn import torch_ops
    print(f"pagedattn via run_plan:   {host_us(lambda: torch_ops.run(ours, q, kv)):8.1f} us"
          f"  (the torch custom op, what eager run() called before)")
    print(f"FlashInfer run():         {host_us(lambda: fi.run(q, kv)):8.1f} us")
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(300):
        ours.run(q, kv)
    pr.disable()
    torch.cuda.synchronize()
    for key in ("tottime", "cumulative"):
        s = io.StringIO()
        pstats.Stats(pr, stream=s).sort_stats(key).print_stats(30)
        print(f"## cProfile of 300 run() calls by {key}")
        print(s.getvalue())


if __name__ == "__main__":
    main()
