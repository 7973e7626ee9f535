"""The operations the public interfaces share, on either backend: the
arguments are checked here (so that a bad page table raises
PagedAttnError rather than reaching a kernel), then a CPU bundle function
or the GPU runtime runs them. lse is natural log here; the FlashInfer
layer converts to base 2."""

import ctypes

import numpy as np

from . import _compiler, _cpu, _tensor
from .errors import PagedAttnError

_BUNDLES = {}


def bundle(config, device=None):
    """The loaded bundle of `config` (compiled on first use); GPU bundles
    per device (each lives in its device's context)."""
    b = _BUNDLES.get((config, device))
    if b is None:
        d = _compiler.bundle_dir(config)
        if config.target == "cpu":
            b = _cpu.CPUBundle(d)
        else:
            from . import _gpu
            b = _gpu.GPUBundle(d)
        _BUNDLES[(config, device)] = b
    return b


def fail(msg):
    raise PagedAttnError(msg)


# --------------------------------------------------------------------------
# Checks of the host copies (docs/Semantics.md sections 2, 3, 10)
# --------------------------------------------------------------------------

def check_indptr(a, name, length=None, end=None):
    if a.size < 1 or a[0] != 0:
        fail(f"{name} must start at 0")
    if length is not None and a.size != length:
        fail(f"{name} has {a.size} entries, expected {length}")
    d = np.diff(a)
    if (d < 0).any():
        i = int(np.argmax(d < 0))
        fail(f"{name} decreases at {i}: {a[i]} > {a[i + 1]}")
    if end is not None and a[-1] != end:
        fail(f"{name}[-1] = {a[-1]}, expected {end}")


def kv_lengths(kv_indptr, kv_last_page_len, page_size):
    """Keys per request; checks the page table's lengths."""
    b = kv_indptr.size - 1
    if kv_last_page_len.size != b:
        fail(f"kv_last_page_len has {kv_last_page_len.size} entries, "
             f"expected batch = {b}")
    npages = np.diff(kv_indptr).astype(np.int64)
    has = npages > 0
    bad = has & ((kv_last_page_len < 1) | (kv_last_page_len > page_size))
    if bad.any():
        i = int(np.argmax(bad))
        fail(f"kv_last_page_len[{i}] = {kv_last_page_len[i]} is outside "
             f"[1, page_size = {page_size}] for a request with pages")
    return np.where(has, (npages - 1) * page_size + kv_last_page_len, 0)


def check_pages(kv_indptr, kv_indices, num_pages):
    nnz = int(kv_indptr[-1])
    if kv_indices.size < nnz:
        fail(f"kv_indices has {kv_indices.size} entries, kv_indptr needs "
             f"{nnz}")
    used = kv_indices[:nnz]
    bad = (used < 0) | (used >= num_pages)
    if bad.any():
        i = int(np.argmax(bad))
        fail(f"kv_indices[{i}] = {used[i]} out of range [0, {num_pages})")


# --------------------------------------------------------------------------
# Caches
# --------------------------------------------------------------------------

class Cache:
    """A paged cache as FlashInfer passes it: one [pages, 2, ...] tensor
    (joint) or a (k, v) pair (split), NHD [.., P, Hkv, D] or HND
    [.., Hkv, P, D]."""

    def __init__(self, paged_kv_cache, layout):
        if isinstance(paged_kv_cache, (tuple, list)):
            if len(paged_kv_cache) != 2:
                fail("paged_kv_cache: a tuple must be (k_cache, v_cache)")
            self.k = _tensor.wrap(paged_kv_cache[0], "k_cache")
            self.v = _tensor.wrap(paged_kv_cache[1], "v_cache")
            self.kv = None
            _tensor.same_place("k_cache", self.k, "v_cache", self.v)
            if self.k.shape != self.v.shape or self.k.dtype != self.v.dtype:
                fail(f"k_cache {self.k.shape} {self.k.dtype} and v_cache "
                     f"{self.v.shape} {self.v.dtype} differ")
            if len(self.k.shape) != 4:
                fail(f"k_cache must be 4-D, got shape {self.k.shape}")
            page_shape = self.k.shape[1:]
            first = self.k
        else:
            self.kv = _tensor.wrap(paged_kv_cache, "paged_kv_cache")
            self.k = self.v = None
            if len(self.kv.shape) != 5 or self.kv.shape[1] != 2:
                fail(f"paged_kv_cache must be [pages, 2, ...] (5-D), got "
                     f"shape {self.kv.shape}")
            page_shape = self.kv.shape[2:]
            first = self.kv
        self.layout = layout
        self.num_pages = first.shape[0]
        self.dtype = first.dtype
        self.device = first.device
        self.where = first.where
        if layout == "nhd":
            self.page_size, self.kv_heads, self.head_dim = page_shape
        else:
            self.kv_heads, self.page_size, self.head_dim = page_shape
        self.joint = self.kv is not None

    def arrays(self):
        return {"kv": self.kv} if self.joint else {"k": self.k, "v": self.v}


def cuda_stream(array):
    import torch
    return ctypes.c_void_p(torch.cuda.current_stream(
        array.obj.device).cuda_stream)


def gpu_bundle(config, array):
    """The bundle of `config` for `array`'s device, compiled for its chip
    (sm_XY of the device's compute capability; sm_90a on Hopper, 9.0, whose
    wgmma kernels need the architecture-specific target)."""
    import dataclasses

    import torch
    from . import _gpu
    index = array.obj.device.index or 0
    major, minor = torch.cuda.get_device_capability(index)
    chip = f"sm_{major}{minor}" + ("a" if (major, minor) == (9, 0) else "")
    if config.chip != chip:
        config = dataclasses.replace(config, chip=chip)
    _gpu.lib()
    _gpu.init(index)
    return bundle(config, index)


# --------------------------------------------------------------------------
# Attention (pa.prefill; pa.decode where it applies)
# --------------------------------------------------------------------------

def attention(config, q, qo_indptr_host, cache, table, o, lse,
              positions=None, mask=None, use_decode=False):
    """o, lse (natural log) of pa.prefill (or pa.decode: one query per
    request at kv_len - 1, default options) over `table` (a PageTable)."""
    qa = _tensor.wrap(q, "q")
    if qa.where != cache.where:
        raise ValueError(f"q is on {qa.where}, the cache on {cache.where}")
    if config.target == "cpu":
        b = bundle(config)
        args = dict(q=q, kv_indptr=table.indptr_on(qa),
                    kv_indices=table.indices_on(qa),
                    kv_last_page_len=table.last_on(qa), o=o, lse=lse)
        args.update({k: v.obj for k, v in cache.arrays().items()})
        if use_decode:
            b.call("decode", **args)
            return
        args["qo_indptr"] = _tensor.to_device_like(qo_indptr_host, qa)
        if positions is not None:
            args["q_positions"] = positions
        if mask is not None:
            args["custom_mask"], args["mask_indptr"] = mask
        b.call("prefill", **args)
        return
    from . import _gpu
    b = gpu_bundle(config, qa)
    l = _gpu.lib()
    stream = cuda_stream(qa)
    oa, la = _tensor.wrap(o, "out"), _tensor.wrap(lse, "lse")
    ca = cache.arrays()
    common = dict(kv=ca["kv"].ptr if cache.joint else 0,
                  k=0 if cache.joint else ca["k"].ptr,
                  v=0 if cache.joint else ca["v"].ptr,
                  kv_indptr=table.device_ptr("indptr", qa),
                  kv_indices=table.device_ptr("indices", qa),
                  kv_last_page_len=table.device_ptr("last", qa),
                  o=oa.ptr, lse=la.ptr, num_q_heads=qa.shape[1],
                  head_dim=qa.shape[2], num_pages=cache.num_pages,
                  nnz=table.nnz)
    if use_decode:
        plan = table.gpu_plan(b, "decode", None)
        args = _gpu.DecodeArgs(q=qa.ptr, batch=table.batch, **common)
        _gpu.check(l.pa_decode_run(b.ptr, plan.ptr, ctypes.byref(args),
                                   stream), "pa_decode_run")
        return
    plan = table.gpu_plan(b, "prefill", qo_indptr_host)
    qo_dev = table.cached_device(("qo", qo_indptr_host.tobytes()),
                                 qo_indptr_host, qa)
    args = _gpu.PrefillArgs(q=qa.ptr, qo_indptr=_tensor.wrap(qo_dev,
                                                              "qo").ptr,
                            batch=table.batch,
                            num_query_rows=int(qo_indptr_host[-1]),
                            **common)
    if positions is not None:
        args.q_positions = _tensor.wrap(positions, "q_positions").ptr
    if mask is not None:
        m, mi = _tensor.wrap(mask[0], "mask"), _tensor.wrap(mask[1],
                                                             "mask_indptr")
        args.custom_mask, args.mask_indptr = m.ptr, mi.ptr
        args.mask_bytes = m.shape[0]
    _gpu.check(l.pa_prefill_run(b.ptr, plan.ptr, ctypes.byref(args), stream),
               "pa_prefill_run")


def mla_decode(config, q_nope, q_pe, ckv_kpe, table, o, lse, num_pages):
    """o, lse (in the bundle's base) of pa.mla_decode over `table` (a
    PageTable checked against the cache's `num_pages`)."""
    qa = _tensor.wrap(q_nope, "q_nope")
    if config.target == "cpu":
        b = bundle(config)
        b.call("mla_decode", q_nope=q_nope, q_pe=q_pe, ckv_kpe=ckv_kpe,
               kv_indptr=table.indptr_on(qa), kv_indices=table.indices_on(qa),
               kv_last_page_len=table.last_on(qa), o=o, lse=lse)
        return
    from . import _gpu
    b = gpu_bundle(config, qa)
    l = _gpu.lib()
    # The workspace of the runtime's automatic split-KV, kept per device.
    need = ctypes.c_int64()
    _gpu.check(l.pa_mla_workspace_bytes(b.ptr, table.batch, 0,
                                        ctypes.byref(need)),
               "pa_mla_workspace_bytes")
    ws = table.cached_device(("mla_ws", need.value),
                             np.zeros(max(need.value, 1), np.uint8), qa)
    args = _gpu.MLADecodeArgs(
        q_nope=qa.ptr, q_pe=_tensor.wrap(q_pe, "q_pe").ptr,
        ckv_kpe=_tensor.wrap(ckv_kpe, "ckv_kpe").ptr,
        kv_indptr=table.device_ptr("indptr", qa),
        kv_indices=table.device_ptr("indices", qa),
        kv_last_page_len=table.device_ptr("last", qa),
        o=_tensor.wrap(o, "out").ptr, lse=_tensor.wrap(lse, "lse").ptr,
        batch=table.batch, num_pages=num_pages, nnz=table.nnz,
        max_kv_len=int(table.kv_len.max()) if table.batch else 0,
        workspace=_tensor.wrap(ws, "workspace").ptr,
        workspace_bytes=need.value, split_merge=table.split_merge)
    _gpu.check(l.pa_mla_decode(b.ptr, ctypes.byref(args), cuda_stream(qa)),
               "pa_mla_decode")


#: How a split-KV launch merges its splits (pa_plan_options::split_merge,
#: pa_mla_decode_args::split_merge): "auto" (together where the grid fits
#: on the device at once and the runtime expects it to pay) or "last" (the
#: last CTA of each request).
SPLIT_MERGE = {"auto": 0, "last": 1}


class PageTable:
    """A planned page table: host copies (checked) and, per device, the
    arrays the kernels read; GPU plans cached by kind and queries.
    `split_merge`: a key of SPLIT_MERGE, for the GPU decode and MLA
    decode."""

    def __init__(self, indptr, indices, last_page_len, page_size,
                 split_merge="auto"):
        if split_merge not in SPLIT_MERGE:
            raise ValueError(f"split_merge must be 'auto' or 'last', got "
                             f"{split_merge!r}")
        self.split_merge = SPLIT_MERGE[split_merge]
        self.indptr = _tensor.host_i32(indptr, "kv_indptr")
        self.last = _tensor.host_i32(last_page_len, "kv_last_page_len")
        check_indptr(self.indptr, "kv_indptr")
        self.batch = self.indptr.size - 1
        self.kv_len = kv_lengths(self.indptr, self.last, page_size)
        self.nnz = int(self.indptr[-1])
        self._device = {}
        self._plans = {}
        if _tensor.is_torch(indices) and indices.is_cuda:
            # Like FlashInfer's plan: the (large) page list stays on the
            # device, copied; only indptr and last_page_len come to the host.
            import torch
            if indices.dim() != 1:
                fail(f"kv_indices must be 1-D, got {tuple(indices.shape)}")
            self.indices = None
            self.num_indices = indices.numel()
            dev = indices.to(torch.int32, copy=True).contiguous()
            self._device[("indices", str(("cuda", dev.device)))] = dev
            self._indices_dev = dev
        else:
            self.indices = _tensor.host_i32(indices, "kv_indices")
            self.num_indices = self.indices.size
            self._indices_dev = None
        if self.num_indices < self.nnz:
            fail(f"kv_indices has {self.num_indices} entries, kv_indptr "
                 f"needs {self.nnz}")
        self.page_size = page_size

    def check_cache(self, num_pages):
        if self.indices is not None:
            check_pages(self.indptr, self.indices, num_pages)
            return
        used = self._indices_dev[:self.nnz]
        bad = (used < 0) | (used >= num_pages)
        if self.nnz and bool(bad.any()):
            i = int(bad.nonzero()[0, 0])
            fail(f"kv_indices[{i}] = {int(used[i])} out of range "
                 f"[0, {num_pages})")

    def host_indices(self):
        if self.indices is None:
            self.indices = self._indices_dev.cpu().numpy()
        return self.indices

    def cached_device(self, key, host, like):
        dev = (like.device, getattr(like.obj, "device", None))
        k = (key, str(dev))
        if k not in self._device:
            self._device[k] = _tensor.to_device_like(host, like)
        return self._device[k]

    def indptr_on(self, like):
        return self.cached_device("indptr", self.indptr, like)

    def indices_on(self, like):
        dev = (like.device, getattr(like.obj, "device", None))
        if ("indices", str(dev)) in self._device:
            return self._device[("indices", str(dev))]
        return self.cached_device("indices", self.host_indices(), like)

    def last_on(self, like):
        return self.cached_device("last", self.last, like)

    def device_ptr(self, which, like):
        # The copies stay in self._device, so their addresses do too.
        key = ("ptr", which, like.where)
        ptr = self._device.get(key)
        if ptr is None:
            arr = {"indptr": self.indptr_on, "indices": self.indices_on,
                   "last": self.last_on}[which](like)
            ptr = self._device[key] = _tensor.wrap(arr, which).ptr
        return ptr

    def gpu_plan(self, b, kind, qo_indptr_host):
        from . import _gpu
        key = (id(b), kind, None if qo_indptr_host is None
               else qo_indptr_host.tobytes())
        if key in self._plans:
            return self._plans[key][1]
        l = _gpu.lib()
        h = ctypes.c_void_p()
        if kind == "decode":
            opts = _gpu.PlanOptions(split_merge=self.split_merge)
            _gpu.check(l.pa_decode_plan(b.ptr, _gpu.i32_ptr(self.indptr),
                                        _gpu.i32_ptr(self.last), self.batch,
                                        ctypes.cast(ctypes.pointer(opts),
                                                    ctypes.c_void_p),
                                        ctypes.byref(h)),
                       "pa_decode_plan")
            plan = _gpu.Handle(h, "pa_plan_free")
        else:
            _gpu.check(l.pa_prefill_plan(
                b.ptr, _gpu.i32_ptr(qo_indptr_host),
                _gpu.i32_ptr(self.indptr), _gpu.i32_ptr(self.last),
                self.batch, int(qo_indptr_host[-1]), ctypes.byref(h)),
                "pa_prefill_plan")
            plan = _gpu.Handle(h, "pa_prefill_plan_free")
        self._plans[key] = (b, plan)  # keeps the bundle alive
        return plan


# --------------------------------------------------------------------------
# Merges and cache writes
# --------------------------------------------------------------------------

def merge(config, va, sa, vb, sb, o, lse):
    """pa.merge of two natural-log states into o / lse."""
    a = _tensor.wrap(va, "v_a")
    if config.target == "cpu":
        bundle(config).call("merge", o_0=va, lse_0=sa, o_1=vb, lse_1=sb,
                            o=o, lse=lse)
        return
    from . import _gpu
    b = gpu_bundle(config, a)
    w = lambda x, n: _tensor.wrap(x, n).ptr
    args = _gpu.MergeArgs(o_a=a.ptr, lse_a=w(sa, "s_a"), o_b=w(vb, "v_b"),
                          lse_b=w(sb, "s_b"), o=w(o, "o"), lse=w(lse, "lse"),
                          num_rows=a.shape[0])
    _gpu.check(_gpu.lib().pa_merge(b.ptr, ctypes.byref(args), cuda_stream(a)),
               "pa_merge")


def merge_states(config, v, s, o, lse):
    """pa.merge_states of [R, S, H, D] states (natural log)."""
    a = _tensor.wrap(v, "v")
    if config.target == "cpu":
        bundle(config).call("merge_states", o_states=v, lse_states=s, o=o,
                            lse=lse)
        return
    from . import _gpu
    b = gpu_bundle(config, a)
    w = lambda x, n: _tensor.wrap(x, n).ptr
    args = _gpu.MergeStatesArgs(o_states=a.ptr, lse_states=w(s, "s"),
                                o=w(o, "o"), lse=w(lse, "lse"),
                                num_rows=a.shape[0], num_states=a.shape[1])
    _gpu.check(_gpu.lib().pa_merge_states(b.ptr, ctypes.byref(args),
                                          cuda_stream(a)), "pa_merge_states")


def append_slots(config, k_new, v_new, slots, cache):
    """pa.append_kv_slots: row r to slot slots[r] (page * P + offset;
    negative: skipped)."""
    ka = _tensor.wrap(k_new, "append_key")
    if config.target == "cpu":
        args = {k: v.obj for k, v in cache.arrays().items()}
        bundle(config).call("append_kv_slots", k_new=k_new, v_new=v_new,
                            slot_mapping=slots, **args)
        return
    from . import _gpu
    b = gpu_bundle(config, ka)
    ca = cache.arrays()
    args = _gpu.AppendArgs(
        k_new=ka.ptr, v_new=_tensor.wrap(v_new, "append_value").ptr,
        slot_mapping=_tensor.wrap(slots, "slot_mapping").ptr,
        kv=ca["kv"].ptr if cache.joint else 0,
        k=0 if cache.joint else ca["k"].ptr,
        v=0 if cache.joint else ca["v"].ptr,
        num_rows=ka.shape[0], num_pages=cache.num_pages)
    _gpu.check(_gpu.lib().pa_append_kv_slots(b.ptr, ctypes.byref(args),
                                             cuda_stream(ka)),
               "pa_append_kv_slots")


# --------------------------------------------------------------------------
# Cascade (GPU): the runtime's plan of the levels (pa_cascade_plan / _run)
# --------------------------------------------------------------------------

class CascadePlan:
    """The levels of a cascade (host qo_indptr and a PageTable each) and,
    per bundle, the runtime's plan of them."""

    def __init__(self, levels):
        self.levels = levels  # [(qo_indptr host int32, PageTable)]
        self.rows = int(levels[0][0][-1])
        self._plans = {}

    def gpu_plan(self, b):
        from . import _gpu
        if id(b) in self._plans:
            return self._plans[id(b)][1]
        arr = (_gpu.CascadeLevel * len(self.levels))()
        for i, (qo, t) in enumerate(self.levels):
            arr[i] = _gpu.CascadeLevel(_gpu.i32_ptr(qo), _gpu.i32_ptr(t.indptr),
                                       _gpu.i32_ptr(t.last), t.batch)
        h = ctypes.c_void_p()
        _gpu.check(_gpu.lib().pa_cascade_plan(b.ptr, arr, len(self.levels),
                                              self.rows, ctypes.byref(h)),
                   "pa_cascade_plan")
        plan = _gpu.Handle(h, "pa_cascade_plan_free")
        self._plans[id(b)] = (b, plan)
        return plan


def cascade(config, q, cache, cplan, o, lse):
    """pa.cascade on the GPU: every level (decode where each segment has one
    query, else prefill; concurrent on the plan's streams), merged into
    o / lse (natural log)."""
    from . import _gpu
    qa = _tensor.wrap(q, "q")
    b = gpu_bundle(config, qa)
    plan = cplan.gpu_plan(b)
    n = len(cplan.levels)
    keep = []
    la = (_gpu.CascadeLevelArgs * n)()
    for i, (qo, t) in enumerate(cplan.levels):
        qo_dev = t.cached_device(("qo", qo.tobytes()), qo, qa)
        keep.append(qo_dev)
        la[i] = _gpu.CascadeLevelArgs(
            _tensor.wrap(qo_dev, "qo_indptr").ptr, t.device_ptr("indptr", qa),
            t.device_ptr("indices", qa), t.device_ptr("last", qa), t.nnz)
    ca = cache.arrays()
    args = _gpu.CascadeArgs(
        q=qa.ptr, kv=ca["kv"].ptr if cache.joint else 0,
        k=0 if cache.joint else ca["k"].ptr,
        v=0 if cache.joint else ca["v"].ptr, levels=la, num_levels=n,
        o=_tensor.wrap(o, "out").ptr, lse=_tensor.wrap(lse, "lse").ptr,
        num_query_rows=cplan.rows, num_q_heads=qa.shape[1],
        head_dim=qa.shape[2], num_pages=cache.num_pages)
    _gpu.check(_gpu.lib().pa_cascade_run(b.ptr, plan.ptr, ctypes.byref(args),
                                         cuda_stream(qa)), "pa_cascade_run")
