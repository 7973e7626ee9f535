"""The package on CUDA tensors (torch), against the float64 oracle and,
where importable, FlashInfer on the same tensors; and a torch.compile'd
decode step through pagedattn::run_plan. Skipped without a CUDA device.

On a GPU machine without MLIR, run it in ahead-of-time mode over bundles
prebuilt where pa-compile is (CUDA_BUNDLES below):
  python -m pagedattn prebuild OUT --from python/tests/test_cuda.py
  PAGEDATTN_BUNDLE_DIR=OUT python tests/test_cuda.py   # or pytest
"""

import math
import os
import sys
import traceback
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference as ref  # noqa: E402

import pagedattn  # noqa: E402
from pagedattn import Config  # noqa: E402

try:
    import torch
    HAVE_CUDA = torch.cuda.is_available()
except ImportError:  # pragma: no cover
    torch, HAVE_CUDA = None, False

try:
    import flashinfer  # noqa: F401
    HAVE_FI = HAVE_CUDA
except Exception:
    HAVE_FI = False

if "pytest" in sys.modules:
    import pytest
    pytestmark = pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA device")

D, P, HQ, HKV = 128, 16, 32, 8


def _gpu(**kw):
    base = dict(target="gpu", head_dim=D, page_size=P, kv_heads=HKV,
                group=HQ // HKV)
    base.update(kw)
    return Config(**base)


# The bundles these tests load (prebuilt for ahead-of-time mode).
CUDA_BUNDLES = [
    _gpu(),                                         # decode, prefill
    _gpu(kv="split", layout="hnd", dtype="bf16"),   # decode, split HND bf16
    _gpu(causal=True),                              # causal prefill
    _gpu(custom_mask=True),                         # masked prefill
    _gpu(window=33, soft_cap=30.0, positions=True),  # decode with options
    _gpu(kv_heads=HQ, group=1),                     # merges of [n, 32, 128]
    _gpu(group=1),                                  # append_paged_kv_cache
    _gpu(kv="split"),                               # vLLM paged decode
    _gpu(group=1, kv="split"),                      # vLLM reshape_and_cache
    # MLA decode (DeepSeek-V3's latent cache, 16 and 128 heads).
    Config(target="gpu", head_dim=512, page_size=64, kv_heads=1, group=16,
           dtype="bf16", kernels="mla", kpe=64, sm_scale=1 / math.sqrt(192),
           lse_base2=True),
    Config(target="gpu", head_dim=512, page_size=64, kv_heads=1, group=128,
           dtype="bf16", kernels="mla", kpe=64, sm_scale=1 / math.sqrt(192),
           lse_base2=True),
]


def _seed(name):
    s = int(os.environ.get("PA_SEED", "20261125")) ^ zlib.crc32(name.encode())
    print(f"  seed {s} ({name})")
    return np.random.default_rng(s)


def _table(rng, kv_lens):
    npages = [(l + P - 1) // P for l in kv_lens]
    indptr = np.concatenate([[0], np.cumsum(npages)]).astype(np.int32)
    num = int(indptr[-1]) + 5
    indices = rng.permutation(num)[:indptr[-1]].astype(np.int32)
    last = np.array([l - (n - 1) * P if n else 0
                     for l, n in zip(kv_lens, npages)], np.int32)
    return indptr, indices, last, num


def _t(a, dtype=None):
    t = torch.from_numpy(np.ascontiguousarray(a)).cuda()
    return t.to(dtype) if dtype is not None else t


def _rel(got, want):
    g = got.float().cpu().numpy().astype(np.float64) if torch.is_tensor(
        got) else np.asarray(got, np.float64)
    assert not np.isnan(g).any(), "NaN"
    den = np.linalg.norm(want)
    return float(np.linalg.norm(g - want) / (den if den else 1.0))


def _lse_ok(got, want_ln, tol=1e-3):
    g = got.float().cpu().numpy().astype(np.float64)
    w = np.asarray(want_ln) / math.log(2.0)
    assert (np.isneginf(g) == np.isneginf(w)).all(), "-inf rows differ"
    fin = ~np.isneginf(w)
    err = float(np.abs(g[fin] - w[fin]).max(initial=0))
    assert err < tol, f"lse error {err}"


def _cache(rng, num, layout="NHD", joint=True, dtype=None):
    dtype = dtype or torch.float16
    page = (P, HKV, D) if layout == "NHD" else (HKV, P, D)
    host = rng.uniform(-1, 1, ((num, 2) + page) if joint else
                       ((num,) + page)).astype(np.float32)
    if joint:
        return _t(host, dtype), host, None
    host_v = rng.uniform(-1, 1, (num,) + page).astype(np.float32)
    return (_t(host, dtype), _t(host_v, dtype)), host, host_v


def _round(host, dtype):
    return torch.from_numpy(host).to(dtype).float().numpy()


def test_decode_cuda():
    for layout, joint, dtype, tol in (("NHD", True, torch.float16, 2e-3),
                                      ("HND", False, torch.bfloat16, 1e-2)):
        rng = _seed(f"decode {layout}")
        kv_lens = [0, 1, 17, 300, 2048]
        indptr, indices, last, num = _table(rng, kv_lens)
        cache, hk, hv = _cache(rng, num, layout, joint, dtype)
        qh = rng.uniform(-1, 1, (len(kv_lens), HQ, D)).astype(np.float32)
        q = _t(qh, dtype)
        w = pagedattn.BatchDecodeWithPagedKVCacheWrapper(None, layout)
        w.plan(_t(indptr), _t(indices), _t(last), HQ, HKV, D, P,
               q_data_type=dtype)
        o, lse = w.run(q, cache, return_lse=True)
        k = _round(hk, dtype)
        v = None if joint else _round(hv, dtype)
        wo, wl = ref.batch_decode(_round(qh, dtype), k, v, layout, indptr,
                                  indices, last)
        err = _rel(o, wo)
        print(f"  decode {layout} {dtype}: rel {err:.2e}")
        assert err < tol
        _lse_ok(lse, wl)
        if HAVE_FI and joint:
            import flashinfer
            fw = flashinfer.BatchDecodeWithPagedKVCacheWrapper(
                torch.empty(128 << 20, dtype=torch.uint8, device="cuda"),
                layout)
            fw.plan(_t(indptr), _t(indices), _t(np.maximum(last, 1)), HQ,
                    HKV, D, P, q_data_type=dtype)
            fo = fw.run(q, cache)
            # FlashInfer gives an empty request last_page_len tokens:
            # compare the requests with pages.
            diff = (fo[1:].float() - o[1:].float()).abs().max().item()
            print(f"  decode vs FlashInfer: max |diff| {diff:.2e}")
            assert diff < 2e-3


def test_decode_options_cuda():
    rng = _seed("decode options")
    kv_lens = [0, 40, 129]
    indptr, indices, last, num = _table(rng, kv_lens)
    cache, hk, _ = _cache(rng, num)
    qh = rng.uniform(-1, 1, (3, HQ, D)).astype(np.float32)
    w = pagedattn.BatchDecodeWithPagedKVCacheWrapper(None)
    w.plan(indptr, indices, last, HQ, HKV, D, P, window_left=32,
           logits_soft_cap=30.0)
    o = w.run(_t(qh, torch.float16), cache)
    wo, _ = ref.batch_decode(_round(qh, torch.float16),
                             _round(hk, torch.float16), None, "NHD", indptr,
                             indices, last, window_left=32,
                             logits_soft_cap=30.0)
    err = _rel(o, wo)
    print(f"  decode window/soft cap: rel {err:.2e}")
    assert err < 2e-3


def test_split_merge_cuda():
    """split_merge="last" and "auto" (the merge together, where the plan's
    grid fits) give the same decode and MLA decode, both against the
    float64 oracle: one long request, whose plan splits."""
    rng = _seed("split merge")
    kv_lens = [8192]
    indptr, indices, last, num = _table(rng, kv_lens)
    cache, hk, _ = _cache(rng, num)
    qh = rng.uniform(-1, 1, (1, HQ, D)).astype(np.float32)
    outs = {}
    for how in ("auto", "last"):
        w = pagedattn.BatchDecodeWithPagedKVCacheWrapper(None)
        w.plan(_t(indptr), _t(indices), _t(last), HQ, HKV, D, P,
               q_data_type=torch.float16, split_merge=how)
        outs[how] = w.run(_t(qh, torch.float16), cache).float()
    wo, _ = ref.batch_decode(_round(qh, torch.float16),
                             _round(hk, torch.float16), None, "NHD", indptr,
                             indices, last)
    for how, o in outs.items():
        err = _rel(o, wo)
        print(f"  decode split_merge={how}: rel {err:.2e}")
        assert err < 2e-3
    diff = float((outs["auto"] - outs["last"]).abs().max())
    print(f"  decode auto vs last: max |diff| {diff:.2e}")
    assert diff < 2e-3
    heads, lens = 128, [6000]
    mla_indptr = np.array([0, (lens[0] + 63) // 64], np.int32)
    mla_num = int(mla_indptr[-1]) + 2
    mla_indices = rng.permutation(mla_num)[:mla_indptr[-1]].astype(np.int32)
    kv = _t(rng.uniform(-1, 1, (mla_num, 64, 576)).astype(np.float32),
            torch.bfloat16)
    qn = _t(rng.uniform(-1, 1, (1, heads, 512)).astype(np.float32),
            torch.bfloat16)
    qp = _t(rng.uniform(-1, 1, (1, heads, 64)).astype(np.float32),
            torch.bfloat16)
    mla = {}
    for how in ("auto", "last"):
        w = pagedattn.BatchMLAPagedAttentionWrapper(None)
        w.plan(torch.arange(2, dtype=torch.int32), mla_indptr,
               _t(mla_indices), np.array(lens, np.int32), heads, 512, 64, 64,
               False, 1 / math.sqrt(192), torch.bfloat16, torch.bfloat16,
               split_merge=how)
        mla[how] = w.run(qn, qp, kv).float()
    diff = float((mla["auto"] - mla["last"]).abs().max())
    scale = float(mla["last"].abs().max())
    print(f"  MLA auto vs last: max |diff| {diff:.2e} (max |o| {scale:.2e})")
    assert diff <= 1e-2 * max(scale, 1e-6)


def test_prefill_cuda():
    rng = _seed("prefill")
    kv_lens, qo_lens = [700, 33, 0, 128], [700, 5, 0, 64]
    qo = np.concatenate([[0], np.cumsum(qo_lens)]).astype(np.int32)
    indptr, indices, last, num = _table(rng, kv_lens)
    cache, hk, _ = _cache(rng, num)
    qh = rng.uniform(-1, 1, (qo[-1], HQ, D)).astype(np.float32)
    q = _t(qh, torch.float16)
    for causal in (False, True):
        w = pagedattn.BatchPrefillWithPagedKVCacheWrapper(None)
        w.plan(_t(qo), _t(indptr), _t(indices), _t(last), HQ, HKV, D, P,
               causal=causal)
        o, lse = w.run(q, cache, return_lse=True)
        wo, wl = ref.batch_prefill(_round(qh, torch.float16),
                                   qo, _round(hk, torch.float16), None,
                                   "NHD", indptr, indices, last,
                                   causal=causal)
        err = _rel(o, wo)
        print(f"  prefill causal={causal}: rel {err:.2e}")
        assert err < 2e-3
        _lse_ok(lse, wl)
        if HAVE_FI:
            import flashinfer
            fw = flashinfer.BatchPrefillWithPagedKVCacheWrapper(
                torch.empty(128 << 20, dtype=torch.uint8, device="cuda"))
            keep = np.array([0, 1, 3])  # FlashInfer: no empty request
            # same tensors, the requests with keys only
            sub_qo = np.concatenate([[0], np.cumsum(np.array(qo_lens)[keep])])
            sub_ip = np.concatenate([[0], np.cumsum(np.diff(indptr)[keep])])
            sub_ix = np.concatenate([indices[indptr[i]:indptr[i + 1]]
                                     for i in keep])
            rows = np.concatenate([np.arange(qo[i], qo[i + 1]) for i in keep])
            fw.plan(_t(sub_qo.astype(np.int32)), _t(sub_ip.astype(np.int32)),
                    _t(sub_ix.astype(np.int32)), _t(last[keep]), HQ, HKV, D,
                    P, causal=causal)
            fo = fw.run(q[_t(rows)].contiguous(), cache)
            diff = (fo.float() - o[_t(rows)].float()).abs().max().item()
            print(f"  prefill vs FlashInfer: max |diff| {diff:.2e}")
            assert diff < 4e-3
    # a custom mask
    mask = rng.random(int(np.sum(np.array(qo_lens) * np.array(kv_lens)))) < .5
    w = pagedattn.BatchPrefillWithPagedKVCacheWrapper(None)
    w.plan(qo, indptr, indices, last, HQ, HKV, D, P, custom_mask=_t(mask))
    o = w.run(q, cache)
    wo, _ = ref.batch_prefill(_round(qh, torch.float16), qo,
                              _round(hk, torch.float16), None, "NHD", indptr,
                              indices, last, custom_mask=mask)
    err = _rel(o, wo)
    print(f"  prefill custom mask: rel {err:.2e}")
    assert err < 2e-3


def test_cascade_merge_append_cuda():
    rng = _seed("cascade")
    shared, own = 512, [31, 200, 7]
    b = len(own)
    ip0, ix0, lp0, n0 = _table(rng, [shared])
    ip1, ix1, lp1, n1 = _table(rng, own)
    ix1 = ix1 + n0
    cache, hk, _ = _cache(rng, n0 + n1)
    qh = rng.uniform(-1, 1, (b, HQ, D)).astype(np.float32)
    qo0, qo1 = np.array([0, b], np.int32), np.arange(b + 1, dtype=np.int32)
    w = pagedattn.MultiLevelCascadeAttentionWrapper(2, None)
    w.plan([qo0, qo1], [ip0, ip1], [ix0, ix1], [lp0, lp1], HQ, HKV, D, P)
    o = w.run(_t(qh, torch.float16), cache)
    wo, _ = ref.cascade(_round(qh, torch.float16), [qo0, qo1],
                        _round(hk, torch.float16), None, "NHD", [ip0, ip1],
                        [ix0, ix1], [lp0, lp1])
    err = _rel(o, wo)
    print(f"  cascade: rel {err:.2e}")
    assert err < 2e-3
    # merge_state / merge_states
    n = 77
    va = rng.uniform(-1, 1, (n, HQ, D)).astype(np.float32)
    vb = rng.uniform(-1, 1, (n, HQ, D)).astype(np.float32)
    sa = rng.uniform(-4, 4, (n, HQ)).astype(np.float32)
    sb = rng.uniform(-4, 4, (n, HQ)).astype(np.float32)
    v, s = pagedattn.merge_state(_t(va, torch.float16), _t(sa),
                                 _t(vb, torch.float16), _t(sb))
    wv, ws = ref.merge_state(_round(va, torch.float16), sa,
                             _round(vb, torch.float16), sb, base2=True)
    err = _rel(v, wv)
    print(f"  merge_state: rel {err:.2e}")
    assert err < 2e-3
    st = np.stack([va, vb], 1)
    ss = np.stack([sa, sb], 1)
    v2, _ = pagedattn.merge_states(_t(st, torch.float16), _t(ss))
    assert _rel(v2, wv) < 2e-3
    # append
    seq = np.array([20, 50], np.int32)
    add = np.array([4, 9], np.int32)
    ip, ix, lp, num = _table(rng, list(seq))
    kvc, hkc, _ = _cache(rng, num)
    ai = np.concatenate([[0], np.cumsum(add)]).astype(np.int32)
    bi, pos = pagedattn.get_batch_indices_positions(_t(ai), _t(seq), 13)
    kn = rng.uniform(-1, 1, (13, HKV, D)).astype(np.float32)
    vn = rng.uniform(-1, 1, (13, HKV, D)).astype(np.float32)
    want = _round(hkc, torch.float16).copy()
    ref.append_paged_kv_cache(_round(kn, torch.float16),
                              _round(vn, torch.float16), bi.cpu().numpy(),
                              pos.cpu().numpy(), want, None, ix, ip, lp,
                              "NHD")
    pagedattn.append_paged_kv_cache(_t(kn, torch.float16),
                                    _t(vn, torch.float16), bi, pos, kvc,
                                    _t(ix), _t(ip), _t(lp))
    assert np.array_equal(kvc.float().cpu().numpy(), want)
    print("  append_paged_kv_cache: exact")


def test_vllm_cuda():
    rng = _seed("vllm")
    bs, blocks = P, 64
    seq_lens = np.array([1, 0, 333, 70], np.int32)
    kc = _t(rng.uniform(-1, 1, (blocks, bs, HKV, D)).astype(np.float32),
            torch.float16)
    vc = _t(rng.uniform(-1, 1, (blocks, bs, HKV, D)).astype(np.float32),
            torch.float16)
    perm = rng.permutation(blocks).astype(np.int32)
    bt = np.zeros((4, 30), np.int32)
    at = 0
    for i, l in enumerate(seq_lens):
        n = (l + bs - 1) // bs
        bt[i, :n] = perm[at:at + n]
        at += n
    # The cache write first: new tokens at the sequences' last slots.
    slots = np.array([bt[0, 0] * bs, -1, bt[2, 332 // bs] * bs + 332 % bs],
                     np.int64)
    kn = _t(rng.uniform(-1, 1, (3, HKV, D)).astype(np.float32), torch.float16)
    vn = _t(rng.uniform(-1, 1, (3, HKV, D)).astype(np.float32), torch.float16)
    pagedattn.vllm.reshape_and_cache_flash(kn, vn, kc, vc, _t(slots))
    assert torch.equal(kc[bt[0, 0], 0], kn[0])
    assert torch.equal(vc[bt[2, 332 // bs], 332 % bs], vn[2])
    q = _t(rng.uniform(-1, 1, (4, HQ, D)).astype(np.float32), torch.float16)
    out = torch.empty_like(q)
    pagedattn.vllm.paged_attention_v1(out, q, kc, vc, HKV, 1 / math.sqrt(D),
                                      _t(bt), _t(seq_lens), bs,
                                      int(seq_lens.max()))
    ip, ix, last = pagedattn.vllm.block_tables_to_csr(bt, seq_lens, bs)
    wo, _ = ref.batch_decode(q.float().cpu().numpy(),
                             kc.float().cpu().numpy(),
                             vc.float().cpu().numpy(), "NHD", ip, ix, last)
    err = _rel(out, wo)
    print(f"  vLLM reshape_and_cache_flash + paged_attention_v1: rel "
          f"{err:.2e}")
    assert err < 2e-3


def test_torch_compile_cuda():
    rng = _seed("compile")
    kv_lens = [100, 3000]
    indptr, indices, last, num = _table(rng, kv_lens)
    cache, hk, _ = _cache(rng, num)
    w = pagedattn.BatchDecodeWithPagedKVCacheWrapper(None)
    w.plan(indptr, indices, last, HQ, HKV, D, P)
    lin = torch.nn.Linear(D, D, dtype=torch.float16, device="cuda")

    def step(x):
        q = lin(x)
        return w.run(q, cache) * 2

    compiled = torch.compile(step, fullgraph=True)
    x = torch.randn(2, HQ, D, dtype=torch.float16, device="cuda")
    with torch.no_grad():  # inference: run_plan has no autograd formula
        want = step(x)
        got = compiled(x)
    diff = (got - want).abs().max().item()
    print(f"  torch.compile(fullgraph) decode step: max |diff| {diff:.2e}")
    assert diff < 1e-3


def test_errors_cuda():
    rng = _seed("errors")
    indptr, indices, last, num = _table(rng, [40])
    cache, _, _ = _cache(rng, num)
    w = pagedattn.BatchDecodeWithPagedKVCacheWrapper(None)
    bad = indices.copy()
    bad[0] = num + 3
    w.plan(indptr, bad, last, HQ, HKV, D, P)
    try:
        w.run(torch.zeros(1, HQ, D, dtype=torch.float16, device="cuda"),
              cache)
    except pagedattn.PagedAttnError as e:
        print(f"  rejects a page out of range: {e}")
    else:
        raise AssertionError("a page out of range was accepted")


def test_pool_cascade_cuda():
    """The page pool's tables on CUDA tensors: decode over the pool's CSR
    table, and the automatic cascade (the runtime's pa_cascade_run) equal
    to it."""
    from pagedattn.pool import PagePool, apply_copies
    rng = _seed("pool")
    n_pages = 64
    pool = PagePool(n_pages, P)
    host = rng.uniform(-1, 1, (n_pages, 2, P, HKV, D)).astype(np.float32)
    cache = _t(host, torch.float16)
    system = list(range(3 * P))
    seqs = [pool.add_sequence(system + [100 + i, 200 + i])[0]
            for i in range(4)]
    seqs.append(pool.add_sequence(list(range(500, 530)))[0])
    seqs.append(pool.fork(seqs[0]))
    _, copies = pool.append(seqs, [1] * len(seqs), list(range(len(seqs))))
    apply_copies(cache, copies)
    ip, ix, lp = pool.csr_table(seqs)
    casc = pool.auto_cascade(seqs)
    assert casc.num_levels >= 2, casc.num_levels
    q = _t(rng.uniform(-1, 1, (len(seqs), HQ, D)).astype(np.float32),
           torch.float16)
    rows = torch.as_tensor(np.asarray(casc.rows()), device="cuda")
    w = pagedattn.MultiLevelCascadeAttentionWrapper(casc.num_levels, None)
    w.plan(*casc.plan_args(), HQ, HKV, D, P)
    o_c = w.run(q[rows].contiguous(), cache)
    dw = pagedattn.BatchDecodeWithPagedKVCacheWrapper(None)
    dw.plan(ip, ix, lp, HQ, HKV, D, P)
    o = dw.run(q, cache)
    torch.cuda.synchronize()
    err = _rel(o_c, o[rows].float().cpu().numpy().astype(np.float64))
    print(f"  pool: {casc.num_levels} levels, {len(copies)} page copies, "
          f"cascade vs decode rel {err:.2e}")
    assert err < 2e-3


def test_mla_cuda():
    """BatchMLAPagedAttentionWrapper on torch CUDA tensors (the runtime's
    pa_mla_decode with automatic split-KV) against the float64 oracle, and
    beside FlashInfer's MLA where it imports."""
    rng = _seed("test_mla_cuda")
    scale = 1 / math.sqrt(192)
    for heads in (16, 128):
        lens = [0, 1, 700, 5000, 64]
        pages = [(l + 63) // 64 for l in lens]
        indptr = np.concatenate([[0], np.cumsum(pages)]).astype(np.int32)
        num = int(indptr[-1]) + 3
        indices = rng.permutation(num)[:indptr[-1]].astype(np.int32)
        host = rng.uniform(-1, 1, (num, 64, 576)).astype(np.float32)
        qn = rng.uniform(-1, 1, (len(lens), heads, 512)).astype(np.float32)
        qp = rng.uniform(-1, 1, (len(lens), heads, 64)).astype(np.float32)
        kv, tqn, tqp = (_t(host, torch.bfloat16), _t(qn, torch.bfloat16),
                        _t(qp, torch.bfloat16))
        w = pagedattn.BatchMLAPagedAttentionWrapper(None)
        w.plan(torch.arange(len(lens) + 1, dtype=torch.int32), indptr,
               _t(indices), np.array(lens, np.int32), heads, 512, 64, 64,
               False, scale, torch.bfloat16, torch.bfloat16)
        o, lse = w.run(tqn, tqp, kv, return_lse=True)
        torch.cuda.synchronize()
        hk, hn, hp = (_round(host, torch.bfloat16), _round(qn, torch.bfloat16),
                      _round(qp, torch.bfloat16))
        want = np.zeros((len(lens), heads, 512))
        want_lse = np.full((len(lens), heads), -np.inf)
        for r, l in enumerate(lens):
            if not l:
                continue
            rows = hk[indices[indptr[r]:indptr[r + 1]]].reshape(-1, 576)[:l]
            s_ = np.concatenate([hn[r], hp[r]], -1).astype(np.float64) @ \
                rows.T.astype(np.float64) * scale
            m = s_.max(-1, keepdims=True)
            e = np.exp(s_ - m)
            want[r] = e / e.sum(-1, keepdims=True) @ rows[:, :512]
            want_lse[r] = m[:, 0] + np.log(e.sum(-1))
        err = _rel(o, want)
        print(f"  MLA {heads} heads: rel o {err:.2e}")
        assert err < 1e-2
        _lse_ok(lse, want_lse)
        if HAVE_FI:
            import flashinfer
            ws = torch.empty(128 << 20, dtype=torch.uint8, device="cuda")
            fw = flashinfer.mla.BatchMLAPagedAttentionWrapper(ws,
                                                              backend="fa2")
            fw.plan(torch.arange(len(lens) + 1, dtype=torch.int32,
                                 device="cuda"), _t(indptr), _t(indices),
                    _t(np.array(lens, np.int32)), heads, 512, 64, 64, False,
                    scale, torch.bfloat16, torch.bfloat16,
                    kv_cache_layout="packed", query_layout="split")
            fo = fw.run(query=(tqn, tqp), kv_cache=kv)
            diff = float((fo.float() - o.float())[1:].abs().max())
            print(f"  MLA {heads} heads: max |ours - FlashInfer FA2| "
                  f"{diff:.2e}")
            assert diff < 3e-2



def test_mla_cuda_graph():
    """pa_mla_decode captured in a CUDA graph (its counters' memset and the
    cooperative launch of the splits' merge together): replays with new
    queries give what eager calls give, for one request (the mma.sync
    kernel, 32 splits) and four (the wgmma kernel where the bundle has it)."""
    rng = _seed("test_mla_cuda_graph")
    scale = 1 / math.sqrt(192)
    for lens in ([6000], [3000, 100, 0, 9000]):
        pages = [(l + 63) // 64 for l in lens]
        indptr = np.concatenate([[0], np.cumsum(pages)]).astype(np.int32)
        num = int(indptr[-1]) + 2
        indices = rng.permutation(num)[:indptr[-1]].astype(np.int32)
        kv = _t(rng.uniform(-1, 1, (num, 64, 576)).astype(np.float32),
                torch.bfloat16)
        shape = (len(lens), 128)
        qn = _t(rng.uniform(-1, 1, shape + (512,)).astype(np.float32),
                torch.bfloat16)
        qp = _t(rng.uniform(-1, 1, shape + (64,)).astype(np.float32),
                torch.bfloat16)
        w = pagedattn.BatchMLAPagedAttentionWrapper(None)
        w.plan(torch.arange(len(lens) + 1, dtype=torch.int32), indptr,
               _t(indices), np.array(lens, np.int32), 128, 512, 64, 64,
               False, scale, torch.bfloat16, torch.bfloat16)
        out = torch.empty(shape + (512,), dtype=torch.bfloat16, device="cuda")
        lse = torch.empty(shape, dtype=torch.float32, device="cuda")
        w.run(qn, qp, kv, out=out, lse=lse)  # warm-up: the workspace
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            w.run(qn, qp, kv, out=out, lse=lse)
        for step in range(3):
            qn.copy_(_t(rng.uniform(-1, 1, shape + (512,))
                        .astype(np.float32), torch.bfloat16))
            graph.replay()
            torch.cuda.synchronize()
            got_o, got_lse = out.clone(), lse.clone()
            want_o, want_lse = w.run(qn, qp, kv, return_lse=True)
            torch.cuda.synchronize()
            do = float((got_o.float() - want_o.float()).abs().max())
            finite = torch.isfinite(want_lse)
            assert torch.equal(finite, torch.isfinite(got_lse))
            dl = float((got_lse - want_lse)[finite].abs().max())
            print(f"  MLA graph {lens} replay {step}: max |o diff| {do:.2e}, "
                  f"max |lse diff| {dl:.2e}")
            assert do < 1e-2 and dl < 1e-3
            assert not torch.isnan(got_o).any()


if __name__ == "__main__":
    if not HAVE_CUDA:
        print("SKIP: no CUDA device")
        sys.exit(0)
    failed = 0
    for name, fn in list(globals().items()):
        if name.startswith("test_") and callable(fn):
            print(name)
            try:
                fn()
                print(f"PASS {name}")
            except Exception:
                failed += 1
                traceback.print_exc()
                print(f"FAIL {name}")
    print(f"{'FAIL' if failed else 'PASS'}: {failed} failed")
    sys.exit(1 if failed else 0)
