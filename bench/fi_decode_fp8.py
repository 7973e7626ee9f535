#!/usr/bin/env python3
"""FlashInfer paged batch decode over an FP8 (e4m3) KV cache: timing and a correctness check.

What it measures: flashinfer.BatchDecodeWithPagedKVCacheWrapper (backend "fa2", FlashInfer 0.7.2)
with q and o in fp16 and the paged K/V cache in torch.float8_e4m3fn (1 byte per element), on
both decode paths: "cuda" = use_tensor_cores=False (library default, CUDA-core decode kernel)
and "tc" = use_tensor_cores=True (FA2 prefill kernel used for decode). The wrapper is planned
with plan(..., q_data_type=fp16, kv_data_type=float8_e4m3fn) and timed as
run(q, cache, k_scale=K, v_scale=V, out=o) with per-tensor Python-float scales (default 1.0).

Method: the same as the FlashInfer kit's `fi_bench.py decode` (staged with the kit into the
git-ignored .gpu-fi/kit/fi_bench.py, path given by --kit), whose helpers this script imports and
reuses: Ctx (256 MiB L2-eviction buffer zeroed before every call, not timed; 5 warm-ups, then the
median and min of 30 CUDA-event-timed run() calls, host time inside run() included), page_table
(CSR tables over a random permutation of the physical pages), decode_wrapper, header, write,
ref_attention, gather_kv, errors. Cache layout [pages, 2, 16, Hkv, 128], NHD, joint K/V; Hq 32;
every request has kv_len L; same CLI flags, same skip rule (physical KV bytes, here 1 byte per
element, over --max-kv-gib) and the same markdown table columns as the kit's decode table.
GB/s = (K + V bytes read at 1 byte per element + q + o bytes at 2 bytes) / median time.
Only three things differ from the kit, so its cmd_decode loop is reproduced here (about 40
lines) instead of being called: the cache dtype and its fill, plan()'s kv_data_type, and the
k_scale/v_scale arguments of run(). The kit's decode_plan passes kv_data_type = q dtype, so it
is replaced by plan_fp8 below.

Cache values: random normal N(0, 1) drawn in fp16 and cast to e4m3 with torch's round-to-nearest
conversion (no scaling, no saturation: |x| stays far below 448). The stored e4m3 value times
k_scale (v_scale) is the key (value) the kernel sees.

How FlashInfer 0.7.2 applies the scales (flashinfer/decode.py, run()): k_scale (and q_scale)
multiply sm_scale on the host (free); v_scale != 1.0 is applied AFTER the kernel as an
`out *= v_scale` elementwise launch, which then falls inside the timed call. With the default
v_scale = 1.0 (a Python float) that launch is skipped.

--check: one small case (B=4, L=300, each Hkv of --kv-heads, each --paths) against a float32
torch reference computed from the dequantized cache (stored e4m3 value x scale) and the fp16 q;
outputs pre-filled with NaN; prints max abs / max rel (= max|o - ref| / max|ref|) / rel-L2 errors;
PASS = no NaN and rel-L2 < 2e-3. Runs with the given scales and with k_scale=0.25, v_scale=3.0 to
confirm the scale semantics. The note column also gives the rel-L2 distance of the reference
from the one over the un-quantized fp16 values (the e4m3 quantization error itself, not a
kernel error). Exit status 0 when every row passes.

On the device (after `eval "$(bash .gpu-fi/kit/setup-on-device.sh .gpu-fi)"`):
  python3 bench/fi_decode_fp8.py --check --out $OUT/fp8_check.md
  python3 bench/fi_decode_fp8.py --batches 1,16,64,256 --lens 512,2048,8192,32768 \
      --kv-heads 8,32 --paths cuda,tc --max-kv-gib 9 --out $OUT/fp8_decode.md
"""

import argparse
import importlib.util
import os
import sys
import time
import traceback

import torch

FP8 = torch.float8_e4m3fn
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_kit(path):
    """Import <kit>/fi_bench.py as a module (path as given, else relative to the repo root)."""
    cands = [path] if os.path.isabs(path) else [path, os.path.join(REPO, path)]
    for d in cands:
        f = os.path.join(d, "fi_bench.py")
        if os.path.isfile(f):
            spec = importlib.util.spec_from_file_location("fi_bench", f)
            mod = importlib.util.module_from_spec(spec)
            sys.modules["fi_bench"] = mod
            spec.loader.exec_module(mod)
            return mod
    sys.exit(f"fi_decode_fp8.py: no fi_bench.py under --kit {path!r} (tried {cands})")


def plan_fp8(fb, ctx, w, indptr, indices, last, hkv):
    """The kit's decode_plan with kv_data_type = float8_e4m3fn (q and o stay ctx.dt)."""
    w.plan(indptr, indices, last, ctx.hq, hkv, ctx.D, ctx.P, q_data_type=ctx.dt, kv_data_type=FP8)


def fp8_cache(npages, P, hkv, D, chunk_mib=256):
    """[npages, 2, P, hkv, D] e4m3 cache of N(0,1) values, filled in fp16 chunks (no 2x peak)."""
    cache = torch.empty(npages, 2, P, hkv, D, dtype=FP8, device="cuda")
    per = max(1, (chunk_mib << 20) // (2 * P * hkv * D * 2))
    for s in range(0, npages, per):
        e = min(npages, s + per)
        cache[s:e].copy_(torch.randn(e - s, 2, P, hkv, D, dtype=torch.float16, device="cuda"))
    return cache


def dequant(cache, k_scale, v_scale):
    x = cache.float()
    x[:, 0] *= k_scale
    x[:, 1] *= v_scale
    return x


# --------------------------------------------------------------------------- check


def cmd_check(fb, ctx):
    a = ctx.a
    P, D, hq = ctx.P, ctx.D, ctx.hq
    gen = torch.Generator().manual_seed(a.seed)
    torch.manual_seed(a.seed)
    tol = 2e-3 if ctx.dt == torch.float16 else 1e-2
    B, L = 4, 300
    lens = [L] * B
    scales = [(a.k_scale, a.v_scale)]
    if scales[0] != (0.25, 3.0):
        scales.append((0.25, 3.0))
    rows = []
    for hkv in a.kv_heads:
        heads = f"{hq}/{hkv}"
        ip, idx, last, npages = fb.page_table(lens, P, gen, spare=7)
        src = torch.randn(npages, 2, P, hkv, D, dtype=torch.float16, device="cuda")
        cache = src.to(FP8)
        q = torch.randn(B, hq, D, dtype=ctx.dt, device="cuda")
        for ks, vs in scales:
            deq = dequant(cache, ks, vs)
            unq = dequant(src, ks, vs)

            def ref_of(kv):
                return torch.stack([fb.ref_attention(q[b: b + 1],
                                                     *fb.gather_kv(kv, idx, int(ip[b]), int(ip[b + 1]), lens[b], P),
                                                     False)[0] for b in range(B)])

            ref, ref_unq = ref_of(deq), ref_of(unq)
            qerr = float((ref - ref_unq).norm() / ref_unq.norm())
            case = f"B {B}, L {L}, k_scale {ks:g}, v_scale {vs:g}"
            for pname in a.paths:
                use_tc = pname == "tc"
                label = "tensor cores" if use_tc else "CUDA cores"
                try:
                    t0 = time.time()
                    w = fb.decode_wrapper(ctx, use_tc)
                    plan_fp8(fb, ctx, w, ip, idx, last, hkv)
                    o = torch.full_like(q, float("nan"))
                    o = w.run(q, cache, k_scale=float(ks), v_scale=float(vs), out=o)
                    torch.cuda.synchronize()
                    secs = time.time() - t0
                    e = fb.errors(o, ref)
                    ok = e["nan"] == 0 and e["rel_l2"] < tol
                    r = (f"| decode fp8 KV | {heads} | {case} | {label} | {e['max_abs']:.2e} | {e['max_rel']:.2e} | "
                         f"{e['rel_l2']:.2e} | {e['nan']} | {'PASS' if ok else 'FAIL'} | {secs:.1f} | "
                         f"e4m3 quantization vs fp16 values: rel-L2 {qerr:.1e} |")
                except Exception as ex:  # noqa: BLE001
                    traceback.print_exc()
                    r = f"| decode fp8 KV | {heads} | {case} | {label} | | | | | FAIL | | {fb.short(ex)} |"
                rows.append(r)
                fb.log(r)
            del deq, unq
        del src, cache, q
    lines = fb.header(ctx, "FlashInfer batch decode, FP8 e4m3 KV cache: correctness against a float32 torch reference", [
        f"q/o {a.dtype}, K/V cache float8_e4m3fn (N(0,1) drawn in fp16, cast to e4m3); reference over the "
        "dequantized cache (stored e4m3 value x k_scale / v_scale) in float32; plan(..., kv_data_type=float8_e4m3fn), "
        "run(q, cache, k_scale=, v_scale=, out=o)",
        "outputs pre-filled with NaN; max rel = max|o - ref| / max|ref|; PASS = no NaN and rel-L2 < "
        f"{tol:g}; 's' = plan + run wall time including any JIT build or module load",
    ]) + ["| op | Hq/Hkv | case | path | max abs | max rel | rel-L2 | NaN | result | s | note |",
          "|---|---|---|---|---:|---:|---:|---:|---|---:|---|"]
    fb.write(a.out, lines + rows)
    return 0 if rows and all("PASS" in r for r in rows) else 1


# --------------------------------------------------------------------------- decode


def cmd_decode(fb, ctx):
    """fi_bench.cmd_decode with an e4m3 cache, kv_data_type=e4m3 in plan() and scales in run()."""
    a = ctx.a
    P, D, hq = ctx.P, ctx.D, ctx.hq
    esz_q = torch.finfo(ctx.dt).bits // 8      # q and o: 2 bytes
    esz_kv = torch.finfo(FP8).bits // 8        # K and V: 1 byte
    ks, vs = float(a.k_scale), float(a.v_scale)
    rows = []
    for hkv in a.kv_heads:
        for B in a.batches:
            for L in a.lens:
                heads = f"{hq}/{hkv}"
                npr = (L + P - 1) // P
                kv_phys = B * npr * 2 * P * hkv * D * esz_kv
                if kv_phys > a.max_kv_gib * fb.GIB:
                    rows.append(f"| {B} | {L} | {heads} | all | | | | skipped: KV {kv_phys / fb.GIB:.3g} GiB > {a.max_kv_gib} |")
                    fb.log(rows[-1])
                    continue
                try:
                    gen = torch.Generator().manual_seed(a.seed + B * 100003 + L)
                    ip, idx, last, npages = fb.page_table([L] * B, P, gen)
                    cache = fp8_cache(npages, P, hkv, D)
                    q = torch.randn(B, hq, D, dtype=ctx.dt, device="cuda")
                    o = torch.empty_like(q)
                except torch.OutOfMemoryError as ex:
                    rows.append(f"| {B} | {L} | {heads} | all | | | | skipped: OOM {fb.short(ex)[:60]} |")
                    fb.log(rows[-1])
                    continue
                moved = 2.0 * B * L * hkv * D * esz_kv + 2.0 * B * hq * D * esz_q
                for pname in a.paths:
                    use_tc = pname == "tc"
                    label = "tensor cores" if use_tc else "CUDA cores"
                    try:
                        w = fb.decode_wrapper(ctx, use_tc)
                        plan_fp8(fb, ctx, w, ip, idx, last, hkv)
                        t, tmin = ctx.time(lambda: w.run(q, cache, k_scale=ks, v_scale=vs, out=o))
                        ok = bool(torch.isfinite(o).all())
                        rows.append(f"| {B} | {L} | {heads} | {label} | {t:.1f} | {tmin:.1f} | {moved / t / 1e3:.0f} | "
                                    f"{'' if ok else 'non-finite output'} |")
                    except Exception as ex:  # noqa: BLE001
                        traceback.print_exc()
                        rows.append(f"| {B} | {L} | {heads} | {label} | n/a | | | {fb.short(ex)} |")
                    fb.log(rows[-1])
                del cache, q, o
                torch.cuda.empty_cache()
    lines = fb.header(ctx, "FlashInfer batch decode, FP8 e4m3 KV cache (BatchDecodeWithPagedKVCacheWrapper, backend fa2)", [
        f"q/o {a.dtype}; K/V cache float8_e4m3fn, 1 byte per element (N(0,1) drawn in fp16, cast to e4m3); "
        f"plan(..., q_data_type={a.dtype}, kv_data_type=float8_e4m3fn); timed call run(q, cache, k_scale={ks:g}, "
        f"v_scale={vs:g}, out=o)" + ("" if vs == 1.0 else " (v_scale != 1: includes FlashInfer's post-kernel "
                                                         "`out *= v_scale` launch)"),
        "every request has kv_len L; GB/s = (K + V bytes read at 1 byte/element + q + o bytes) / median time; "
        "'CUDA cores' = use_tensor_cores=False (library default), 'tensor cores' = use_tensor_cores=True; "
        "skip rule on the physical fp8 KV bytes",
    ]) + ["| B | kv_len | Hq/Hkv | path | µs (median) | min µs | GB/s | note |", "|---:|---:|---|---|---:|---:|---:|---|"]
    fb.write(a.out, lines + rows)
    return 0


# --------------------------------------------------------------------------- main


def main():
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--kit", default=".gpu-fi/kit")
    kit = pre.parse_known_args()[0].kit
    fb = load_kit(kit)

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kit", default=".gpu-fi/kit", help="folder holding the kit's fi_bench.py")
    ap.add_argument("--check", action="store_true", help="correctness check instead of the benchmark")
    ap.add_argument("--out", default="")
    ap.add_argument("--dtype", choices=list(fb.DTYPES), default="fp16", help="q and o dtype")
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--page", type=int, default=16)
    ap.add_argument("--hq", type=int, default=32)
    ap.add_argument("--kv-heads", type=fb.ints, default=[8, 32])
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--flush-mib", type=int, default=256)
    ap.add_argument("--workspace-mib", type=int, default=512, help="FlashInfer float workspace")
    ap.add_argument("--max-kv-gib", type=float, default=60, help="skip cases whose physical KV exceeds this")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--batches", type=fb.ints, default=[1, 16, 64, 256])
    ap.add_argument("--lens", type=fb.ints, default=[512, 2048, 8192, 32768])
    ap.add_argument("--paths", type=fb.strs, default=["cuda", "tc"], help="cuda (CUDA cores), tc (tensor cores)")
    ap.add_argument("--k-scale", type=float, default=1.0, help="per-tensor key scale passed to run()")
    ap.add_argument("--v-scale", type=float, default=1.0,
                    help="per-tensor value scale passed to run() (!= 1 adds a post-kernel multiply)")
    a = ap.parse_args()
    bad = [p for p in a.paths if p not in ("cuda", "tc")]
    if bad:
        ap.error(f"--paths: unknown {bad} (cuda, tc)")
    t0 = time.time()
    import flashinfer

    fb.log(f"flashinfer {flashinfer.__version__} from {flashinfer.__file__} (import {time.time() - t0:.1f} s); "
           f"torch {torch.__version__}; {torch.cuda.get_device_name(0)}; kit {fb.__file__}")
    ctx = fb.Ctx(a)
    return (cmd_check if a.check else cmd_decode)(fb, ctx)


if __name__ == "__main__":
    sys.exit(main())
