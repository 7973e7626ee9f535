"""BatchPrefillWithPagedKVCacheWrapper and MultiLevelCascadeAttentionWrapper
on CPU arrays against the float64 oracle."""

import numpy as np
import pytest

import pagedattn
import reference as ref
from conftest import lse_err, make_cache, make_table, ref_cache, rel_err

TOL = 2e-3


def _requests(rng, batch, max_kv):
    kv = [int(x) for x in rng.integers(1, max_kv, batch)]
    qo = [int(rng.integers(1, k + 1)) for k in kv]
    if batch > 1:
        kv[-1], qo[-1] = 0, 0  # an empty request
    return qo, kv


@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("page_size", [1, 16])
@pytest.mark.parametrize("heads", [(4, 4), (8, 2)])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("layout", ["NHD", "HND"])
def test_prefill_grid(rng, batch, page_size, heads, causal, layout):
    hq, hkv, d = heads[0], heads[1], 64
    qo_lens, kv_lens = _requests(rng, batch, 50)
    qo_indptr = np.concatenate([[0], np.cumsum(qo_lens)]).astype(np.int32)
    indptr, indices, last, npg = make_table(rng, kv_lens, page_size)
    cache = make_cache(rng, npg, page_size, hkv, d, layout, joint=True)
    q = rng.uniform(-1, 1, (qo_indptr[-1], hq, d)).astype(np.float16)
    w = pagedattn.BatchPrefillWithPagedKVCacheWrapper(None, layout)
    w.plan(qo_indptr, indptr, indices, last, hq, hkv, d, page_size,
           causal=causal)
    o, lse = w.run(q, cache, return_lse=True)
    want_o, want_lse = ref.batch_prefill(q, qo_indptr, cache, None, layout,
                                         indptr, indices, last, causal=causal)
    assert rel_err(o, want_o) < TOL
    assert lse_err(lse, want_lse / np.log(2.0)) < 1e-3
    o2, lse_ln = w.run(q, cache, return_lse=True, lse_base="ln",
                       lse_layout="HN")
    assert lse_ln.shape == (hq, qo_indptr[-1])
    assert lse_err(lse_ln.T, want_lse) < 1e-3


@pytest.mark.parametrize("opts", [dict(window_left=3, causal=True),
                                  dict(logits_soft_cap=3.0),
                                  dict(sm_scale=0.2, causal=True)])
def test_prefill_options(rng, opts):
    hq, hkv, d, p = 4, 2, 32, 8
    qo_lens, kv_lens = [3, 7], [10, 7]
    qo_indptr = np.array([0, 3, 10], np.int32)
    indptr, indices, last, npg = make_table(rng, kv_lens, p)
    k, v = make_cache(rng, npg, p, hkv, d, "NHD", joint=False)
    q = rng.uniform(-2, 2, (10, hq, d)).astype(np.float16)
    w = pagedattn.BatchPrefillWithPagedKVCacheWrapper(None)
    w.plan(qo_indptr, indptr, indices, last, hq, hkv, d, p, **opts)
    o = w.run(q, (k, v))
    want_o, _ = ref.batch_prefill(q, qo_indptr, k, v, "NHD", indptr,
                                  indices, last, **opts)
    assert rel_err(o, want_o) < TOL


@pytest.mark.parametrize("packed", [False, True])
def test_prefill_custom_mask(rng, packed):
    hq, hkv, d, p = 4, 4, 32, 4
    qo_lens, kv_lens = [2, 5], [9, 5]
    qo_indptr = np.array([0, 2, 7], np.int32)
    indptr, indices, last, npg = make_table(rng, kv_lens, p)
    cache = make_cache(rng, npg, p, hkv, d, "NHD", joint=True)
    q = rng.uniform(-1, 1, (7, hq, d)).astype(np.float16)
    mask = rng.random(2 * 9 + 5 * 5) < 0.6
    mask[:9] = False  # a fully masked row: o = 0, lse = -inf
    w = pagedattn.BatchPrefillWithPagedKVCacheWrapper(None)
    if packed:
        seg = np.array([0, 18, 43])
        pk, _ = pagedattn.segment_packbits(mask, seg, bitorder="little")
        w.plan(qo_indptr, indptr, indices, last, hq, hkv, d, p,
               packed_custom_mask=pk)
    else:
        w.plan(qo_indptr, indptr, indices, last, hq, hkv, d, p,
               custom_mask=mask)
    o, lse = w.run(q, cache, return_lse=True)
    want_o, want_lse = ref.batch_prefill(q, qo_indptr, cache, None, "NHD",
                                         indptr, indices, last,
                                         custom_mask=mask)
    assert rel_err(o, want_o) < TOL
    assert lse_err(lse, want_lse / np.log(2.0)) < 1e-3
    assert (o[0] == 0).all() and np.isneginf(lse[0]).all()


def test_prefill_rejects(rng):
    indptr, indices, last, npg = make_table(rng, [4], 4)
    w = pagedattn.BatchPrefillWithPagedKVCacheWrapper(None)
    with pytest.raises(ValueError, match="qo_len <= kv_len"):
        w.plan(np.array([0, 5], np.int32), indptr, indices, last, 4, 4, 32, 4)
    with pytest.raises(ValueError, match="entries"):
        w.plan(np.array([0, 1, 2], np.int32), indptr, indices, last, 4, 4,
               32, 4)
    with pytest.raises(NotImplementedError):
        w.plan(np.array([0, 2], np.int32), indptr, indices, last, 4, 4, 32,
               4, head_dim_vo=16)
    with pytest.raises(KeyError):
        pagedattn.BatchPrefillWithPagedKVCacheWrapper(None, "NDH")


@pytest.mark.parametrize("causal", [False, True])
def test_cascade(rng, causal):
    hq, hkv, d, p = 8, 2, 32, 4
    shared, own = 13, [3, 6, 1]
    b = len(own)
    # Level 0: one segment of all queries over the shared pages; level 1:
    # each request's own pages (one query each).
    ip0, ix0, lp0, n0 = make_table(rng, [shared], p, extra_pages=0)
    ip1, ix1, lp1, n1 = make_table(rng, own, p, extra_pages=0)
    ix1 = ix1 + n0
    npg = n0 + n1
    cache = make_cache(rng, npg, p, hkv, d, "NHD", joint=True)
    q = rng.uniform(-1, 1, (b, hq, d)).astype(np.float16)
    qo0 = np.array([0, b], np.int32)
    qo1 = np.arange(b + 1, dtype=np.int32)
    w = pagedattn.MultiLevelCascadeAttentionWrapper(2, None)
    w.plan([qo0, qo1], [ip0, ip1], [ix0, ix1], [lp0, lp1], hq, hkv, d, p,
           causal=causal)
    o = w.run(q, cache)
    want_o, _ = ref.cascade(q, [qo0, qo1], cache, None, "NHD", [ip0, ip1],
                            [ix0, ix1], [lp0, lp1], causal=causal)
    assert rel_err(o, want_o) < TOL
    # Shared-prefix decoding equals decode over the concatenated tables.
    if not causal:
        full_ip = np.concatenate([[0], np.cumsum([ip0[1] + (ip1[i + 1] -
                                                            ip1[i])
                                                  for i in range(b)])])
        full_ix = np.concatenate([np.concatenate([ix0, ix1[ip1[i]:ip1[i + 1]]])
                                  for i in range(b)]).astype(np.int32)
        dw = pagedattn.BatchDecodeWithPagedKVCacheWrapper(None)
        dw.plan(full_ip.astype(np.int32), full_ix, lp1, hq, hkv, d, p)
        if shared % p == 0:
            assert rel_err(o, dw.run(q, cache)) < TOL


def test_cascade_short_prefix(rng):
    """A shared prefix shorter than the batch (more queries than keys in
    level 0) is allowed where positions do not matter."""
    hq, hkv, d, p = 4, 2, 32, 4
    b = 9
    ip0, ix0, lp0, n0 = make_table(rng, [5], p, extra_pages=0)
    ip1, ix1, lp1, n1 = make_table(rng, [2] * b, p, extra_pages=0)
    ix1 = ix1 + n0
    cache = make_cache(rng, n0 + n1, p, hkv, d, "NHD", joint=True)
    q = rng.uniform(-1, 1, (b, hq, d)).astype(np.float16)
    qo0 = np.array([0, b], np.int32)
    qo1 = np.arange(b + 1, dtype=np.int32)
    w = pagedattn.MultiLevelCascadeAttentionWrapper(2, None)
    w.plan([qo0, qo1], [ip0, ip1], [ix0, ix1], [lp0, lp1], hq, hkv, d, p)
    o = w.run(q, cache)
    want_o, _ = ref.cascade(q, [qo0, qo1], cache, None, "NHD", [ip0, ip1],
                            [ix0, ix1], [lp0, lp1])
    assert rel_err(o, want_o) < TOL
    with pytest.raises(ValueError, match="qo_len <= kv_len"):
        w.plan([qo0, qo1], [ip0, ip1], [ix0, ix1], [lp0, lp1], hq, hkv, d,
               p, window_left=3)


def test_plan_copies_the_table(rng):
    """plan() keeps its own copy: changing the caller's arrays afterwards
    changes nothing (FlashInfer's plan copies them too)."""
    indptr, indices, last, npg = make_table(rng, [20, 7], 4)
    cache = make_cache(rng, npg, 4, 2, 32, "NHD", True)
    q = rng.uniform(-1, 1, (2, 4, 32)).astype(np.float16)
    w = pagedattn.BatchDecodeWithPagedKVCacheWrapper(None)
    w.plan(indptr, indices, last, 4, 2, 32, 4)
    before = w.run(q, cache)
    indices[:] = 10**6  # would be out of range if it were read
    indptr[1] = 0
    assert np.array_equal(w.run(q, cache), before)


def test_outputs_checked(rng):
    indptr, indices, last, npg = make_table(rng, [20], 4)
    cache = make_cache(rng, npg, 4, 2, 32, "NHD", True)
    q = rng.uniform(-1, 1, (1, 4, 32)).astype(np.float16)
    w = pagedattn.BatchDecodeWithPagedKVCacheWrapper(None)
    w.plan(indptr, indices, last, 4, 2, 32, 4)
    with pytest.raises(ValueError, match="out has shape"):
        w.run(q, cache, out=np.empty((1, 4, 32), np.float32))
    lse = np.empty((1, 4), np.float32)
    o = w.run(q, cache, lse=lse)  # a caller's lse holds base 2
    _, want = w.run(q, cache, return_lse=True)
    assert np.array_equal(lse, want)
    with pytest.raises(NotImplementedError):
        pagedattn.BatchPrefillWithPagedKVCacheWrapper(None).plan(
            np.array([0, 1], np.int32), indptr, indices, last, 4, 2, 32, 4,
            use_fp16_qk_reduction=True)
