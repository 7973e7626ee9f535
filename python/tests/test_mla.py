"""BatchMLAPagedAttentionWrapper (pa.mla_decode) on CPU arrays against a
float64 numpy oracle of MLA decode, and its argument checks."""

import numpy as np
import pytest

import pagedattn
from conftest import lse_err, make_table, rel_err
from pagedattn.errors import PagedAttnError

SCALE = 1.0 / np.sqrt(192.0)


def oracle(q_nope, q_pe, kv, indptr, indices, lens, ckv):
    """o [B, H, ckv] and lse [B, H] (base 2) in float64."""
    b, h, _ = q_nope.shape
    o = np.zeros((b, h, ckv))
    lse = np.full((b, h), -np.inf)
    p = kv.shape[1]
    for r in range(b):
        if lens[r] == 0:
            continue
        pages = indices[indptr[r]:indptr[r + 1]]
        rows = kv[pages].reshape(-1, kv.shape[2])[:lens[r]].astype(np.float64)
        q = np.concatenate([q_nope[r], q_pe[r]], -1).astype(np.float64)
        s = (q @ rows.T) * SCALE
        m = s.max(-1, keepdims=True)
        e = np.exp(s - m)
        o[r] = (e / e.sum(-1, keepdims=True)) @ rows[:, :ckv]
        lse[r] = (m[:, 0] + np.log(e.sum(-1))) / np.log(2.0)
    return o, lse


def plan(w, lens, indptr, indices, heads, ckv, kpe, page, dtype):
    b = len(lens)
    w.plan(np.arange(b + 1, dtype=np.int32), indptr, indices,
           np.array(lens, np.int32), heads, ckv, kpe, page, False, SCALE,
           dtype, dtype)


@pytest.mark.parametrize("page_size", [1, 16])
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_mla_decode(rng, page_size, dtype):
    heads, ckv, kpe = 16, 64, 16
    lens = [0, 1, 37, 70]
    indptr, indices, _, npg = make_table(rng, lens, page_size)
    kv = rng.uniform(-1, 1, (npg, page_size, ckv + kpe)).astype(dtype)
    q_nope = rng.uniform(-1, 1, (len(lens), heads, ckv)).astype(dtype)
    q_pe = rng.uniform(-1, 1, (len(lens), heads, kpe)).astype(dtype)
    w = pagedattn.BatchMLAPagedAttentionWrapper(None)
    plan(w, lens, indptr, indices, heads, ckv, kpe, page_size,
         "float16" if dtype == np.float16 else "float32")
    o, lse = w.run(q_nope, q_pe, kv, return_lse=True)
    want_o, want_lse = oracle(q_nope, q_pe, kv, indptr, indices, lens, ckv)
    assert rel_err(o, want_o) < (2e-3 if dtype == np.float16 else 1e-5)
    assert lse_err(lse, want_lse) < 1e-3
    assert np.all(o[0] == 0) and np.all(np.isneginf(lse[0]))
    # FlashInfer's keyword form, packed cache.
    o2 = w.run(query=(q_nope, q_pe), kv_cache=kv)
    np.testing.assert_array_equal(o2, o)


def test_mla_errors(rng):
    heads, ckv, kpe, page = 16, 64, 16, 16
    lens = [20, 5]
    indptr, indices, _, npg = make_table(rng, lens, page)
    kv = rng.uniform(-1, 1, (npg, page, ckv + kpe)).astype(np.float16)
    qn = np.zeros((2, heads, ckv), np.float16)
    qp = np.zeros((2, heads, kpe), np.float16)
    w = pagedattn.BatchMLAPagedAttentionWrapper(None)
    with pytest.raises(PagedAttnError, match="kv_len_arr does not match"):
        plan(w, [40, 5], indptr, indices, heads, ckv, kpe, page, "float16")
    with pytest.raises(NotImplementedError, match="one query per request"):
        w.plan(np.array([0, 2, 3], np.int32), indptr, indices,
               np.array(lens, np.int32), heads, ckv, kpe, page, False, SCALE,
               "float16", "float16")
    with pytest.raises(ValueError, match="split_merge must be 'auto' or "
                       "'last', got 2"):
        w.plan(np.arange(3, dtype=np.int32), indptr, indices,
               np.array(lens, np.int32), heads, ckv, kpe, page, False, SCALE,
               "float16", "float16", split_merge=2)
    with pytest.raises(ValueError, match="sm_scale must be > 0"):
        w.plan(np.arange(3, dtype=np.int32), indptr, indices,
               np.array(lens, np.int32), heads, ckv, kpe, page, False, None,
               "float16", "float16")
    plan(w, lens, indptr, indices, heads, ckv, kpe, page, "float16")
    with pytest.raises(ValueError, match="kv_cache has shape"):
        w.run(qn, qp, kv[:, :, :ckv].copy())
    with pytest.raises(NotImplementedError, match="packed"):
        w.run(qn, qp, kv, kv)
    with pytest.raises(ValueError, match="q_pe has shape"):
        w.run(qn, qn, kv)
    bad = indices.copy()
    bad[0] = npg  # a page past the cache
    plan(w, lens, indptr, bad, heads, ckv, kpe, page, "float16")
    with pytest.raises(PagedAttnError, match="out of range"):
        w.run(qn, qp, kv)
