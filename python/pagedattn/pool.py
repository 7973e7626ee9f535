"""The page pool (docs/PagePool.md) through ctypes: libpa_pool.so, the C API
of pa_pool.h. It needs neither CUDA nor a GPU.

    pool = PagePool(num_pages=1024, page_size=16)
    seq, cached, slots = pool.add_sequence(prompt_ids)   # prefix caching
    slots, copies = pool.append([seq], [1], [next_id])    # decode step
    apply_copies(kv_cache, copies)                         # copy-on-write
    indptr, indices, last = pool.csr_table([seq, ...])     # for plan()
    cascade = pool.auto_cascade([seq, ...])                # shared prefixes

Slots are pa.append_kv_slots' slot mapping (page * page_size + offset);
CSR tables are what BatchDecodeWithPagedKVCacheWrapper.plan takes, and
AutoCascade.plan_args() what MultiLevelCascadeAttentionWrapper.plan takes.
"""

import ctypes
import os

import numpy as np

from .errors import PagedAttnError

PA_SUCCESS, PA_ERROR, PA_POOL_FULL = 0, 1, 2


class PoolFullError(PagedAttnError):
    """The pool lacks free + evictable pages for the request; nothing
    changed (preempt a sequence or wait)."""


i64, i32, c_int = ctypes.c_int64, ctypes.c_int32, ctypes.c_int
_P32 = ctypes.POINTER(i32)
_P64 = ctypes.POINTER(i64)
_VP = ctypes.c_void_p


class _Config(ctypes.Structure):
    _fields_ = [("num_pages", i64), ("page_size", i64),
                ("prefix_caching", c_int), ("hash_bits", c_int)]


class _Copy(ctypes.Structure):
    _fields_ = [("src", i32), ("dst", i32), ("num_tokens", i32)]


class _Stats(ctypes.Structure):
    _fields_ = [(n, i64) for n in (
        "num_pages", "free_pages", "cached_free_pages", "used_pages",
        "num_sequences", "cached_pages", "hit_pages", "evictions",
        "cow_copies", "metadata_bytes")]


class _CascadeOptions(ctypes.Structure):
    _fields_ = [("min_share_requests", i64), ("min_share_pages", i64),
                ("max_levels", i64)]


class _CascadeInfo(ctypes.Structure):
    _fields_ = [("num_levels", i64), ("num_query_rows", i64), ("batch", i64),
                ("cascade_pages", i64), ("flat_pages", i64)]


class _CascadeLevel(ctypes.Structure):
    _fields_ = [("qo_indptr", _P32), ("kv_indptr", _P32),
                ("kv_indices", _P32), ("kv_last_page_len", _P32),
                ("batch", i64), ("nnz", i64)]


_LIB = None


def library_path():
    """PAGEDATTN_POOL_LIB, else libpa_pool.so next to this package, in the
    build tree of PAGEDATTN_COMPILER (bin/pa-compile -> lib/Runtime/) or of
    the source checkout; else the loader's search path."""
    env = os.environ.get("PAGEDATTN_POOL_LIB")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    cands = [os.path.join(here, "libpa_pool.so")]
    comp = os.environ.get("PAGEDATTN_COMPILER")
    if comp:
        cands.append(os.path.join(os.path.dirname(os.path.abspath(comp)),
                                  "..", "lib", "Runtime", "libpa_pool.so"))
    cands.append(os.path.join(here, "..", "..", "build", "lib", "Runtime",
                              "libpa_pool.so"))
    for c in cands:
        if os.path.exists(c):
            return os.path.normpath(c)
    return "libpa_pool.so"


def lib():
    global _LIB
    if _LIB is None:
        path = library_path()
        try:
            l = ctypes.CDLL(path)
        except OSError as e:
            raise PagedAttnError(
                f"cannot load the page pool library {path} ({e}); set "
                f"PAGEDATTN_POOL_LIB to libpa_pool.so") from None
        l.pa_pool_last_error.restype = ctypes.c_char_p
        sigs = {
            "pa_pool_create": [ctypes.POINTER(_Config), ctypes.POINTER(_VP)],
            "pa_pool_add_sequence": [_VP, _P32, i64, _P64, _P64, _P32, i64],
            "pa_pool_append": [_VP, _P64, _P64, i64, _P32, _P32, i64,
                               ctypes.POINTER(_Copy), i64, _P64],
            "pa_pool_fork": [_VP, i64, _P64],
            "pa_pool_free_sequence": [_VP, i64],
            "pa_pool_sequence_info": [_VP, i64, _P64, _P64],
            "pa_pool_sequence_pages": [_VP, i64, _P32, i64],
            "pa_pool_ref_count": [_VP, i32, _P32],
            "pa_pool_get_stats": [_VP, ctypes.POINTER(_Stats)],
            "pa_pool_evict_all": [_VP, _P64],
            "pa_pool_check": [_VP],
            "pa_pool_table_sizes": [_VP, _P64, i64, _P64, _P64],
            "pa_pool_csr_table": [_VP, _P64, i64, _P32, _P32, i64, _P32],
            "pa_pool_vllm_table": [_VP, _P64, i64, i64, i32, _P32, _P32],
            "pa_pool_tt_table": [_VP, _P64, i64, i64, i32, _P32, _P32],
            "pa_csr_to_vllm": [_P32, _P32, i64, _P32, i64, i64, i64, i64, i32,
                               _P32, _P32],
            "pa_csr_to_tt": [_P32, _P32, i64, _P32, i64, i64, i64, i64, i32,
                             _P32, _P32],
            "pa_vllm_to_csr": [_P32, _P32, i64, i64, i64, i64, _P32, _P32,
                               i64, _P32],
            "pa_tt_to_csr": [_P32, _P32, i64, i64, i64, i64, _P32, _P32, i64,
                             _P32],
            "pa_vllm_to_tt": [_P32, _P32, i64, i64, i64, i64, _P32, _P32],
            "pa_shard_pages": [_P32, _P32, i64, _P32, i64, i64, i64, i64, i64,
                               c_int, _P32, _P32, i64, _P32],
            "pa_tt_to_vllm": [_P32, _P32, i64, i64, i64, i64, _P32, _P32],
            "pa_auto_cascade_build": [_P32, _P32, i64, _P32, i64, i64, i64,
                                      _P32, ctypes.POINTER(_CascadeOptions),
                                      ctypes.POINTER(_VP)],
            "pa_pool_auto_cascade": [_VP, _P64, i64, _P32,
                                     ctypes.POINTER(_CascadeOptions),
                                     ctypes.POINTER(_VP)],
            "pa_auto_cascade_get_info": [_VP, ctypes.POINTER(_CascadeInfo)],
            "pa_auto_cascade_get_order": [_VP, ctypes.POINTER(_P32)],
            "pa_auto_cascade_get_level": [_VP, i64,
                                          ctypes.POINTER(_CascadeLevel)],
        }
        for name, args in sigs.items():
            f = getattr(l, name)
            f.argtypes = args
            f.restype = c_int
        l.pa_pool_destroy.argtypes = [_VP]
        l.pa_pool_destroy.restype = None
        l.pa_auto_cascade_free.argtypes = [_VP]
        l.pa_auto_cascade_free.restype = None
        _LIB = l
    return _LIB


def _check(rc, what):
    if rc == PA_SUCCESS:
        return
    msg = lib().pa_pool_last_error().decode()
    if rc == PA_POOL_FULL:
        raise PoolFullError(f"{what}: {msg}")
    raise PagedAttnError(f"{what}: {msg}")


def _i32(a, name):
    """A C-contiguous int32 copy of a 1-d sequence (values checked)."""
    arr = np.asarray(a)
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise PagedAttnError(f"{name} must hold integers, got {arr.dtype}")
    if arr.size and (arr.min() < -2**31 or arr.max() >= 2**31):
        raise PagedAttnError(f"{name} has values outside int32")
    return np.ascontiguousarray(arr.reshape(-1), dtype=np.int32)


def _i64(a, name):
    arr = np.asarray(a)
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise PagedAttnError(f"{name} must hold integers, got {arr.dtype}")
    return np.ascontiguousarray(arr.reshape(-1), dtype=np.int64)


def _p32(a):
    return a.ctypes.data_as(_P32)


def _p64(a):
    return a.ctypes.data_as(_P64)


class AutoCascade:
    """The levels of an automatic cascade (host int32 arrays).

    levels: [(qo_indptr, kv_indptr, kv_indices, kv_last_page_len)], the
    shared prefixes first, one segment per request last; order: cascade
    request r is input request order[r] (q's rows must be in that order,
    the output comes back in it; rows(order) maps them)."""

    def __init__(self, handle):
        L = lib()
        try:
            info = _CascadeInfo()
            _check(L.pa_auto_cascade_get_info(handle, ctypes.byref(info)),
                   "auto cascade")
            self.num_query_rows = info.num_query_rows
            self.cascade_pages = info.cascade_pages
            self.flat_pages = info.flat_pages
            p = _P32()
            _check(L.pa_auto_cascade_get_order(handle, ctypes.byref(p)),
                   "auto cascade")
            self.order = np.ctypeslib.as_array(p, (info.batch,)).copy() \
                if info.batch else np.zeros(0, np.int32)
            self.levels = []
            for l in range(info.num_levels):
                lv = _CascadeLevel()
                _check(L.pa_auto_cascade_get_level(handle, l,
                                                   ctypes.byref(lv)),
                       "auto cascade")

                def arr(ptr, n):
                    return (np.ctypeslib.as_array(ptr, (n,)).copy() if n
                            else np.zeros(0, np.int32))
                self.levels.append((arr(lv.qo_indptr, lv.batch + 1),
                                    arr(lv.kv_indptr, lv.batch + 1),
                                    arr(lv.kv_indices, lv.nnz),
                                    arr(lv.kv_last_page_len, lv.batch)))
        finally:
            L.pa_auto_cascade_free(handle)

    @property
    def num_levels(self):
        return len(self.levels)

    def rows(self, qo_indptr=None):
        """Batch query row of each cascade row (q_cascade = q[rows]), given
        the batch's qo_indptr (None: one row per request, decode)."""
        if qo_indptr is None:
            return self.order.astype(np.int64)
        qo = np.asarray(qo_indptr)
        return np.concatenate(
            [np.arange(qo[b], qo[b + 1]) for b in self.order] +
            [np.zeros(0, np.int64)]).astype(np.int64)

    def plan_args(self):
        """(qo_indptr_arr, paged_kv_indptr_arr, paged_kv_indices_arr,
        paged_kv_last_page_len): the first four arguments of
        MultiLevelCascadeAttentionWrapper.plan."""
        return tuple([lv[i] for lv in self.levels] for i in range(4))


def _cascade_options(min_share_requests, min_share_pages, max_levels):
    return _CascadeOptions(min_share_requests, min_share_pages, max_levels)


class PagePool:
    """A pool over the num_pages pages of one paged KV cache allocation."""

    def __init__(self, num_pages, page_size, prefix_caching=True,
                 hash_bits=0):
        cfg = _Config(int(num_pages), int(page_size), int(bool(prefix_caching)),
                      int(hash_bits))
        h = _VP()
        _check(lib().pa_pool_create(ctypes.byref(cfg), ctypes.byref(h)),
               "PagePool")
        self._h = h
        self.num_pages, self.page_size = int(num_pages), int(page_size)
        self.prefix_caching = bool(prefix_caching)

    def __del__(self):
        h = getattr(self, "_h", None)
        if h is not None and _LIB is not None:
            _LIB.pa_pool_destroy(h)
            self._h = None

    def add_sequence(self, tokens=()):
        """A new sequence of `tokens`: (seq_id, cached_tokens, slots), slots
        of the tokens cached_tokens.. (the K/V rows to write)."""
        t = _i32(tokens, "tokens")
        n = t.size
        slots = np.zeros(max(n, 1), np.int32)
        sid, cached = i64(), i64()
        _check(lib().pa_pool_add_sequence(
            self._h, _p32(t) if n else None, n, ctypes.byref(sid),
            ctypes.byref(cached), _p32(slots), n), "add_sequence")
        return sid.value, cached.value, slots[:n - cached.value].copy()

    def append(self, seq_ids, counts, tokens=None):
        """Appends counts[i] tokens to seq_ids[i]: (slots, copies), copies an
        [k, 3] int32 array of (src, dst, num_tokens) page copies to run
        before writing the slots (apply_copies)."""
        ids = _i64(seq_ids, "seq_ids")
        cnt = _i64(counts, "counts")
        if ids.size != cnt.size:
            raise PagedAttnError(f"append: {ids.size} seq_ids but "
                                 f"{cnt.size} counts")
        if cnt.size and cnt.min() < 0:
            raise PagedAttnError("append: counts must be >= 0")
        # Sizes checked before anything is allocated (a count of 2**40 must
        # not become a 4 TiB slots array): a count above the pool's slots is
        # bad input (as in C); counts that fit one by one but not together
        # can never fit: "pool full", nothing changed.
        cap = self.num_pages * self.page_size
        if cnt.size and cnt.max() > cap:
            i = int(np.argmax(cnt))
            raise PagedAttnError(f"append: counts[{i}] = {int(cnt[i])} "
                                 f"exceeds the pool's {cap} slots")
        total = int(cnt.sum())
        if total > cap:
            raise PoolFullError(f"append: page pool full: the counts sum to "
                                f"{total} tokens, more than the pool's {cap} "
                                f"slots")
        tp = None
        if tokens is not None:
            t = _i32(tokens, "tokens")
            if t.size != total:
                raise PagedAttnError(f"append: {t.size} tokens for counts "
                                     f"summing to {total}")
            tp = _p32(t) if total else None
        slots = np.zeros(max(total, 1), np.int32)
        copies = (_Copy * max(ids.size, 1))()
        nc = i64()
        _check(lib().pa_pool_append(
            self._h, _p64(ids), _p64(cnt), ids.size, tp, _p32(slots), total,
            copies, ids.size, ctypes.byref(nc)), "append")
        cp = np.array([[c.src, c.dst, c.num_tokens]
                       for c in copies[:nc.value]], np.int32).reshape(-1, 3)
        return slots[:total].copy(), cp

    def fork(self, seq_id):
        child = i64()
        _check(lib().pa_pool_fork(self._h, int(seq_id), ctypes.byref(child)),
               "fork")
        return child.value

    def free(self, seq_id):
        _check(lib().pa_pool_free_sequence(self._h, int(seq_id)), "free")

    def sequence(self, seq_id):
        """(length, pages) of a live sequence."""
        n, npg = i64(), i64()
        _check(lib().pa_pool_sequence_info(self._h, int(seq_id),
                                           ctypes.byref(n),
                                           ctypes.byref(npg)), "sequence")
        pages = np.zeros(max(npg.value, 1), np.int32)
        _check(lib().pa_pool_sequence_pages(self._h, int(seq_id),
                                            _p32(pages), npg.value),
               "sequence")
        return n.value, pages[:npg.value].copy()

    def ref_count(self, page):
        r = i32()
        _check(lib().pa_pool_ref_count(self._h, int(page), ctypes.byref(r)),
               "ref_count")
        return r.value

    def stats(self):
        s = _Stats()
        _check(lib().pa_pool_get_stats(self._h, ctypes.byref(s)), "stats")
        return {n: getattr(s, n) for n, _ in _Stats._fields_}

    def evict_all(self):
        n = i64()
        _check(lib().pa_pool_evict_all(self._h, ctypes.byref(n)), "evict_all")
        return n.value

    def check(self):
        """Raises PagedAttnError naming a broken invariant, if any."""
        _check(lib().pa_pool_check(self._h), "check")

    def _sizes(self, ids):
        nnz, most = i64(), i64()
        _check(lib().pa_pool_table_sizes(self._h, _p64(ids), ids.size,
                                         ctypes.byref(nnz),
                                         ctypes.byref(most)), "table")
        return nnz.value, most.value

    def csr_table(self, seq_ids):
        """(indptr, indices, last_page_len) int32 of the sequences."""
        ids = _i64(seq_ids, "seq_ids")
        nnz, _ = self._sizes(ids)
        ip = np.zeros(ids.size + 1, np.int32)
        ix = np.zeros(max(nnz, 1), np.int32)
        lp = np.zeros(max(ids.size, 1), np.int32)
        _check(lib().pa_pool_csr_table(self._h, _p64(ids), ids.size, _p32(ip),
                                       _p32(ix), nnz, _p32(lp)), "csr_table")
        return ip, ix[:nnz].copy(), lp[:ids.size].copy()

    def _padded(self, fn, name, seq_ids, width, pad):
        ids = _i64(seq_ids, "seq_ids")
        _, most = self._sizes(ids)
        w = most if width is None else _width(width, name)
        table = np.zeros(max(ids.size * w, 1), np.int32)
        lens = np.zeros(max(ids.size, 1), np.int32)
        _check(fn(self._h, _p64(ids), ids.size, w, int(pad), _p32(table),
                  _p32(lens)), name)
        return (table[:ids.size * w].reshape(ids.size, w).copy(),
                lens[:ids.size].copy())

    def vllm_table(self, seq_ids, width=None, pad=0):
        """(block_tables [B, width], seq_lens [B]) int32."""
        return self._padded(lib().pa_pool_vllm_table, "vllm_table", seq_ids,
                            width, pad)

    def tt_table(self, seq_ids, width=None, pad=0):
        """(page_table [B, width], cur_pos [B] = seq_len - 1) int32."""
        return self._padded(lib().pa_pool_tt_table, "tt_table", seq_ids,
                            width, pad)

    def auto_cascade(self, seq_ids, qo_lens=None, min_share_requests=0,
                     min_share_pages=0, max_levels=0):
        """The automatic cascade of the sequences (qo_lens None: decode)."""
        ids = _i64(seq_ids, "seq_ids")
        qo = None
        if qo_lens is not None:
            qo = _i32(qo_lens, "qo_lens")
            if qo.size != ids.size:
                raise PagedAttnError(f"auto_cascade: {qo.size} qo_lens for "
                                     f"{ids.size} sequences")
        h = _VP()
        opts = _cascade_options(min_share_requests, min_share_pages,
                                max_levels)
        _check(lib().pa_pool_auto_cascade(
            self._h, _p64(ids), ids.size, _p32(qo) if qo is not None else None,
            ctypes.byref(opts), ctypes.byref(h)), "auto_cascade")
        return AutoCascade(h)


def auto_cascade(indptr, indices, last_page_len, page_size, num_pages,
                 qo_lens=None, min_share_requests=0, min_share_pages=0,
                 max_levels=0):
    """The automatic cascade of any CSR batch (validated)."""
    ip, ix, lp = (_i32(indptr, "indptr"), _i32(indices, "indices"),
                  _i32(last_page_len, "last_page_len"))
    batch = ip.size - 1
    if batch < 0:
        raise PagedAttnError("auto_cascade: indptr is empty")
    qo = None
    if qo_lens is not None:
        qo = _i32(qo_lens, "qo_lens")
        if qo.size != batch:
            raise PagedAttnError(f"auto_cascade: {qo.size} qo_lens for batch "
                                 f"{batch}")
    if lp.size != batch:
        raise PagedAttnError(f"auto_cascade: last_page_len has {lp.size} "
                             f"entries, expected batch = {batch}")
    h = _VP()
    opts = _cascade_options(min_share_requests, min_share_pages, max_levels)
    _check(lib().pa_auto_cascade_build(
        _p32(ip), _p32(ix) if ix.size else None, ix.size,
        _p32(lp) if lp.size else None, batch, int(page_size), int(num_pages),
        _p32(qo) if qo is not None else None, ctypes.byref(opts),
        ctypes.byref(h)), "auto_cascade")
    return AutoCascade(h)


# ---- Converters (checked: bad input raises PagedAttnError) ---------------

def _width(width, name):
    """A caller's table width, checked before a [batch, width] array is
    allocated for it."""
    w = int(width)
    if w < 0 or w >= 2**31:
        raise PagedAttnError(f"{name}: width = {w} not in [0, INT32_MAX]")
    return w


def _csr_in(indptr, indices, last_page_len):
    ip, ix, lp = (_i32(indptr, "indptr"), _i32(indices, "indices"),
                  _i32(last_page_len, "last_page_len"))
    if ip.size < 1:
        raise PagedAttnError("indptr is empty (it has batch + 1 entries)")
    if lp.size != ip.size - 1:
        raise PagedAttnError(f"last_page_len has {lp.size} entries, expected "
                             f"batch = {ip.size - 1}")
    return ip, ix, lp, ip.size - 1


def _padded_in(table, lens, name):
    t = np.asarray(table)
    if t.ndim != 2:
        raise PagedAttnError(f"{name} must be 2-d [batch, width], got shape "
                             f"{t.shape}")
    return _i32(t, name), _i32(lens, "lengths"), t.shape[0], t.shape[1]


def _csr_to_padded(fn, name, indptr, indices, last_page_len, page_size,
                   num_pages, width, pad):
    ip, ix, lp, batch = _csr_in(indptr, indices, last_page_len)
    counts = np.diff(ip)
    if width is None:
        width = int(counts.max()) if batch and (counts >= 0).all() else 0
    width = _width(width, name)
    table = np.zeros(max(batch * width, 1), np.int32)
    lens = np.zeros(max(batch, 1), np.int32)
    _check(fn(_p32(ip), _p32(ix) if ix.size else None, ix.size,
              _p32(lp) if lp.size else None, batch, int(page_size),
              int(num_pages), width, int(pad), _p32(table), _p32(lens)), name)
    return table[:batch * width].reshape(batch, width).copy(), \
        lens[:batch].copy()


def csr_to_vllm(indptr, indices, last_page_len, page_size, num_pages,
                width=None, pad=0):
    """CSR -> (block_tables [B, width], seq_lens [B])."""
    return _csr_to_padded(lib().pa_csr_to_vllm, "csr_to_vllm", indptr,
                          indices, last_page_len, page_size, num_pages, width,
                          pad)


def csr_to_tt(indptr, indices, last_page_len, page_size, num_pages,
              width=None, pad=0):
    """CSR -> (page_table [B, width], cur_pos [B])."""
    return _csr_to_padded(lib().pa_csr_to_tt, "csr_to_tt", indptr, indices,
                          last_page_len, page_size, num_pages, width, pad)


def shard_pages(indptr, indices, last_page_len, page_size, num_pages,
                devices, device, round_robin=False):
    """Device `device`'s share of a CSR table sharded over `devices` GPUs
    (context parallelism, docs/ContextParallel.md): of a request's n pages
    it owns [n d / N, n (d + 1) / N) (or j mod N = d with round_robin),
    listed in order with the input's page ids; last_page_len is the
    request's where the device owns its last page, else page_size. Returns
    (indptr, indices, last_page_len)."""
    ip, ix, lp, batch = _csr_in(indptr, indices, last_page_len)
    out_ip = np.zeros(batch + 1, np.int32)
    out_ix = np.zeros(max(ix.size, 1), np.int32)
    out_lp = np.zeros(max(batch, 1), np.int32)
    _check(lib().pa_shard_pages(
        _p32(ip), _p32(ix) if ix.size else None, ix.size,
        _p32(lp) if lp.size else None, batch, int(page_size), int(num_pages),
        int(devices), int(device), 1 if round_robin else 0, _p32(out_ip),
        _p32(out_ix), ix.size, _p32(out_lp)), "shard_pages")
    return out_ip, out_ix[:int(out_ip[-1])].copy(), out_lp[:batch].copy()


def _padded_to_csr(fn, name, table, lens, page_size, num_pages, lens_to_n):
    t, l, batch, width = _padded_in(table, lens, name)
    # A valid row has at most `width` pages (C rejects longer ones), so
    # the indices array never exceeds the input table's size.
    nnz = int(sum(min(max(lens_to_n(int(x)), 0), width) for x in l))
    ip = np.zeros(batch + 1, np.int32)
    ix = np.zeros(max(nnz, 1), np.int32)
    lp = np.zeros(max(batch, 1), np.int32)
    _check(fn(_p32(t) if t.size else None, _p32(l) if l.size else None,
              batch, width, int(page_size), int(num_pages), _p32(ip),
              _p32(ix), nnz, _p32(lp)), name)
    return ip, ix[:int(ip[-1])].copy(), lp[:batch].copy()


def vllm_to_csr(block_tables, seq_lens, page_size, num_pages):
    """(block_tables [B, W], seq_lens) -> (indptr, indices, last_page_len)."""
    P = int(page_size)
    return _padded_to_csr(lib().pa_vllm_to_csr, "vllm_to_csr", block_tables,
                          seq_lens, page_size, num_pages,
                          lambda n: -(-max(n, 0) // max(P, 1)))


def tt_to_csr(page_table, cur_pos, page_size, num_pages):
    """(page_table [B, W], cur_pos) -> (indptr, indices, last_page_len)."""
    P = int(page_size)
    return _padded_to_csr(lib().pa_tt_to_csr, "tt_to_csr", page_table,
                          cur_pos, page_size, num_pages,
                          lambda c: -(-max(c + 1, 0) // max(P, 1)))


def _padded_to_padded(fn, name, table, lens, page_size, num_pages):
    t, l, batch, width = _padded_in(table, lens, name)
    out = np.zeros(max(batch * width, 1), np.int32)
    out_l = np.zeros(max(batch, 1), np.int32)
    _check(fn(_p32(t) if t.size else None, _p32(l) if l.size else None,
              batch, width, int(page_size), int(num_pages), _p32(out),
              _p32(out_l)), name)
    return out[:batch * width].reshape(batch, width).copy(), \
        out_l[:batch].copy()


def vllm_to_tt(block_tables, seq_lens, page_size, num_pages):
    return _padded_to_padded(lib().pa_vllm_to_tt, "vllm_to_tt", block_tables,
                             seq_lens, page_size, num_pages)


def tt_to_vllm(page_table, cur_pos, page_size, num_pages):
    return _padded_to_padded(lib().pa_tt_to_vllm, "tt_to_vllm", page_table,
                             cur_pos, page_size, num_pages)


def apply_copies(cache, copies):
    """Runs copy-on-write copies on a paged cache whose first dimension is
    the page (numpy or torch; one array, or a (k, v) tuple / list of
    per-layer caches): page dst becomes a copy of page src (whole pages:
    the first num_tokens slots are the ones that matter, the rest is
    overwritten by later appends)."""
    if isinstance(cache, (tuple, list)):
        for c in cache:
            apply_copies(c, copies)
        return
    for src, dst, _ in np.asarray(copies, np.int64).reshape(-1, 3):
        cache[int(dst)] = cache[int(src)]
