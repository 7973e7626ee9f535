"""merge_state(s), append_paged_kv_cache, packbits on CPU arrays."""

import numpy as np
import pytest

import pagedattn
import reference as ref
from conftest import lse_err, make_cache, make_table, rel_err


@pytest.mark.parametrize("n", [1, 37])
def test_merge_state(rng, n):
    h, d = 4, 64
    va = rng.uniform(-1, 1, (n, h, d)).astype(np.float16)
    vb = rng.uniform(-1, 1, (n, h, d)).astype(np.float16)
    sa = rng.uniform(-5, 5, (n, h)).astype(np.float32)
    sb = rng.uniform(-5, 5, (n, h)).astype(np.float32)
    sb[0, 0] = -np.inf  # a state of weight 0
    v, s = pagedattn.merge_state(va, sa, vb, sb)
    wv, ws = ref.merge_state(va, sa, vb, sb, base2=True)
    assert rel_err(v, wv) < 2e-3
    assert lse_err(s, ws) < 1e-4
    v2, s2 = va.copy(), sa.copy()
    pagedattn.merge_state_in_place(v2, s2, vb, sb)
    assert rel_err(v2, wv) < 2e-3 and lse_err(s2, ws) < 1e-4


@pytest.mark.parametrize("states", [1, 5])
def test_merge_states(rng, states):
    n, h, d = 9, 2, 32
    v = rng.uniform(-1, 1, (n, states, h, d)).astype(np.float16)
    s = rng.uniform(-3, 3, (n, states, h)).astype(np.float32)
    o, lse = pagedattn.merge_states(v, s)
    wo, wl = ref.merge_states(v, s, base2=True)
    assert rel_err(o, wo) < 2e-3 and lse_err(lse, wl) < 1e-4


@pytest.mark.parametrize("layout", ["NHD", "HND"])
@pytest.mark.parametrize("joint", [True, False])
def test_append_paged_kv_cache(rng, layout, joint):
    p, hkv, d = 4, 2, 32
    seq_lens = np.array([5, 0, 11], np.int32)
    append_lens = np.array([3, 0, 6], np.int32)
    indptr, indices, last, npg = make_table(rng, list(seq_lens), p)
    cache = make_cache(rng, npg, p, hkv, d, layout, joint)
    append_indptr = np.concatenate([[0], np.cumsum(append_lens)]).astype(
        np.int32)
    nnz = int(append_indptr[-1])
    bi, pos = pagedattn.get_batch_indices_positions(append_indptr, seq_lens,
                                                    nnz)
    wbi, wpos = ref.get_batch_indices_positions(append_indptr, seq_lens, nnz)
    assert (bi == wbi).all() and (pos == wpos).all()
    k_new = rng.uniform(-1, 1, (nnz, hkv, d)).astype(np.float16)
    v_new = rng.uniform(-1, 1, (nnz, hkv, d)).astype(np.float16)
    want = [c.copy() for c in cache] if not joint else cache.copy()
    if joint:
        ref.append_paged_kv_cache(k_new, v_new, bi, pos, want, None, indices,
                                  indptr, last, layout)
    else:
        ref.append_paged_kv_cache(k_new, v_new, bi, pos, want[0], want[1],
                                  indices, indptr, last, layout)
    pagedattn.append_paged_kv_cache(k_new, v_new, bi, pos, cache, indices,
                                    indptr, last, kv_layout=layout)
    if joint:
        assert np.array_equal(cache, want)
    else:
        assert np.array_equal(cache[0], want[0])
        assert np.array_equal(cache[1], want[1])
    with pytest.raises(ValueError, match="outside"):
        pagedattn.append_paged_kv_cache(k_new, v_new, bi, pos + 100, cache,
                                        indices, indptr, last,
                                        kv_layout=layout)


@pytest.mark.parametrize("bitorder", ["big", "little"])
def test_packbits(rng, bitorder):
    x = rng.random(45) < 0.5
    assert np.array_equal(pagedattn.packbits(x, bitorder),
                          np.packbits(x, bitorder=bitorder))
    indptr = np.array([0, 3, 3, 20, 45], np.int32)
    got, new = pagedattn.segment_packbits(x, indptr, bitorder)
    want, wnew = ref.segment_packbits(x, indptr, bitorder)
    assert np.array_equal(got, want) and np.array_equal(new, wnew)
