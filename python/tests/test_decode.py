"""BatchDecodeWithPagedKVCacheWrapper on CPU arrays against the float64
oracle: FlashInfer's parameter grid at small sizes."""

import numpy as np
import pytest

import pagedattn
import reference as ref
from conftest import lse_err, make_cache, make_table, ref_cache, rel_err

TOL = 2e-3  # fp16, relative (norm)


@pytest.mark.parametrize("batch", [1, 4])
@pytest.mark.parametrize("page_size", [1, 5, 16])
@pytest.mark.parametrize("heads", [(4, 4), (8, 2)])
@pytest.mark.parametrize("layout", ["NHD", "HND"])
@pytest.mark.parametrize("joint", [True, False])
def test_decode_grid(rng, batch, page_size, heads, layout, joint):
    hq, hkv = heads
    d = 64
    kv_lens = [int(x) for x in rng.integers(0, 70, batch)]
    kv_lens[0] = max(kv_lens[0], 1)
    indptr, indices, last, npg = make_table(rng, kv_lens, page_size)
    cache = make_cache(rng, npg, page_size, hkv, d, layout, joint)
    q = rng.uniform(-1, 1, (batch, hq, d)).astype(np.float16)
    w = pagedattn.BatchDecodeWithPagedKVCacheWrapper(None, kv_layout=layout)
    w.plan(indptr, indices, last, hq, hkv, d, page_size)
    o, lse = w.run(q, cache, return_lse=True)
    k, v = ref_cache(cache)
    want_o, want_lse = ref.batch_decode(q, k, v, layout, indptr, indices,
                                        last)
    assert rel_err(o, want_o) < TOL
    assert lse_err(lse, want_lse / np.log(2.0)) < 1e-3


@pytest.mark.parametrize("opts", [
    dict(window_left=5), dict(logits_soft_cap=4.0), dict(sm_scale=0.3),
    dict(window_left=0, logits_soft_cap=2.5)])
def test_decode_options(rng, opts):
    hq, hkv, d, p = 8, 4, 32, 4
    kv_lens = [0, 1, 9, 33]
    indptr, indices, last, npg = make_table(rng, kv_lens, p)
    cache = make_cache(rng, npg, p, hkv, d, "NHD", True)
    q = rng.uniform(-2, 2, (4, hq, d)).astype(np.float16)
    w = pagedattn.BatchDecodeWithPagedKVCacheWrapper(None)
    w.plan(indptr, indices, last, hq, hkv, d, p, **opts)
    o, lse = w.run(q, cache, return_lse=True)
    want_o, want_lse = ref.batch_decode(q, cache, None, "NHD", indptr,
                                        indices, last, **opts)
    assert rel_err(o, want_o) < TOL
    assert lse_err(lse, want_lse / np.log(2.0)) < 1e-3
    # The empty request: o = 0, lse = -inf.
    assert (o[0] == 0).all() and np.isneginf(lse[0]).all()


def test_decode_rejects_bad_table(rng):
    indptr, indices, last, npg = make_table(rng, [10, 20], 16)
    cache = make_cache(rng, npg, 16, 2, 32, "NHD", True)
    q = np.zeros((2, 4, 32), np.float16)
    w = pagedattn.BatchDecodeWithPagedKVCacheWrapper(None)
    bad = indices.copy()
    bad[1] = npg
    w.plan(indptr, bad, last, 4, 2, 32, 16)
    with pytest.raises(pagedattn.PagedAttnError, match="out of range"):
        w.run(q, cache)
    with pytest.raises(pagedattn.PagedAttnError, match="kv_last_page_len"):
        w.plan(indptr, indices, np.array([0, 4], np.int32), 4, 2, 32, 16)
    with pytest.raises(pagedattn.PagedAttnError, match="decreases"):
        w.plan(np.array([0, 2, 1], np.int32), indices, last, 4, 2, 32, 16)
    w.plan(indptr, indices, last, 4, 2, 32, 16)
    with pytest.raises(ValueError, match="shape"):
        w.run(np.zeros((3, 4, 32), np.float16), cache)
    with pytest.raises(NotImplementedError):
        w.plan(indptr, indices, last, 4, 2, 32, 16,
               pos_encoding_mode="ROPE_LLAMA")
    with pytest.raises(ValueError, match="split_merge must be 'auto' or "
                       "'last', got 'first'"):
        w.plan(indptr, indices, last, 4, 2, 32, 16, split_merge="first")
