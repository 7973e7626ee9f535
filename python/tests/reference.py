"""Float64 numpy oracle for the Python tests (test-only).

Follows docs/Semantics.md literally: natural-log lse unless ``lse_base2``;
a row with no visible key gets ``o = 0`` and ``lse = -inf``. Conventions
follow FlashInfer's Python API where the tests compare against it:
``window_left = w`` keeps keys ``t >= pos - w`` (Semantics' ``window = w + 1``),
``-1`` means no window; ``logits_soft_cap = 0`` means off; ``sm_scale = None``
means ``1 / sqrt(D)``.

Cache layouts ('NHD' / 'HND'): split caches are ``[pages, P, Hkv, D]`` /
``[pages, Hkv, P, D]``; a joint cache ``[pages, 2, ...]`` may be passed as
``k_cache`` with ``v_cache=None``.
"""

import math

import numpy as np

LN2 = math.log(2.0)

__all__ = [
    "kv_lengths", "split_cache", "gather_kv", "attention", "batch_decode",
    "batch_prefill", "cascade", "merge_state", "merge_state_in_place",
    "merge_states", "packbits", "segment_packbits", "unpack_mask",
    "get_batch_indices_positions", "append_paged_kv_cache",
]


# --------------------------------------------------------------------------
# Page table and cache access
# --------------------------------------------------------------------------

def _i64(a):
    return np.asarray(a, dtype=np.int64).reshape(-1)


def _check_layout(layout):
    if layout not in ("NHD", "HND"):
        raise ValueError(f"layout must be 'NHD' or 'HND', got {layout!r}")


def _check_indptr(indptr, name, n=None):
    if indptr.size < 1 or indptr[0] != 0 or np.any(np.diff(indptr) < 0):
        raise ValueError(f"{name} must start at 0 and be non-decreasing")
    if n is not None and indptr[-1] != n:
        raise ValueError(f"{name}[-1] = {indptr[-1]} but the data has {n} rows")


def kv_lengths(kv_indptr, kv_last_page_len, page_size):
    """kv_len[b]: 0 without pages, else (npages - 1) * P + last_page_len."""
    indptr, last = _i64(kv_indptr), _i64(kv_last_page_len)
    _check_indptr(indptr, "kv_indptr")
    if last.size != indptr.size - 1:
        raise ValueError("kv_last_page_len must have B = len(kv_indptr) - 1 entries")
    npages = indptr[1:] - indptr[:-1]
    bad = (npages > 0) & ((last < 1) | (last > page_size))
    if np.any(bad):
        raise ValueError("kv_last_page_len must be in [1, page_size] for requests with pages")
    return np.where(npages == 0, 0, (npages - 1) * page_size + last).astype(np.int64)


def split_cache(k_cache, v_cache, layout):
    """(k, v) split caches from a split pair or a joint [pages, 2, ...] cache."""
    _check_layout(layout)
    if v_cache is None:
        if k_cache.ndim != 5 or k_cache.shape[1] != 2:
            raise ValueError("a joint cache must be [pages, 2, ...] (5-D)")
        return k_cache[:, 0], k_cache[:, 1]
    if k_cache.ndim != 4 or k_cache.shape != v_cache.shape:
        raise ValueError("split caches must be two 4-D arrays of one shape")
    return k_cache, v_cache


def _page_size(k, layout):
    return k.shape[1] if layout == "NHD" else k.shape[2]


def gather_kv(cache_k, cache_v, layout, kv_indptr, kv_indices, kv_last_page_len, b):
    """K, V of request b as float64 [kv_len, Hkv, D], through the page table."""
    k, v = split_cache(cache_k, cache_v, layout)
    P = _page_size(k, layout)
    indptr, indices = _i64(kv_indptr), _i64(kv_indices)
    kv_len = int(kv_lengths(indptr, kv_last_page_len, P)[b])
    pages = indices[indptr[b]:indptr[b + 1]]
    if np.any((pages < 0) | (pages >= k.shape[0])):
        raise ValueError("kv_indices entry out of [0, num_pages)")
    hkv, d = (k.shape[2], k.shape[3]) if layout == "NHD" else (k.shape[1], k.shape[3])

    def take(c):
        x = np.asarray(c[pages], dtype=np.float64)
        if layout == "HND":
            x = x.transpose(0, 2, 1, 3)          # [npages, P, Hkv, D]
        return x.reshape(-1, hkv, d)[:kv_len]

    return take(k), take(v)


# --------------------------------------------------------------------------
# Attention
# --------------------------------------------------------------------------

def attention(q_rows, K, V, q_positions, kv_len, causal=False, window_left=-1,
              logits_soft_cap=0.0, sm_scale=None, mask=None, alibi_slopes=None,
              lse_base2=False):
    """States of q_rows [n, Hq, D] over keys 0..kv_len-1 of K, V [>=kv_len, Hkv, D].

    Score order (Semantics s.5): s = sm_scale * q.k; s = c * tanh(s / c);
    s += slope[h] * (t - pos). Visible: causal t <= pos; window
    t >= pos - window_left; mask[i, t]. Returns (o [n, Hq, D], lse [n, Hq]).
    """
    q = np.asarray(q_rows, dtype=np.float64)
    if q.ndim != 3:
        raise ValueError("q_rows must be [n, Hq, D]")
    n, hq, d = q.shape
    K = np.asarray(K, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    kv_len = int(kv_len)
    if K.shape[0] < kv_len or V.shape[0] < kv_len or K.shape[1:] != V.shape[1:]:
        raise ValueError("K and V must be [>= kv_len, Hkv, D] of one shape")
    hkv = K.shape[1]
    if hkv == 0 or hq % hkv != 0 or K.shape[2] != d:
        raise ValueError("Hq must be a multiple of Hkv and head dims must match")
    g = hq // hkv
    pos = _i64(q_positions)
    if pos.size != n:
        raise ValueError("q_positions must have one entry per row")
    if sm_scale is None:
        sm_scale = 1.0 / math.sqrt(d)
    cap = float(logits_soft_cap or 0.0)
    if cap < 0:
        raise ValueError("logits_soft_cap must be >= 0 (0 = off)")
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != (n, kv_len):
            raise ValueError(f"mask must be [n, kv_len] = {(n, kv_len)}, got {mask.shape}")
    slopes = None if alibi_slopes is None else np.asarray(alibi_slopes, np.float64).reshape(-1)
    if slopes is not None and slopes.size != hq:
        raise ValueError("alibi_slopes must have Hq entries")

    o = np.zeros((n, hq, d), dtype=np.float64)
    lse = np.full((n, hq), -np.inf, dtype=np.float64)
    t_all = np.arange(kv_len, dtype=np.int64)
    for i in range(n):
        vis = np.ones(kv_len, dtype=bool)
        if causal:
            vis &= t_all <= pos[i]
        if window_left is not None and window_left >= 0:
            vis &= t_all >= pos[i] - int(window_left)
        if mask is not None:
            vis &= mask[i]
        t = t_all[vis]
        if t.size == 0:
            continue                              # identity state (0, -inf)
        # Only visible keys are touched, so other slots may hold anything.
        k = np.repeat(K[t], g, axis=1)            # [k, Hq, D]
        v = np.repeat(V[t], g, axis=1)
        s = sm_scale * np.einsum("hd,khd->hk", q[i], k)
        if cap > 0:
            s = cap * np.tanh(s / cap)
        if slopes is not None:
            s = s + slopes[:, None] * (t - pos[i])[None, :].astype(np.float64)
        m = s.max(axis=1, keepdims=True)
        p = np.exp(s - m)
        l = p.sum(axis=1)
        o[i] = np.einsum("hk,khd->hd", p, v) / l[:, None]
        lse[i] = m[:, 0] + np.log(l)
    if lse_base2:
        lse = lse / LN2
    return o, lse


def batch_decode(q, k_cache, v_cache, layout, kv_indptr, kv_indices, kv_last_page_len,
                 **opts):
    """pa.decode: q [B, Hq, D], request b's query at pos = kv_len[b] - 1.

    opts: window_left, logits_soft_cap, sm_scale, alibi_slopes, lse_base2.
    """
    for bad in ("causal", "mask"):
        if bad in opts:
            raise TypeError(f"batch_decode takes no {bad!r}")
    q = np.asarray(q, dtype=np.float64)
    k, _ = split_cache(k_cache, v_cache, layout)
    kv_len = kv_lengths(kv_indptr, kv_last_page_len, _page_size(k, layout))
    B = kv_len.size
    if q.ndim != 3 or q.shape[0] != B:
        raise ValueError(f"q must be [B={B}, Hq, D]")
    o = np.zeros(q.shape, dtype=np.float64)
    lse = np.zeros(q.shape[:2], dtype=np.float64)
    for b in range(B):
        K, V = gather_kv(k_cache, v_cache, layout, kv_indptr, kv_indices, kv_last_page_len, b)
        o[b:b + 1], lse[b:b + 1] = attention(q[b:b + 1], K, V, [kv_len[b] - 1], kv_len[b],
                                             causal=False, **opts)
    return o, lse


def unpack_mask(packed, mask_indptr, lengths):
    """Inverse of segment_packbits(little): bool segments of the given lengths."""
    packed = np.asarray(packed).astype(np.uint8).reshape(-1)
    ind = _i64(mask_indptr)
    out = []
    for b, n in enumerate(_i64(lengths)):
        seg = packed[ind[b]:ind[b + 1]]
        if seg.size != (n + 7) // 8:
            raise ValueError(f"packed segment {b} has {seg.size} bytes, expected {(n + 7) // 8}")
        out.append(np.unpackbits(seg, bitorder="little")[:n].astype(bool))
    return out


def _prefill(q, qo_indptr, k_cache, v_cache, layout, kv_indptr, kv_indices,
             kv_last_page_len, causal, masks, q_positions, need_pos, opts):
    q = np.asarray(q, dtype=np.float64)
    if q.ndim != 3:
        raise ValueError("q must be [Nq, Hq, D]")
    qo = _i64(qo_indptr)
    _check_indptr(qo, "qo_indptr", q.shape[0])
    k, _ = split_cache(k_cache, v_cache, layout)
    kv_len = kv_lengths(kv_indptr, kv_last_page_len, _page_size(k, layout))
    B = kv_len.size
    if qo.size != B + 1:
        raise ValueError("qo_indptr and kv_indptr must describe the same batch")
    o = np.zeros(q.shape, dtype=np.float64)
    lse = np.zeros(q.shape[:2], dtype=np.float64)
    for b in range(B):
        r0, r1 = int(qo[b]), int(qo[b + 1])
        qo_len = r1 - r0
        if q_positions is not None:
            pos = _i64(q_positions)[r0:r1]
            if np.any(pos < 0):
                raise ValueError("q_positions must be >= 0")
        else:
            if need_pos and qo_len > kv_len[b]:
                raise ValueError(f"request {b}: qo_len {qo_len} > kv_len {kv_len[b]}")
            pos = kv_len[b] - qo_len + np.arange(qo_len, dtype=np.int64)
        K, V = gather_kv(k_cache, v_cache, layout, kv_indptr, kv_indices, kv_last_page_len, b)
        m = None if masks is None else masks[b].reshape(qo_len, kv_len[b])
        o[r0:r1], lse[r0:r1] = attention(q[r0:r1], K, V, pos, kv_len[b], causal=causal,
                                         mask=m, **opts)
    return o, lse, qo, kv_len


def batch_prefill(q, qo_indptr, k_cache, v_cache, layout, kv_indptr, kv_indices,
                  kv_last_page_len, causal=False, custom_mask=None, packed_custom_mask=None,
                  mask_indptr=None, q_positions=None, **opts):
    """pa.prefill: query i of request b at pos = kv_len - qo_len + i (or q_positions).

    custom_mask: flat bools, request b's [qo_len, kv_len] row-major, concatenated.
    packed_custom_mask + mask_indptr: the same, packed per request (bitorder little).
    opts: window_left, logits_soft_cap, sm_scale, alibi_slopes, lse_base2.
    """
    masks = None
    has_mask = custom_mask is not None or packed_custom_mask is not None
    if has_mask and (causal or opts.get("window_left", -1) not in (None, -1)):
        raise ValueError("a custom mask excludes causal and window (Semantics s.6)")
    if custom_mask is not None or packed_custom_mask is not None:
        k, _ = split_cache(k_cache, v_cache, layout)
        kv_len = kv_lengths(kv_indptr, kv_last_page_len, _page_size(k, layout))
        qo = _i64(qo_indptr)
        seg = (qo[1:] - qo[:-1]) * kv_len
        if custom_mask is not None:
            flat = np.asarray(custom_mask).reshape(-1).astype(bool)
            if flat.size != int(seg.sum()):
                raise ValueError(f"custom_mask has {flat.size} entries, expected {int(seg.sum())}")
            starts = np.concatenate([[0], np.cumsum(seg)])
            masks = [flat[starts[b]:starts[b + 1]] for b in range(seg.size)]
        else:
            if mask_indptr is None:
                raise ValueError("packed_custom_mask needs mask_indptr")
            masks = unpack_mask(packed_custom_mask, mask_indptr, seg)
    o, lse, _, _ = _prefill(q, qo_indptr, k_cache, v_cache, layout, kv_indptr, kv_indices,
                            kv_last_page_len, causal, masks, q_positions, True, opts)
    return o, lse


def cascade(q, qo_indptrs, k_cache, v_cache, layout, kv_indptrs, kv_indices_list,
            kv_last_page_lens, causal=False, **opts):
    """pa.cascade: merge over levels of per-level prefill; causal on the last level only."""
    lse_base2 = opts.pop("lse_base2", False)
    L = len(qo_indptrs)
    if L < 1 or not (len(kv_indptrs) == len(kv_indices_list) == len(kv_last_page_lens) == L):
        raise ValueError("every level needs qo_indptr, kv_indptr, kv_indices, kv_last_page_len")
    positional = (opts.get("window_left", -1) not in (None, -1)
                  or opts.get("alibi_slopes") is not None)
    os_, ss = [], []
    for l in range(L):
        last = l == L - 1
        o, s, _, _ = _prefill(q, qo_indptrs[l], k_cache, v_cache, layout, kv_indptrs[l],
                              kv_indices_list[l], kv_last_page_lens[l], causal and last,
                              None, None, positional or (causal and last), opts)
        os_.append(o)
        ss.append(s)
    return merge_states(np.stack(os_, axis=1), np.stack(ss, axis=1), base2=lse_base2,
                        _in_natural=True)


# --------------------------------------------------------------------------
# Merging states
# --------------------------------------------------------------------------

def merge_states(v, s, base2=False, _in_natural=False):
    """N-ary merge: v [n, S, H, D], s [n, S, H] -> (o [n, H, D], lse [n, H]).

    lse in natural log, or base 2 (inputs and output) with base2=True.
    Zero-weight states never reach the result, even if non-finite.
    """
    v = np.asarray(v, dtype=np.float64)
    s = np.asarray(s, dtype=np.float64)
    if v.ndim != 4 or s.shape != v.shape[:3]:
        raise ValueError("v must be [n, S, H, D] and s [n, S, H]")
    if np.any(np.isnan(s)) or np.any(s == np.inf):
        raise ValueError("lse must be finite or -inf")
    if base2 and not _in_natural:
        s = s * LN2
    n, S, H, D = v.shape
    o = np.zeros((n, H, D), dtype=np.float64)
    lse = np.full((n, H), -np.inf, dtype=np.float64)
    if S > 0:
        m = s.max(axis=1)                                   # [n, H]
        live = m > -np.inf
        msafe = np.where(live, m, 0.0)
        w = np.exp(s - msafe[:, None, :])                   # exp(-inf) = 0
        wsum = np.where(live, w.sum(axis=1), 1.0)
        with np.errstate(invalid="ignore", over="ignore"):
            contrib = np.where((w > 0)[..., None], w[..., None] * v, 0.0).sum(axis=1)
        o = np.where(live[..., None], contrib / wsum[..., None], 0.0)
        lse = np.where(live, msafe + np.log(wsum), -np.inf)
    if base2:
        lse = lse / LN2
    return o, lse


def merge_state(v_a, s_a, v_b, s_b, base2=False):
    """Binary merge (o_a, lse_a) (+) (o_b, lse_b); v [n, H, D], s [n, H]."""
    return merge_states(np.stack([v_a, v_b], axis=1), np.stack([s_a, s_b], axis=1),
                        base2=base2)


def merge_state_in_place(v, s, v_other, s_other, mask=None, base2=False):
    """In-place merge into (v, s) of rows where mask (default all) is true."""
    o, l = merge_state(v, s, v_other, s_other, base2=base2)
    rows = slice(None) if mask is None else np.asarray(mask, dtype=bool).reshape(-1)
    v[rows] = o[rows]
    s[rows] = l[rows]


# --------------------------------------------------------------------------
# Mask packing
# --------------------------------------------------------------------------

def packbits(bools, bitorder="little"):
    """Pack a flat (non-zero = true) array into uint8, like numpy.packbits.

    NOTE: flashinfer.packbits defaults to bitorder='big'; masks use 'little'.
    """
    if bitorder not in ("big", "little"):
        raise ValueError("bitorder must be 'big' or 'little'")
    x = np.asarray(bools).reshape(-1) != 0
    return np.packbits(x, bitorder=bitorder)


def segment_packbits(bools, indptr, bitorder="little"):
    """Pack each segment bools[indptr[b]:indptr[b+1]] into ceil(n_b / 8) bytes.

    Returns (packed uint8, new_indptr int32); padding bits are 0.
    """
    x = np.asarray(bools).reshape(-1) != 0
    ind = _i64(indptr)
    _check_indptr(ind, "indptr")
    if ind[-1] > x.size:
        raise ValueError("indptr[-1] exceeds the input length")
    seg = ind[1:] - ind[:-1]
    new = np.zeros(ind.size, dtype=np.int64)
    new[1:] = np.cumsum((seg + 7) // 8)
    if new[-1] > np.iinfo(np.int32).max:
        raise ValueError("packed size does not fit int32")
    parts = [packbits(x[ind[b]:ind[b + 1]], bitorder) for b in range(seg.size)]
    packed = np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint8)
    return packed.astype(np.uint8), new.astype(np.int32)


# --------------------------------------------------------------------------
# KV cache writes
# --------------------------------------------------------------------------

def get_batch_indices_positions(append_indptr, seq_lens, nnz):
    """FlashInfer's CSR->COO: row j of request b -> (b, seq_len[b] - append_len[b] + j).

    Rows past append_indptr[-1] (up to nnz) get batch index -1 and position 0.
    """
    ind, sl = _i64(append_indptr), _i64(seq_lens)
    bi = np.full(nnz, -1, dtype=np.int32)
    pos = np.zeros(nnz, dtype=np.int32)
    for b in range(ind.size - 1):
        r = np.arange(ind[b], ind[b + 1])
        r = r[r < nnz]
        bi[r] = b
        pos[r] = r + sl[b] - ind[b + 1]
    return bi, pos


def append_paged_kv_cache(append_key, append_value, batch_indices, positions, k_cache,
                          v_cache, kv_indices, kv_indptr, kv_last_page_len, layout):
    """In place: row i goes to token positions[i] of request batch_indices[i].

    Page kv_indices[kv_indptr[b] + pos // P], slot pos % P (FlashInfer's kernel;
    kv_last_page_len is not used by it). v_cache=None: k_cache is a joint cache.
    Rows are written in increasing order (a later row wins).
    """
    k, v = split_cache(k_cache, v_cache, layout)
    P = _page_size(k, layout)
    ak, av = np.asarray(append_key), np.asarray(append_value)
    bi, pos = _i64(batch_indices), _i64(positions)
    indptr, indices = _i64(kv_indptr), _i64(kv_indices)
    if ak.shape != av.shape or ak.ndim != 3 or bi.size != ak.shape[0] or pos.size != ak.shape[0]:
        raise ValueError("append_key/value must be [nnz, Hkv, D] with nnz batch_indices/positions")
    B = indptr.size - 1
    for i in range(ak.shape[0]):
        b, p = int(bi[i]), int(pos[i])
        if not 0 <= b < B or p < 0:
            raise ValueError(f"row {i}: batch index {b} or position {p} out of range")
        it = int(indptr[b]) + p // P
        if it >= indptr[b + 1]:
            raise ValueError(f"row {i}: position {p} past request {b}'s pages")
        page, slot = int(indices[it]), p % P
        if layout == "NHD":
            k[page, slot], v[page, slot] = ak[i], av[i]
        else:
            k[page, :, slot], v[page, :, slot] = ak[i], av[i]
