#!/usr/bin/env python3
# ===- sdpa_prefill.py - PyTorch SDPA prefill baseline ----------------------===#
#
# Part of the PagedAttn project.
#
# ===------------------------------------------------------------------------===#
#
# The shapes of `pa-gpu-runner bench-prefill` through PyTorch's
# scaled_dot_product_attention with the flash and cuDNN backends
# (torch.nn.attention.sdpa_kernel), q/K/V stored contiguously
# ([B, H, L, D], fp16), GQA through enable_gqa=True (or K/V expanded with
# repeat_interleave outside the timing when a backend refuses it):
#   * causal prefill, qo_len = kv_len in {512, 2048, 8192, 16384}, batches
#     of 32768 and of 16384 tokens (is_causal=True);
#   * append: qo_len 512 over kv_len 8192, batch 8 (bottom-right causal:
#     torch's causal_lower_right, or an explicit boolean mask when that is
#     missing or refused);
# and a dense bf16 GEMM 8192^3 as the tensor-core ceiling. Same method as
# the runner (time_calls, imported from sdpa_baseline.py): L2 evicted
# before every timed call (a 256 MiB fill, not timed), CUDA events around
# each call, median after warm-up. TFLOP/s counts the unmasked work only:
# 4 * D * Hq * visible (query, key) pairs. Prints a markdown table (and
# writes it to --out).
#
# ===------------------------------------------------------------------------===#

import argparse
import datetime
import os
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sdpa_baseline import time_calls  # noqa: E402  (one home of the method)


def visible_pairs(qo, kv):
    """Causal pairs of one request whose queries are its last qo tokens."""
    # Query i sits at kv - qo + i and sees kv - qo + i + 1 keys.
    return qo * (kv - qo) + qo * (qo + 1) // 2


def shapes():
    out = []
    for L in (512, 2048, 8192, 16384):
        out.append(("causal 32k tokens", max(1, 32768 // L), L, L))
        out.append(("causal 16k tokens", max(1, 16384 // L), L, L))
    out.append(("append 512 over 8192", 8, 512, 8192))
    return out


def bench_shape(args, flush, name, B, qo, kv, hkv, backend, label):
    hq, D = args.q_heads, args.head_dim
    dev = "cuda"
    q = torch.randn(B, hq, qo, D, device=dev, dtype=torch.float16)
    k = torch.randn(B, hkv, kv, D, device=dev, dtype=torch.float16)
    v = torch.randn_like(k)
    kwargs = {}
    mask = None
    if qo == kv:
        kwargs["is_causal"] = True
    else:
        try:
            from torch.nn.attention.bias import causal_lower_right

            mask = causal_lower_right(qo, kv)
        except ImportError:
            mask = torch.ones(qo, kv, device=dev, dtype=torch.bool).tril(kv - qo)
    gqa = hq != hkv
    flops = 4.0 * D * hq * B * visible_pairs(qo, kv)

    def run(kk, vv, extra):
        def call(i):
            F.scaled_dot_product_attention(q, kk, vv, attn_mask=mask, **kwargs, **extra)

        with sdpa_kernel(backend):
            call(0)
            torch.cuda.synchronize()
            return time_calls(call, flush, args.warmup, args.reps)

    note = ""
    try:
        try:
            t, tmin = run(k, v, {"enable_gqa": True} if gqa else {})
        except RuntimeError:
            if not gqa:
                raise
            rep = hq // hkv
            kk = k.repeat_interleave(rep, dim=1)
            vv = v.repeat_interleave(rep, dim=1)
            t, tmin = run(kk, vv, {})
            note = " (K/V expanded)"
        except TypeError:
            rep = hq // hkv
            t, tmin = run(k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1), {})
            note = " (K/V expanded)"
    except RuntimeError as e:
        msg = str(e).splitlines()[0][:80]
        return f"| {label} {name} | {B} | {qo} | {kv} | unsupported: {msg} | | |"
    return (
        f"| {label} {name}{note} | {B} | {qo} | {kv} | {t:.1f} | {tmin:.1f} | "
        f"{flops / t / 1e6:.1f} |"
    )


def gemm_ceiling(args, flush):
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
    t, _ = time_calls(lambda i: torch.mm(a, b, out=c), flush, args.warmup, args.reps)
    return 2.0 * n**3 / t / 1e6


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", default="")
    p.add_argument("--reps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--head-dim", type=int, default=128)
    p.add_argument("--q-heads", type=int, default=32)
    p.add_argument("--kv-heads", default="8,32", help="GQA-4 and MHA by default")
    args = p.parse_args()
    if not torch.cuda.is_available():
        print("sdpa_prefill.py: no CUDA device", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    lines = []

    def out(line):
        print(line, flush=True)
        lines.append(line)

    props = torch.cuda.get_device_properties(0)
    out("## PyTorch SDPA prefill baseline")
    out("")
    out(f"- device: {props.name}, torch {torch.__version__}, "
        f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
    out(f"- method: q [B, Hq, qo, D], K/V [B, Hkv, kv, D] fp16 contiguous, D "
        f"{args.head_dim}, Hq {args.q_heads}; median of {args.reps} timed calls "
        f"after {args.warmup} warm-up calls, CUDA events, L2 evicted before every "
        f"call; TFLOP/s = 4 * D * Hq * visible pairs / time")
    out(f"- dense bf16 GEMM 8192^3 ceiling: **{gemm_ceiling(args, flush):.0f} TFLOP/s**")
    out("")
    out("| shape | B | qo_len | kv_len | time us | min us | TFLOP/s |")
    out("|---|---:|---:|---:|---:|---:|---:|")
    backends = [("flash", SDPBackend.FLASH_ATTENTION),
                ("cudnn", SDPBackend.CUDNN_ATTENTION)]
    for hkv in [int(x) for x in args.kv_heads.split(",") if x]:
        for bname, backend in backends:
            label = f"{bname} Hkv {hkv}"
            for name, B, qo, kv in shapes():
                out(bench_shape(args, flush, name, B, qo, kv, hkv, backend, label))
                torch.cuda.empty_cache()
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
