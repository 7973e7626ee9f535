"""The page pool (pagedattn.pool, libpa_pool.so; docs/PagePool.md): a
random trace against a contiguous model through the C API, copy-on-write
applied to a numpy cache, the three table forms and their converters with
bad input, and the flow pool -> tables -> plan -> run on CPU bundles: decode
over the pool's CSR table and the automatic cascade of a batch with a shared
prompt, against the float64 oracle."""

import numpy as np
import pytest

import pagedattn
import reference as ref
from conftest import make_cache, ref_cache, rel_err
from pagedattn.errors import PagedAttnError
from pagedattn.pool import (PagePool, PoolFullError, apply_copies, auto_cascade,
                            csr_to_tt, csr_to_vllm, shard_pages, tt_to_csr,
                            tt_to_vllm, vllm_to_csr, vllm_to_tt)

TOL = 2e-3


def gather(cache_tokens, pool, seq, p):
    n, pages = pool.sequence(seq)
    return [int(cache_tokens[pages[t // p], t % p]) for t in range(n)]


def test_random_trace_against_model(rng):
    p, n_pages = 4, 24
    pool = PagePool(n_pages, p)
    cache = np.full((n_pages, p), -1, np.int64)  # one token id per slot
    model = {}
    prompts = [list(rng.integers(0, 50, 3 * p)) for _ in range(3)]
    fulls = hits = copies_run = 0
    for _ in range(3000):
        r = rng.uniform()
        try:
            if not model or r < 0.25:
                t = prompts[rng.integers(3)][:rng.integers(0, 3 * p + 1)]
                t = t + list(rng.integers(100, 200, rng.integers(0, p)))
                sid, cached, slots = pool.add_sequence(t)
                assert cached % p == 0 and len(slots) == len(t) - cached
                assert cached <= max(len(t) - 1, 0)  # last token computed
                hits += cached
                cache.reshape(-1)[slots] = t[cached:]
                model[sid] = list(t)
            elif r < 0.6:
                ids = list(rng.choice(list(model), min(len(model), 3),
                                      replace=False))
                cnt = [int(c) for c in rng.integers(0, p + 2, len(ids))]
                toks = list(rng.integers(0, 1000, sum(cnt)))
                slots, copies = pool.append(ids, cnt, toks)
                copies_run += len(copies)
                apply_copies(cache, copies)
                cache.reshape(-1)[slots] = toks
                at = 0
                for i, c in zip(ids, cnt):
                    model[i] += toks[at:at + c]
                    at += c
            elif r < 0.75:
                parent = list(model)[rng.integers(len(model))]
                model[pool.fork(parent)] = list(model[parent])
            else:
                sid = list(model)[rng.integers(len(model))]
                pool.free(sid)
                del model[sid]
        except PoolFullError:
            fulls += 1
        pool.check()
        for sid, toks in model.items():
            assert gather(cache, pool, sid, p) == [int(x) for x in toks]
    st = pool.stats()
    assert st["num_sequences"] == len(model)
    assert fulls > 0 and hits > 0 and copies_run > 0


def test_fork_copy_on_write_and_errors():
    pool = PagePool(4, 2)
    a, cached, slots = pool.add_sequence([1, 2, 3])
    assert cached == 0 and len(slots) == 3
    b = pool.fork(a)
    _, pages_a = pool.sequence(a)
    assert pool.ref_count(int(pages_a[1])) == 2
    slots, copies = pool.append([b], [1], [9])
    assert copies.shape == (1, 3)
    assert copies[0, 0] == pages_a[1] and copies[0, 2] == 1
    _, pages_b = pool.sequence(b)
    assert slots[0] == pages_b[1] * 2 + 1
    with pytest.raises(PoolFullError, match="page pool full"):
        pool.add_sequence([5, 6, 7, 8, 9])
    with pytest.raises(PagedAttnError, match="is not live"):
        pool.fork(12345)
    with pytest.raises(PagedAttnError, match="appears twice"):
        pool.append([a, a], [1, 1], [1, 2])
    with pytest.raises(PagedAttnError, match="2 tokens for counts summing"):
        pool.append([a], [1], [1, 2])
    with pytest.raises(PagedAttnError, match="num_pages = 0"):
        PagePool(0, 16)
    pool.free(a)
    pool.free(b)
    assert pool.stats()["used_pages"] == 0
    # Prefix caching: the freed full page of [1, 2] is kept and reused.
    _, cached, _ = pool.add_sequence([1, 2, 7])
    assert cached == 2
    # ... but a prompt of cached full pages only recomputes its last page.
    _, cached, slots = pool.add_sequence([1, 2])
    assert cached == 0 and len(slots) == 2


def test_sizes_checked_before_allocating():
    pool = PagePool(4, 2)
    a, _, _ = pool.add_sequence([1, 2, 3])
    # Huge counts are rejected before a slots array of their size exists.
    with pytest.raises(PagedAttnError, match=r"counts\[0\] = 1099511627776 "
                                             r"exceeds the pool's 8 slots"):
        pool.append([a], [2**40])
    with pytest.raises(PoolFullError, match="sum to 10 tokens"):
        pool.append([a, pool.fork(a)], [5, 5])
    with pytest.raises(PagedAttnError, match="width = -1 not in"):
        pool.vllm_table([a], width=-1)
    with pytest.raises(PagedAttnError, match=r"width = 4294967296 not in"):
        pool.tt_table([a], width=2**32)
    ip, ix, lp = pool.csr_table([a])
    with pytest.raises(PagedAttnError, match=r"width = 1099511627776 not in"):
        csr_to_vllm(ip, ix, lp, 2, 4, width=2**40)
    with pytest.raises(PagedAttnError, match="width = -3 not in"):
        csr_to_tt(ip, ix, lp, 2, 4, width=-3)
    # seq_lens far beyond the width: an error from C, not a huge indices
    # array first.
    with pytest.raises(PagedAttnError, match=r"seq_lens\[0\] = 2147483647"):
        vllm_to_csr([[0, 1]], [2**31 - 1], 1, 4)
    with pytest.raises(PagedAttnError, match=r"cur_pos\[0\] = 2147483646"):
        tt_to_csr([[0, 1]], [2**31 - 2], 1, 4)
    pool.check()
    assert pool.sequence(a)[0] == 3


def test_tables_and_converters():
    pool = PagePool(16, 4, prefix_caching=False)
    a, _, _ = pool.add_sequence(list(range(6)))
    b, _, _ = pool.add_sequence([])
    ip, ix, lp = pool.csr_table([a, b])
    assert list(ip) == [0, 2, 2] and list(lp) == [2, 0]
    bt, sl = pool.vllm_table([a, b], width=3, pad=-1)
    assert bt.shape == (2, 3) and list(sl) == [6, 0]
    assert list(bt[0, :2]) == list(ix) and bt[0, 2] == -1
    pt, cp = pool.tt_table([a, b])
    assert pt.shape == (2, 2) and list(cp) == [5, -1]
    ip2, ix2, lp2 = vllm_to_csr(bt, sl, 4, 16)
    assert list(ix2) == list(ix) and list(lp2) == list(lp)
    t, c = vllm_to_tt(bt, sl, 4, 16)
    assert list(c) == [5, -1]
    v, s = tt_to_vllm(t, c, 4, 16)
    assert list(s) == [6, 0]
    ip3, ix3, _ = tt_to_csr(pt, cp, 4, 16)
    assert list(ix3) == list(ix)
    bt2, _ = csr_to_vllm(ip, ix, lp, 4, 16)
    assert bt2.shape == (2, 2)
    pt2, _ = csr_to_tt(ip, ix, lp, 4, 16, width=4, pad=7)
    assert list(pt2[1]) == [7, 7, 7, 7]
    with pytest.raises(PagedAttnError, match=r"kv_indices\[0\] = 20 out of "
                                             r"range \[0, 16\)"):
        csr_to_vllm(ip, [20, 1], lp, 4, 16)
    with pytest.raises(PagedAttnError, match=r"seq_lens\[0\] = 13 not in"):
        vllm_to_csr(bt, [13, 0], 4, 16)
    with pytest.raises(PagedAttnError, match=r"cur_pos\[1\] = -2"):
        tt_to_csr(pt, [5, -2], 4, 16)
    with pytest.raises(PagedAttnError, match="must be 2-d"):
        vllm_to_csr([1, 2], [4], 4, 16)
    with pytest.raises(PagedAttnError, match="more than the width 1"):
        pool.vllm_table([a], width=1)


def test_shard_pages_identity(rng):
    """Context parallelism: the devices' shards partition each request's
    pages, and merging the decodes of the shards (float64 oracle) gives the
    decode of the whole table, for 1-4 devices and both ownerships."""
    hq, hkv, d, p, n_pages = 4, 2, 16, 4, 40
    cache = make_cache(rng, n_pages, p, hkv, d, "NHD", joint=True)
    lens = [0, 1, 5, 13, 30, 4]
    ip = np.concatenate([[0], np.cumsum([-(-n // p) for n in lens])])
    ix = rng.permutation(n_pages)[:ip[-1]].astype(np.int32)
    lp = np.array([n - (-(-n // p) - 1) * p if n else 0 for n in lens],
                  np.int32)
    q = rng.uniform(-1, 1, (len(lens), hq, d)).astype(np.float16)
    k, v = ref_cache(cache)
    want, want_lse = ref.batch_decode(q, k, v, "NHD", ip, ix, lp)
    for devices in (1, 2, 3, 4):
        for rr in (False, True):
            shards = [shard_pages(ip, ix, lp, p, n_pages, devices, dev, rr)
                      for dev in range(devices)]
            for b in range(len(lens)):
                mine = sorted(int(x) for sp, sx, _ in shards
                              for x in sx[sp[b]:sp[b + 1]])
                assert mine == sorted(int(x) for x in ix[ip[b]:ip[b + 1]])
            states = [ref.batch_decode(q, k, v, "NHD", *sh) for sh in shards]
            o, lse = ref.merge_states(
                np.stack([st[0] for st in states], axis=1),
                np.stack([st[1] for st in states], axis=1))
            assert np.abs(o - want).max() < 1e-9, (devices, rr)
            assert np.allclose(lse, want_lse, atol=1e-9, equal_nan=True)
    with pytest.raises(PagedAttnError, match="device = 2 not in"):
        shard_pages(ip, ix, lp, p, n_pages, 2, 2)


def test_pool_decode_flow(rng):
    """pool -> CSR table -> plan -> run (CPU bundle) vs the oracle."""
    hq, hkv, d, p, n_pages = 4, 2, 32, 4, 32
    pool = PagePool(n_pages, p)
    cache = make_cache(rng, n_pages, p, hkv, d, "NHD", joint=True)
    seqs = [pool.add_sequence(list(rng.integers(0, 100, n)))[0]
            for n in (5, 9, 1)]
    slots, copies = pool.append(seqs, [1, 1, 1], [7, 8, 9])
    apply_copies(cache, copies)
    ip, ix, lp = pool.csr_table(seqs)
    q = rng.uniform(-1, 1, (len(seqs), hq, d)).astype(np.float16)
    w = pagedattn.BatchDecodeWithPagedKVCacheWrapper(None)
    w.plan(ip, ix, lp, hq, hkv, d, p)
    o = w.run(q, cache)
    k, v = ref_cache(cache)
    want, _ = ref.batch_decode(q, k, v, "NHD", ip, ix, lp)
    assert rel_err(o, want) < TOL


def test_auto_cascade_flow(rng):
    """A decode batch sharing a prompt (prefix cache + fork): the automatic
    cascade through MultiLevelCascadeAttentionWrapper equals decode over
    the full tables."""
    hq, hkv, d, p, n_pages = 4, 2, 32, 4, 64
    pool = PagePool(n_pages, p)
    cache = make_cache(rng, n_pages, p, hkv, d, "NHD", joint=True)
    system = list(rng.integers(0, 100, 3 * p))
    a = pool.add_sequence(system + [1, 2, 3])[0]
    b = pool.add_sequence(list(rng.integers(200, 300, 6)))[0]
    c, cached, _ = pool.add_sequence(system + [4, 5])
    assert cached == 3 * p
    e = pool.fork(a)
    seqs = [a, b, c, e]
    _, copies = pool.append(seqs, [1] * 4, [10, 11, 12, 13])
    apply_copies(cache, copies)
    ip, ix, lp = pool.csr_table(seqs)
    casc = pool.auto_cascade(seqs)
    assert casc.num_levels >= 2
    assert casc.cascade_pages < casc.flat_pages
    same = auto_cascade(ip, ix, lp, p, n_pages)
    assert [list(x) for lv in same.levels for x in lv] == \
        [list(x) for lv in casc.levels for x in lv]
    q = rng.uniform(-1, 1, (len(seqs), hq, d)).astype(np.float16)
    rows = casc.rows()
    w = pagedattn.MultiLevelCascadeAttentionWrapper(casc.num_levels, None)
    w.plan(*casc.plan_args(), hq, hkv, d, p)
    o_c = w.run(q[rows], cache)
    dw = pagedattn.BatchDecodeWithPagedKVCacheWrapper(None)
    dw.plan(ip, ix, lp, hq, hkv, d, p)
    o = dw.run(q, cache)
    assert rel_err(o_c, o[rows]) < TOL
    with pytest.raises(PagedAttnError, match="min_share_requests = 1"):
        pool.auto_cascade(seqs, min_share_requests=1)
