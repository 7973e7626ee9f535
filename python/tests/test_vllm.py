"""vLLM's interface (flash layout) on CPU arrays against the oracle."""

import math

import numpy as np
import pytest

import pagedattn
import reference as ref
from conftest import rel_err


def _setup(rng, seq_lens, bs, hkv, d, blocks=12):
    kc = rng.uniform(-1, 1, (blocks, bs, hkv, d)).astype(np.float16)
    vc = rng.uniform(-1, 1, (blocks, bs, hkv, d)).astype(np.float16)
    perm = rng.permutation(blocks).astype(np.int32)
    need = [(l + bs - 1) // bs for l in seq_lens]
    width = max(need + [1])
    bt = np.zeros((len(seq_lens), width), np.int32)
    at = 0
    for i, n in enumerate(need):
        bt[i, :n] = perm[at:at + n]
        at += n
    return kc, vc, bt


@pytest.mark.parametrize("scale", [None, 0.07])
def test_paged_attention_v1(rng, scale):
    hq, hkv, d, bs = 8, 2, 32, 4
    seq_lens = np.array([5, 0, 13, 1], np.int32)
    kc, vc, bt = _setup(rng, seq_lens, bs, hkv, d)
    q = rng.uniform(-1, 1, (4, hq, d)).astype(np.float16)
    out = np.empty_like(q)
    sc = scale or 1 / math.sqrt(d)
    pagedattn.vllm.paged_attention_v1(out, q, kc, vc, hkv, sc, bt, seq_lens,
                                      bs, int(seq_lens.max()))
    ip, ix, last = pagedattn.vllm.block_tables_to_csr(bt, seq_lens, bs)
    want, _ = ref.batch_decode(q, kc, vc, "NHD", ip, ix, last,
                               sm_scale=scale)
    assert rel_err(out, want) < 2e-3
    assert (out[1] == 0).all()  # an empty sequence


def test_reshape_and_cache_flash(rng):
    hkv, d, bs, blocks = 2, 32, 4, 6
    kc = np.zeros((blocks, bs, hkv, d), np.float16)
    vc = np.zeros_like(kc)
    slots = np.array([3, -1, 17, 0, 22], np.int64)  # -1: padding, skipped
    k = rng.uniform(-1, 1, (5, hkv, d)).astype(np.float16)
    v = rng.uniform(-1, 1, (5, hkv, d)).astype(np.float16)
    pagedattn.vllm.reshape_and_cache_flash(k, v, kc, vc, slots)
    for r, s in enumerate(slots):
        if s < 0:
            continue
        assert np.array_equal(kc[s // bs, s % bs], k[r])
        assert np.array_equal(vc[s // bs, s % bs], v[r])
    assert np.count_nonzero(kc.reshape(-1, hkv * d).any(1)) == 4
    with pytest.raises(ValueError, match="past the cache"):
        pagedattn.vllm.reshape_and_cache_flash(k, v, kc, vc, slots + 100)
    with pytest.raises(NotImplementedError, match="fp8"):
        pagedattn.vllm.reshape_and_cache_flash(k, v, kc, vc, slots,
                                               kv_cache_dtype="fp8")


def test_rejects_legacy_layout(rng):
    q = np.zeros((1, 4, 32), np.float16)
    kc = np.zeros((4, 2, 4, 16, 8), np.float16)  # [blocks, Hkv, D/x, bs, x]
    vc = np.zeros((4, 2, 32, 16), np.float16)
    with pytest.raises(NotImplementedError, match="flash layout"):
        pagedattn.vllm.paged_attention_v1(np.empty_like(q), q, kc, vc, 2,
                                          0.1, np.zeros((1, 1), np.int32),
                                          np.array([3], np.int32), 16, 3)
    with pytest.raises(ValueError, match="columns"):
        pagedattn.vllm.block_tables_to_csr(np.zeros((1, 1), np.int32),
                                           np.array([40], np.int32), 16)
