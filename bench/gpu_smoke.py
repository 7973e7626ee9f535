#!/usr/bin/env python3
"""Quick GPU check of a pa-compile bundle through CuPy + PyTorch.

Independent of the C++ runtime: loads kernels.cubin with cupy.RawModule,
passes every memref as MLIR's descriptor (ptr, ptr, offset, sizes, strides),
and compares decode (one pass) and split-KV decode (decode_partial +
merge_segments) against a float64 reference computed with PyTorch. Also
times both on one large configuration (CUDA events, L2 evicted).

usage: gpu_smoke.py BUNDLE_DIR [--seed N]
"""
import argparse, math, os, sys, time
import numpy as np
import torch
import cupy as cp

p = argparse.ArgumentParser()
p.add_argument("bundle")
p.add_argument("--seed", type=int, default=1234)
p.add_argument("--bench", action="store_true")
p.add_argument("--no-check", action="store_true", help="skip the correctness cases")
p.add_argument("--only", default="", help="bench only B,L (e.g. 64,2048)")
args = p.parse_args()

cfg = {}
NT = 128
for line in open(os.path.join(args.bundle, "bundle.manifest")):
    t = line.split()
    if t and t[0] == "config":
        for k, v in zip(t[1::2], t[2::2]):
            cfg[k] = v
    if t and t[0] == "launch":
        NT = int(t[t.index("block") + 1])
D, P, HKV, G = (int(cfg[k]) for k in ("head_dim", "page_size", "kv_heads", "group"))
HQ = HKV * G
NHD = cfg["layout"] == "nhd"
JOINT = cfg["kv"] == "joint"
DT = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}[cfg["dtype"]]
mod = cp.RawModule(path=os.path.join(args.bundle, "kernels.cubin"))
k_decode = mod.get_function("pa_decode")
k_partial = mod.get_function("pa_decode_partial")
k_merge = mod.get_function("pa_merge_segments")
print(f"bundle {args.bundle}: D={D} P={P} Hkv={HKV} g={G} {cfg['layout']} {cfg['dtype']} {cfg['kv']}")


def desc(t):
    """MLIR memref descriptor params of a contiguous tensor."""
    ptr = np.uint64(t.data_ptr())
    sizes = [np.int64(s) for s in t.shape]
    strides = [np.int64(s) for s in t.stride()]
    return [ptr, ptr, np.int64(0)] + sizes + strides


def make_case(rng, lens, num_pages_extra=3):
    B = len(lens)
    npages = [(l + P - 1) // P for l in lens]
    total = sum(npages) + num_pages_extra
    perm = torch.randperm(total, generator=rng)
    indptr = [0]
    for n in npages:
        indptr.append(indptr[-1] + n)
    indices = perm[: indptr[-1]].to(torch.int32)
    last = [((l - 1) % P) + 1 if l > 0 else 1 for l in lens]
    shape = [total, 2] + ([P, HKV, D] if NHD else [HKV, P, D])
    kv = torch.randn(shape, generator=rng).to(DT)
    q = torch.randn(B, HQ, D, generator=rng).to(DT)
    return dict(q=q, kv=kv, indptr=torch.tensor(indptr, dtype=torch.int32),
                indices=indices, last=torch.tensor(last, dtype=torch.int32), lens=lens)


def reference(c):
    q, kv = c["q"].double(), c["kv"].double()
    B = q.shape[0]
    o = torch.zeros(B, HQ, D, dtype=torch.float64)
    lse = torch.full((B, HQ), -math.inf, dtype=torch.float64)
    for b, L in enumerate(c["lens"]):
        if L == 0:
            continue
        pages = c["indices"][c["indptr"][b]: c["indptr"][b + 1]].long()
        if NHD:
            k = kv[pages, 0].reshape(-1, HKV, D)[:L]
            v = kv[pages, 1].reshape(-1, HKV, D)[:L]
        else:
            k = kv[pages, 0].permute(0, 2, 1, 3).reshape(-1, HKV, D)[:L]
            v = kv[pages, 1].permute(0, 2, 1, 3).reshape(-1, HKV, D)[:L]
        k = k.repeat_interleave(G, dim=1)  # [L, HQ, D]
        v = v.repeat_interleave(G, dim=1)
        s = torch.einsum("hd,lhd->hl", q[b], k) / math.sqrt(D)
        lse[b] = torch.logsumexp(s, dim=1)
        o[b] = torch.einsum("hl,lhd->hd", torch.softmax(s, dim=1), v)
    return o, lse


def plan(lens, chunk):
    wi, wr, ws, we = [0], [], [], []
    for b, L in enumerate(lens):
        for c0 in range(0, L, chunk):
            wr.append(b); ws.append(c0); we.append(min(c0 + chunk, L))
        wi.append(len(wr))
    if not wr:
        wr, ws, we = [0], [0], [0]
    t = lambda x: torch.tensor(x, dtype=torch.int32).cuda()
    return t(wi), t(wr), t(ws), t(we)


_keep = []


def kv_args(kv):
    if JOINT:
        return desc(kv)
    k, v = kv[:, 0].contiguous(), kv[:, 1].contiguous()
    _keep.append((k, v))  # the kernels read them after this returns
    return desc(k) + desc(v)


def run(c, chunk=None):
    dev = {k: (v.cuda() if torch.is_tensor(v) else v) for k, v in c.items()}
    B = dev["q"].shape[0]
    o = torch.full((B, HQ, D), float("nan"), dtype=DT, device="cuda")
    lse = torch.full((B, HQ), float("nan"), dtype=torch.float32, device="cuda")
    kva = kv_args(dev["kv"])
    pages = desc(dev["indptr"]) + desc(dev["indices"]) + desc(dev["last"])
    if chunk is None:
        if B:
            k_decode((B, HKV, 1), (NT, 1, 1), tuple(desc(dev["q"]) + kva + pages + desc(o) + desc(lse)))
    else:
        wi, wr, ws, we = plan(c["lens"], chunk)
        W = wr.shape[0]
        op = torch.full((W, HQ, D), float("nan"), dtype=torch.float32, device="cuda")
        lp = torch.full((W, HQ), float("nan"), dtype=torch.float32, device="cuda")
        k_partial((W, HKV, 1), (NT, 1, 1), tuple(desc(dev["q"]) + kva + pages + desc(wi) + desc(wr) + desc(ws) + desc(we) + desc(op) + desc(lp)))
        if B:
            k_merge((B, HQ, 1), (NT, 1, 1), tuple(desc(op) + desc(lp) + desc(wi) + desc(o) + desc(lse)))
    torch.cuda.synchronize()
    return o.cpu(), lse.cpu()


def check(name, c, out, tol):
    o_ref, lse_ref = reference(c)
    o, lse = out
    o = o.double(); lse = lse.double()
    ok = not torch.isnan(o).any().item() and not torch.isnan(lse).any().item()
    ninf_ref = torch.isinf(lse_ref)
    ok &= bool((torch.isinf(lse) == ninf_ref).all())
    rel = (o - o_ref).norm().item() / max(o_ref.norm().item(), 1e-30)
    fin = ~ninf_ref
    lerr = (lse[fin] - lse_ref[fin]).abs().max().item() if fin.any() else 0.0
    ok &= rel <= tol and lerr <= 2e-3
    print(f"  {name:40s} rel_o={rel:.2e} lse_abs={lerr:.2e} {'PASS' if ok else 'FAIL'}")
    return ok


rng = torch.Generator().manual_seed(args.seed)
print(f"seed {args.seed}")
tol = 2e-3 if DT == torch.float16 else (1e-2 if DT == torch.bfloat16 else 1e-5)
allok = True
cases = [
    ("one token", [1]),
    ("empty + short", [0, 3, 17]),
    ("ragged, not page multiples", [5, 0, 33, 64, 1, 100, 250]),
    ("last_page_len == P", [P, 2 * P, 3 * P]),
    ("long", [3000, 1234]),
]
for name, lens in ([] if args.no_check else cases):
    c = make_case(rng, lens)
    allok &= check(name + " / decode", c, run(c), tol)
    allok &= check(name + " / split chunk 64", c, run(c, 64), tol)
    allok &= check(name + " / split chunk 7", c, run(c, 7), tol)
print("ALL PASS" if allok else "SOME FAIL")

if args.bench:
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")

    def timeit(fn, reps=30):
        ts = []
        for i in range(reps + 5):
            flush.zero_()
            s, e = torch.cuda.Event(True), torch.cuda.Event(True)
            s.record(); fn(); e.record()
            torch.cuda.synchronize()
            if i >= 5:
                ts.append(s.elapsed_time(e))
        return sorted(ts)[len(ts) // 2] * 1e-3

    shapes = [(1, 512), (64, 2048), (16, 32768), (256, 2048)]
    if args.only:
        shapes = [tuple(int(x) for x in args.only.split(","))]
    for B, L in shapes:
        c = make_case(rng, [L] * B, 0)
        dev = {k: (v.cuda() if torch.is_tensor(v) else v) for k, v in c.items()}
        o = torch.empty(B, HQ, D, dtype=DT, device="cuda")
        lse = torch.empty(B, HQ, dtype=torch.float32, device="cuda")
        kva = kv_args(dev["kv"])
        pages = desc(dev["indptr"]) + desc(dev["indices"]) + desc(dev["last"])
        argsd = tuple(desc(dev["q"]) + kva + pages + desc(o) + desc(lse))
        bytes_ = 2 * B * L * HKV * D * dev["kv"].element_size() + 2 * B * HQ * D * 2
        t = timeit(lambda: k_decode((B, HKV, 1), (NT, 1, 1), argsd))
        line = f"bench B={B} L={L}: decode {t*1e6:.1f} us {bytes_ / t / 1e9:.0f} GB/s"
        if B * HKV < 264:
            per = -(-264 // (B * HKV))
            chunk = max(16, -(-(-(-L // per)) // 16) * 16)
            wi, wr, ws, we = plan([L] * B, chunk)
            W = wr.shape[0]
            op = torch.empty((W, HQ, D), dtype=torch.float32, device="cuda")
            lp = torch.empty((W, HQ), dtype=torch.float32, device="cuda")
            a1 = tuple(desc(dev["q"]) + kva + pages + desc(wi) + desc(wr) + desc(ws) + desc(we) + desc(op) + desc(lp))
            a2 = tuple(desc(op) + desc(lp) + desc(wi) + desc(o) + desc(lse))
            def split():
                k_partial((W, HKV, 1), (NT, 1, 1), a1)
                k_merge((B, HQ, 1), (NT, 1, 1), a2)
            t2 = timeit(split)
            line += f" | split chunk {chunk} ({W} items) {t2*1e6:.1f} us {bytes_ / t2 / 1e9:.0f} GB/s"
        print(line)
sys.exit(0 if allok else 1)
