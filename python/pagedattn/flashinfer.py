"""FlashInfer's interface over PagedAttn: the same names, arguments and
defaults for what PagedAttn supports, NotImplementedError for the rest.
As in FlashInfer, every lse these calls take or return is in base 2.
Arrays are torch tensors (CUDA: the GPU bundles and runtime; CPU: the CPU
bundles) or numpy arrays (CPU).

Differences from FlashInfer (docs/Python.md):
  * kernels are specialized per configuration: sm_scale, logits_soft_cap,
    window_left and masks are compiled into the bundle that plan() selects
    (the first plan of a new configuration compiles it, then it is cached
    on disk);
  * a request without pages has kv_len 0 (FlashInfer: last_page_len);
  * packbits / segment_packbits and the cache-write slot computation run on
    the host (the tensors are copied there and back).
"""

import itertools
import math
import weakref

import numpy as np

from . import _ops, _tensor
from ._compiler import Config
from .errors import PagedAttnError

LOG2E = 1.0 / math.log(2.0)
LN2 = math.log(2.0)

__all__ = [
    "BatchDecodeWithPagedKVCacheWrapper", "BatchPrefillWithPagedKVCacheWrapper",
    "MultiLevelCascadeAttentionWrapper", "merge_state", "merge_state_in_place",
    "merge_states", "append_paged_kv_cache", "get_batch_indices_positions",
    "packbits", "segment_packbits", "BatchMLAPagedAttentionWrapper",
]


def _dtype(d, what):
    s = str(d).replace("torch.", "").replace("<class 'numpy.", "").rstrip("'>")
    m = {"float16": "f16", "half": "f16", "bfloat16": "bf16",
         "float32": "f32", "float": "f32"}
    if s not in m:
        raise NotImplementedError(f"{what} {d}: PagedAttn's Python calls "
                                  f"support float16, bfloat16 and float32")
    return m[s]


def _layout(kv_layout):
    if kv_layout not in ("NHD", "HND"):
        raise KeyError(f"Invalid kv_layout {kv_layout}")
    return kv_layout.lower()


def _unsupported(**kw):
    """NotImplementedError for an option set to other than its default."""
    for k, v in kw.items():
        if k == "args":
            if v:
                raise NotImplementedError(f"extra positional arguments "
                                          f"{v!r} are not supported")
        elif v is True or (v is not None and v is not False and not (
                isinstance(v, (int, float)) and v in (0, 1)) and v != "NONE"):
            raise NotImplementedError(f"{k}={v!r} is not supported by "
                                      f"PagedAttn")


def _target(array):
    return "cpu" if array.device == "cpu" else "gpu"


def _scale_(x, factor):
    """x *= factor in place (numpy or torch)."""
    x *= factor
    return x


def _check_cache_shape(cache, page_size, kv_heads, head_dim):
    if (cache.page_size, cache.kv_heads, cache.head_dim) != (
            page_size, kv_heads, head_dim):
        raise ValueError(
            f"paged_kv_cache has page_size {cache.page_size}, kv_heads "
            f"{cache.kv_heads}, head_dim {cache.head_dim}; plan() was given "
            f"{page_size}, {kv_heads}, {head_dim}")


# Planned wrappers by id: pagedattn::run_plan names its wrapper by an int
# (torch ops take no Python objects). Ids are given in __init__, outside
# any torch.compile trace.
WRAPPERS = weakref.WeakValueDictionary()
_IDS = itertools.count(1)


def _register(wrapper):
    wrapper._plan_id = next(_IDS)
    WRAPPERS[wrapper._plan_id] = wrapper


def _torch_op_applies(q, out, lse):
    """While torch.compile traces, torch tensors without caller outs run
    through the registered torch op (pagedattn::run_plan), which it sees
    as one opaque call. Eagerly the wrapper runs directly: through the op
    a decode run() cost 658 us of host time against 59.5 us without it
    (torch 2.11, H200, 2026-11-26, docs/Python.md), more than the kernel."""
    if out is not None or lse is not None or not _tensor.is_torch(q):
        return False
    return _torch_ops().compiling()


_TORCH_OPS = None  # pagedattn.torch_ops once imported (it sets this)


def _torch_ops():
    if _TORCH_OPS is None:
        from . import torch_ops  # noqa: F401 (sets _TORCH_OPS)
    return _TORCH_OPS


def _torch_run(wrapper, q, paged_kv_cache):
    """(o, base-2 lse) of a planned wrapper through pagedattn::run_plan."""
    return _torch_ops().run(wrapper, q, paged_kv_cache)


class _AttentionPlan:
    """What plan() fixed: the table, the shape and the options."""

    def __init__(self, indptr, indices, last_page_len, num_qo_heads,
                 num_kv_heads, head_dim, page_size, window_left,
                 logits_soft_cap, sm_scale, q_data_type, split_merge="auto"):
        if num_kv_heads <= 0 or num_qo_heads % num_kv_heads:
            raise ValueError(f"num_qo_heads {num_qo_heads} must be a "
                             f"multiple of num_kv_heads {num_kv_heads}")
        self.table = _ops.PageTable(indptr, indices, last_page_len, page_size,
                                    split_merge)
        self.num_qo_heads, self.num_kv_heads = num_qo_heads, num_kv_heads
        self.head_dim, self.page_size = head_dim, page_size
        self.window_left = window_left
        self.window = window_left + 1 if window_left >= 0 else 0
        self.soft_cap = float(logits_soft_cap or 0.0)
        if self.soft_cap < 0:
            raise ValueError(f"logits_soft_cap {logits_soft_cap} < 0")
        self.sm_scale = float(sm_scale or 0.0)
        self.q_dtype = _dtype(q_data_type, "q_data_type")
        self._checked_pages = set()

    def config(self, target, cache, **kw):
        return Config(target=target, head_dim=self.head_dim,
                      page_size=self.page_size, kv_heads=self.num_kv_heads,
                      group=self.num_qo_heads // self.num_kv_heads,
                      layout=cache.layout, dtype=cache.dtype,
                      kv="joint" if cache.joint else "split",
                      window=self.window, soft_cap=self.soft_cap,
                      sm_scale=self.sm_scale, **kw)

    def prepare(self, q, paged_kv_cache, layout, rows):
        qa = _tensor.wrap(q, "q")
        cache = _ops.Cache(paged_kv_cache, layout)
        _check_cache_shape(cache, self.page_size, self.num_kv_heads,
                           self.head_dim)
        if qa.dtype != cache.dtype:
            raise NotImplementedError(f"q is {qa.dtype} and the cache "
                                      f"{cache.dtype}: PagedAttn needs one "
                                      f"dtype")
        expect = (rows, self.num_qo_heads, self.head_dim)
        if qa.shape != expect:
            raise ValueError(f"q has shape {qa.shape}, expected {expect}")
        if cache.num_pages not in self._checked_pages:
            self.table.check_cache(cache.num_pages)
            self._checked_pages.add(cache.num_pages)
        return qa, cache


def _outputs(qa, out, lse, rows, heads, head_dim):
    if out is None:
        out = _tensor.empty(qa, (rows, heads, head_dim), qa.dtype)
    else:
        _tensor.check_array(_tensor.wrap(out, "out"), "out",
                            (rows, heads, head_dim), qa.dtype, qa.where)
    if lse is None:
        lse = _tensor.empty(qa, (rows, heads), "f32")
    else:
        _tensor.check_array(_tensor.wrap(lse, "lse"), "lse", (rows, heads),
                            "f32", qa.where)
    return out, lse


class BatchDecodeWithPagedKVCacheWrapper:
    """flashinfer.BatchDecodeWithPagedKVCacheWrapper."""

    def __init__(self, float_workspace_buffer=None, kv_layout="NHD",
                 use_cuda_graph=False, use_tensor_cores=False,
                 paged_kv_indptr_buffer=None, paged_kv_indices_buffer=None,
                 paged_kv_last_page_len_buffer=None, backend="auto",
                 jit_args=None):
        _unsupported(jit_args=jit_args)
        self._layout = _layout(kv_layout)
        self._plan = None
        _register(self)

    def plan(self, indptr, indices, last_page_len, num_qo_heads,
             num_kv_heads, head_dim, page_size, pos_encoding_mode="NONE",
             window_left=-1, logits_soft_cap=None, q_data_type="float16",
             kv_data_type=None, data_type=None, sm_scale=None,
             rope_scale=None, rope_theta=None, non_blocking=True,
             block_tables=None, seq_lens=None, fixed_split_size=None,
             disable_split_kv=False, q_len_per_req=1, split_merge="auto",
             **kwargs):
        _unsupported(pos_encoding_mode=pos_encoding_mode,
                     rope_scale=rope_scale, rope_theta=rope_theta,
                     q_len_per_req=q_len_per_req,
                     **{k: v for k, v in kwargs.items()
                        if k not in ("window_right", "o_data_type",
                                     "is_causal")})
        if kwargs.get("window_right", 0):
            raise NotImplementedError("window_right != 0")
        q_data_type = data_type if data_type is not None else q_data_type
        if kv_data_type is not None:
            _dtype(kv_data_type, "kv_data_type")
        self._plan = _AttentionPlan(indptr, indices, last_page_len,
                                    num_qo_heads, num_kv_heads, head_dim,
                                    page_size, window_left, logits_soft_cap,
                                    sm_scale, q_data_type, split_merge)

    begin_forward = plan

    def run(self, q, paged_kv_cache, *args, q_scale=None, k_scale=None,
            v_scale=None, out=None, lse=None, return_lse=False,
            enable_pdl=None, window_left=None, sinks=None):
        p = self._plan
        if p is None:
            raise PagedAttnError("run() before plan()")
        _unsupported(args=args, q_scale=q_scale, k_scale=k_scale,
                     v_scale=v_scale, sinks=sinks)
        if window_left is not None and window_left != p.window_left:
            raise ValueError(f"window_left {window_left} differs from "
                             f"plan()'s {p.window_left}")
        if _torch_op_applies(q, out, lse):
            out, lse = _torch_run(self, q, paged_kv_cache)
            return (out, lse) if return_lse else out
        out, lse = self._run_eager(q, paged_kv_cache, out, lse)
        _scale_(lse, LOG2E)  # a caller's lse buffer holds base 2 too
        return (out, lse) if return_lse else out

    def _run_eager(self, q, paged_kv_cache, out=None, lse=None):
        """o and natural-log lse."""
        p = self._plan
        t = p.table
        qa, cache = p.prepare(q, paged_kv_cache, self._layout, t.batch)
        out, lse = _outputs(qa, out, lse, t.batch, p.num_qo_heads,
                            p.head_dim)
        target = _target(qa)
        plain = not (p.window or p.soft_cap or p.sm_scale)
        if plain:
            _ops.attention(p.config(target, cache), q, None, cache, t, out,
                           lse, use_decode=True)
        else:
            # Options live in the prefill kernel: one query per request at
            # position kv_len - 1 (empty requests see nothing).
            qo = np.arange(t.batch + 1, dtype=np.int32)
            pos = np.maximum(t.kv_len - 1, 0).astype(np.int32)
            _ops.attention(p.config(target, cache, positions=True), q, qo,
                           cache, t, out, lse,
                           positions=t.cached_device("dec_pos", pos, qa))
        return out, lse

    def _rows(self):
        return self._plan.table.batch

    forward = run

    def run_return_lse(self, q, paged_kv_cache, *args, **kwargs):
        kwargs["return_lse"] = True
        return self.run(q, paged_kv_cache, *args, **kwargs)


class BatchMLAPagedAttentionWrapper:
    """flashinfer.mla.BatchMLAPagedAttentionWrapper for decode (one query
    per request, FlashInfer's CSR metadata), over a packed latent cache
    [num_pages, page_size, head_dim_ckv + head_dim_kpe] (FlashInfer's
    kv_cache_layout="packed"), through pa.mla_decode (the GPU runtime's
    pa_mla_decode with automatic split-KV, or the CPU bundle)."""

    def __init__(self, float_workspace_buffer=None, use_cuda_graph=False,
                 qo_indptr=None, kv_indptr=None, kv_indices=None,
                 kv_len_arr=None, backend="auto"):
        _unsupported(use_cuda_graph=use_cuda_graph)
        self._plan = None

    def plan(self, qo_indptr, kv_indptr, kv_indices, kv_len_arr, num_heads,
             head_dim_ckv, head_dim_kpe, page_size, causal, sm_scale,
             q_data_type, kv_data_type, use_profiler=False,
             split_merge="auto", **kwargs):
        _unsupported(use_profiler=use_profiler,
                     **{k: v for k, v in kwargs.items()
                        if k not in ("query_layout", "kv_cache_layout",
                                     "lse_mode")})
        if kwargs.get("kv_cache_layout", "packed") != "packed":
            raise NotImplementedError("kv_cache_layout must be 'packed' (one "
                                      "[pages, P, ckv + kpe] tensor)")
        if not sm_scale or sm_scale <= 0:
            raise ValueError("sm_scale must be > 0 (the model's "
                             "1/sqrt(qk_nope_head_dim + qk_rope_head_dim))")
        qo = _tensor.host_i32(qo_indptr, "qo_indptr")
        b = qo.size - 1
        if not np.array_equal(qo, np.arange(b + 1)):
            raise NotImplementedError("PagedAttn's MLA is decode: one query "
                                      "per request (qo_indptr = 0..B)")
        # causal is moot for one query at the last position.
        indptr = _tensor.host_i32(kv_indptr, "kv_indptr")
        lens = _tensor.host_i32(kv_len_arr, "kv_len_arr")
        _ops.check_indptr(indptr, "kv_indptr")
        if lens.size != b or indptr.size != b + 1:
            raise ValueError(f"kv_indptr has {indptr.size} entries and "
                             f"kv_len_arr {lens.size} for {b} requests")
        pages = np.diff(indptr)
        if np.any(lens < 0) or np.any(lens > pages * page_size) or np.any(
                (lens > 0) & (lens <= (pages - 1) * page_size)) or np.any(
                (lens == 0) & (pages > 0)):
            raise PagedAttnError("kv_len_arr does not match kv_indptr's "
                                 "pages (each request needs exactly "
                                 "ceil(kv_len / page_size) pages)")
        last = np.where(pages > 0, lens - (pages - 1) * page_size,
                        0).astype(np.int32)
        self._plan = dict(
            table=_ops.PageTable(indptr, kv_indices, last, page_size,
                                 split_merge),
            heads=num_heads, ckv=head_dim_ckv, kpe=head_dim_kpe,
            page_size=page_size, sm_scale=float(sm_scale),
            dtype=_dtype(q_data_type, "q_data_type"), checked=set())
        if _dtype(kv_data_type, "kv_data_type") != self._plan["dtype"]:
            raise NotImplementedError("q and the latent cache must share "
                                      "one dtype")

    def run(self, q_nope=None, q_pe=None, ckv_cache=None, kpe_cache=None,
            out=None, lse=None, return_lse=False, *, query=None,
            kv_cache=None, **kwargs):
        """o [B, H, ckv] (and lse [B, H], base 2, with return_lse)."""
        p = self._plan
        if p is None:
            raise PagedAttnError("run() before plan()")
        _unsupported(**kwargs)
        if query is not None:
            q_nope, q_pe = query
        if kv_cache is not None:
            ckv_cache = kv_cache
        if kpe_cache is not None:
            raise NotImplementedError("separate ckv / kpe caches: pass the "
                                      "packed [pages, P, ckv + kpe] cache")
        qa = _tensor.wrap(q_nope, "q_nope")
        t = p["table"]
        H, C, R = p["heads"], p["ckv"], p["kpe"]
        _tensor.check_array(qa, "q_nope", (t.batch, H, C), p["dtype"],
                            qa.where)
        _tensor.check_array(_tensor.wrap(q_pe, "q_pe"), "q_pe",
                            (t.batch, H, R), p["dtype"], qa.where)
        ca = _tensor.wrap(ckv_cache, "kv_cache")
        if len(ca.shape) != 3 or ca.shape[1:] != (p["page_size"], C + R):
            raise ValueError(f"kv_cache has shape {ca.shape}, expected "
                             f"[pages, {p['page_size']}, {C + R}]")
        _tensor.check_array(ca, "kv_cache", ca.shape, p["dtype"], qa.where)
        if ca.shape[0] not in p["checked"]:
            t.check_cache(ca.shape[0])
            p["checked"].add(ca.shape[0])
        out, lse = _outputs(qa, out, lse, t.batch, H, C)
        config = Config(target=_target(qa), head_dim=C,
                        page_size=p["page_size"], kv_heads=1, group=H,
                        dtype=p["dtype"], kernels="mla", kpe=R,
                        sm_scale=p["sm_scale"], lse_base2=True)
        if t.batch:
            _ops.mla_decode(config, q_nope, q_pe, ckv_cache, t, out, lse,
                            ca.shape[0])
        return (out, lse) if return_lse else out


class BatchPrefillWithPagedKVCacheWrapper:
    """flashinfer.BatchPrefillWithPagedKVCacheWrapper."""

    def __init__(self, float_workspace_buffer=None, kv_layout="NHD",
                 use_cuda_graph=False, qo_indptr_buf=None,
                 paged_kv_indptr_buf=None, paged_kv_indices_buf=None,
                 paged_kv_last_page_len_buf=None, custom_mask_buf=None,
                 mask_indptr_buf=None, backend="auto", jit_args=None,
                 jit_kwargs=None, variant_owns_mask=False):
        _unsupported(jit_args=jit_args, jit_kwargs=jit_kwargs,
                     variant_owns_mask=variant_owns_mask)
        self._layout = _layout(kv_layout)
        self._plan = None
        _register(self)

    def plan(self, qo_indptr, paged_kv_indptr, paged_kv_indices,
             paged_kv_last_page_len, num_qo_heads, num_kv_heads,
             head_dim_qk, page_size, head_dim_vo=None, custom_mask=None,
             packed_custom_mask=None, causal=False, pos_encoding_mode="NONE",
             use_fp16_qk_reduction=False, sm_scale=None, window_left=-1,
             logits_soft_cap=None, rope_scale=None, rope_theta=None,
             q_data_type="float16", kv_data_type=None, o_data_type=None,
             non_blocking=True, **kwargs):
        _unsupported(pos_encoding_mode=pos_encoding_mode,
                     use_fp16_qk_reduction=use_fp16_qk_reduction,
                     rope_scale=rope_scale, rope_theta=rope_theta,
                     **{k: v for k, v in kwargs.items()
                        if k not in ("_cascade_level", "seq_lens",
                                     "seq_lens_q", "block_tables",
                                     "max_token_per_sequence",
                                     "max_sequence_kv", "fixed_split_size",
                                     "disable_split_kv", "uniform_q_len")})
        if head_dim_vo is not None and head_dim_vo != head_dim_qk:
            raise NotImplementedError("head_dim_vo != head_dim_qk")
        if kv_data_type is not None:
            _dtype(kv_data_type, "kv_data_type")
        p = _AttentionPlan(paged_kv_indptr, paged_kv_indices,
                           paged_kv_last_page_len, num_qo_heads, num_kv_heads,
                           head_dim_qk, page_size, window_left,
                           logits_soft_cap, sm_scale, q_data_type)
        qo = _tensor.host_i32(qo_indptr, "qo_indptr")
        if qo.size != p.table.batch + 1:
            raise ValueError(f"qo_indptr has {qo.size} entries and "
                             f"paged_kv_indptr {p.table.batch + 1}")
        _ops.check_indptr(qo, "qo_indptr")
        qo_len = np.diff(qo)
        long = qo_len > p.table.kv_len
        # A cascade level without causal or window may hold more queries
        # than keys (a short shared prefix): positions do not matter there,
        # and the kernel gets explicit ones (0).
        free = kwargs.get("_cascade_level", False) and not causal and \
            not p.window
        self._positions = None
        if long.any() and free:
            self._positions = np.zeros(int(qo[-1]), np.int32)
        elif long.any():
            i = int(np.argmax(long))
            raise ValueError(f"request {i} has {qo_len[i]} queries and "
                             f"{p.table.kv_len[i]} keys: the queries are "
                             f"the request's last tokens, so qo_len <= "
                             f"kv_len")
        self._qo = qo
        self._mask = None
        if custom_mask is not None or packed_custom_mask is not None:
            if p.window:
                raise NotImplementedError("a custom mask with window_left")
            causal = False  # FlashInfer ignores causal under a custom mask
            seg = np.concatenate([[0], np.cumsum(qo_len.astype(np.int64) *
                                                 p.table.kv_len)])
            if packed_custom_mask is None:
                bits = _host_bool(custom_mask, "custom_mask")
                if bits.size != seg[-1]:
                    raise ValueError(f"custom_mask has {bits.size} entries, "
                                     f"expected sum qo_len * kv_len = "
                                     f"{seg[-1]}")
                packed, mask_indptr = _segment_pack(bits, seg, "little")
            else:
                packed = _host_u8(packed_custom_mask, "packed_custom_mask")
                mask_indptr = np.concatenate(
                    [[0], np.cumsum((np.diff(seg) + 7) // 8)]).astype(np.int32)
                if packed.size != mask_indptr[-1]:
                    raise ValueError(f"packed_custom_mask has {packed.size} "
                                     f"bytes, expected {mask_indptr[-1]}")
            self._mask = (packed, mask_indptr)
        self._causal = bool(causal)
        self._plan = p

    begin_forward = plan

    def run(self, q, paged_kv_cache, *args, q_scale=None, k_scale=None,
            v_scale=None, out=None, lse=None, return_lse=False,
            lse_base="log2", lse_layout="NH", enable_pdl=None,
            window_left=None, sinks=None, **kwargs):
        p = self._plan
        if p is None:
            raise PagedAttnError("run() before plan()")
        _unsupported(args=args, q_scale=q_scale, k_scale=k_scale,
                     v_scale=v_scale, sinks=sinks, **kwargs)
        if lse_base not in ("log2", "ln"):
            raise ValueError(f"lse_base must be 'log2' or 'ln', got "
                             f"{lse_base!r}")
        if lse_layout not in ("NH", "HN"):
            raise ValueError(f"lse_layout must be 'NH' or 'HN', got "
                             f"{lse_layout!r}")
        if window_left is not None and window_left != p.window_left:
            raise NotImplementedError("window_left at run() differing from "
                                      "plan()'s (a different kernel)")
        user_lse = lse
        if _torch_op_applies(q, out, lse):
            out, lse = _torch_run(self, q, paged_kv_cache)
        else:
            out, lse = self._run_eager(q, paged_kv_cache, out,
                                       lse if lse_layout == "NH" else None)
            _scale_(lse, LOG2E)
        if not return_lse and user_lse is None:
            return out
        if lse_base == "ln":
            _scale_(lse, LN2)
        if lse_layout == "HN":
            hn = lse.T.copy() if isinstance(lse, np.ndarray) else \
                lse.t().contiguous()
            if user_lse is not None:
                user_lse[...] = hn
                hn = user_lse
            lse = hn
        return (out, lse) if return_lse else out

    def _rows(self):
        return int(self._qo[-1])

    def _run_eager(self, q, paged_kv_cache, out=None, lse=None):
        """o and natural-log lse."""
        p = self._plan
        rows = int(self._qo[-1])
        qa, cache = p.prepare(q, paged_kv_cache, self._layout, rows)
        out, lse = _outputs(qa, out, lse, rows, p.num_qo_heads, p.head_dim)
        mask = None
        if self._mask is not None:
            mask = tuple(p.table.cached_device(("mask", i), m, qa)
                         for i, m in enumerate(self._mask))
        positions = None
        if self._positions is not None:
            positions = p.table.cached_device("free_pos", self._positions, qa)
        cfg = p.config(_target(qa), cache, causal=self._causal,
                       custom_mask=mask is not None,
                       positions=positions is not None)
        _ops.attention(cfg, q, self._qo, cache, p.table, out, lse, mask=mask,
                       positions=positions)
        return out, lse

    forward = run

    def run_return_lse(self, q, paged_kv_cache, *args, **kwargs):
        kwargs["return_lse"] = True
        return self.run(q, paged_kv_cache, *args, **kwargs)


class MultiLevelCascadeAttentionWrapper:
    """flashinfer.MultiLevelCascadeAttentionWrapper: a prefill per level
    (causal at the last level only), merged into the output."""

    def __init__(self, num_levels, float_workspace_buffer=None,
                 kv_layout="NHD", use_cuda_graph=False,
                 qo_indptr_buf_arr=None, paged_kv_indptr_buf_arr=None,
                 paged_kv_indices_buf_arr=None,
                 paged_kv_last_page_len_buf_arr=None):
        if num_levels < 1:
            raise ValueError(f"num_levels {num_levels} < 1")
        self._levels = [BatchPrefillWithPagedKVCacheWrapper(None, kv_layout)
                        for _ in range(num_levels)]

    def plan(self, qo_indptr_arr, paged_kv_indptr_arr, paged_kv_indices_arr,
             paged_kv_last_page_len, num_qo_heads, num_kv_heads, head_dim,
             page_size, causal=False, pos_encoding_mode="NONE",
             use_fp16_qk_reduction=False, sm_scale=None, window_left=-1,
             logits_soft_cap=None, rope_scale=None, rope_theta=None,
             q_data_type="float16", kv_data_type=None):
        n = len(self._levels)
        for name, arr in (("qo_indptr_arr", qo_indptr_arr),
                          ("paged_kv_indptr_arr", paged_kv_indptr_arr),
                          ("paged_kv_indices_arr", paged_kv_indices_arr),
                          ("paged_kv_last_page_len", paged_kv_last_page_len)):
            if len(arr) != n:
                raise ValueError(f"{name} has {len(arr)} levels, expected {n}")
        for i, w in enumerate(self._levels):
            w.plan(qo_indptr_arr[i], paged_kv_indptr_arr[i],
                   paged_kv_indices_arr[i], paged_kv_last_page_len[i],
                   num_qo_heads, num_kv_heads, head_dim, page_size,
                   causal=causal if i == n - 1 else False,
                   pos_encoding_mode=pos_encoding_mode,
                   use_fp16_qk_reduction=use_fp16_qk_reduction,
                   sm_scale=sm_scale, window_left=window_left,
                   logits_soft_cap=logits_soft_cap, rope_scale=rope_scale,
                   rope_theta=rope_theta, q_data_type=q_data_type,
                   kv_data_type=kv_data_type, _cascade_level=True)
        rows = {int(w._qo[-1]) for w in self._levels}
        if len(rows) != 1:
            raise ValueError(f"every level must cover the same query rows, "
                             f"got {sorted(rows)}")
        # On CUDA the runtime plans the levels (pa_cascade_plan): one
        # bundle serves all of them, so causal must concern only levels of
        # one query per segment but the last (where it changes nothing).
        self._causal = bool(causal)
        self._cascade = _ops.CascadePlan(
            [(w._qo, w._plan.table) for w in self._levels])

    begin_forward = plan

    def _runtime_applies(self, q):
        if not (_tensor.is_torch(q) and q.is_cuda):
            return False
        if not self._causal:
            return True
        # Causal: every level but the last must run as decode, which the
        # runtime does only where its decode kernel computes what the
        # prefill would (default options).
        p = self._levels[-1]._plan
        if p.window or p.soft_cap or p.sm_scale:
            return False
        return all(np.array_equal(w._qo, np.arange(w._qo.size))
                   for w in self._levels[:-1])

    def run(self, q, paged_kv_cache):
        if self._runtime_applies(q):
            last = self._levels[-1]
            p = last._plan
            qa, cache = p.prepare(q, paged_kv_cache, last._layout,
                                  self._cascade.rows)
            for w in self._levels[:-1]:
                w._plan.prepare(q, paged_kv_cache, w._layout,
                                self._cascade.rows)
            out, lse = _outputs(qa, None, None, self._cascade.rows,
                                p.num_qo_heads, p.head_dim)
            cfg = p.config("gpu", cache, causal=self._causal)
            _ops.cascade(cfg, q, cache, self._cascade, out, lse)
            return out
        out, lse = self._levels[-1].run(q, paged_kv_cache, return_lse=True,
                                        lse_base="ln")
        for w in self._levels[:-1]:
            o_i, lse_i = w.run(q, paged_kv_cache, return_lse=True,
                               lse_base="ln")
            _merge_natural(o_i, lse_i, out, lse, out, lse)
        return out

    forward = run


# --------------------------------------------------------------------------
# Merges (base-2 lse, as FlashInfer's)
# --------------------------------------------------------------------------

def _merge_config(va, heads, head_dim):
    return Config(target=_target(va), head_dim=head_dim, page_size=16,
                  kv_heads=heads, group=1, dtype=va.dtype)


def _copy(x):
    return x.copy() if isinstance(x, np.ndarray) else x.clone()


def _merge_natural(va, sa, vb, sb, out_v, out_s):
    """Natural-log merge of two states into out_v / out_s (which may be
    inputs: the kernel's outs are fresh arrays, copied back)."""
    a = _tensor.wrap(va, "v_a")
    if len(a.shape) != 3:
        raise ValueError(f"v_a must be [n, H, D], got {a.shape}")
    n, h, d = a.shape
    if a.dtype not in ("f16", "bf16", "f32"):
        raise TypeError(f"v_a is {a.dtype}: states are f16, bf16 or f32")
    for name, x, shape, dtype in (("s_a", sa, (n, h), "f32"),
                                  ("v_b", vb, (n, h, d), a.dtype),
                                  ("s_b", sb, (n, h), "f32")):
        _tensor.check_array(_tensor.wrap(x, name), name, shape, dtype,
                            a.where)
    o = _tensor.empty(a, (n, h, d), a.dtype)
    s = _tensor.empty(a, (n, h), "f32")
    _ops.merge(_merge_config(a, h, d), va, sa, vb, sb, o, s)
    out_v[...] = o
    out_s[...] = s


def merge_state(v_a, s_a, v_b, s_b):
    """flashinfer.merge_state: (v, s) of two states, s in base 2."""
    a = _tensor.wrap(v_a, "v_a")
    v = _tensor.empty(a, a.shape, a.dtype)
    s = _tensor.empty(a, a.shape[:2], "f32")
    _merge_natural(v_a, _scale_(_as_f32(s_a), LN2), v_b,
                   _scale_(_as_f32(s_b), LN2), v, s)
    return v, _scale_(s, LOG2E)


def merge_state_in_place(v, s, v_other, s_other, mask=None):
    """flashinfer.merge_state_in_place: v, s updated (rows where mask)."""
    mv, ms = merge_state(v, s, v_other, s_other)
    if mask is None:
        v[...] = mv
        s[...] = ms
    else:
        v[mask] = mv[mask]
        s[mask] = ms[mask]


def merge_states(v, s):
    """flashinfer.merge_states: v [n, S, H, D], s [n, S, H] (base 2)."""
    a = _tensor.wrap(v, "v")
    if len(a.shape) != 4:
        raise ValueError(f"v must be [n, S, H, D], got {a.shape}")
    n, _, h, d = a.shape
    if a.dtype not in ("f16", "bf16", "f32"):
        raise TypeError(f"v is {a.dtype}: states are f16, bf16 or f32")
    sa = _tensor.wrap(s, "s")
    if sa.shape != a.shape[:3] or sa.where != a.where:
        raise ValueError(f"s has shape {sa.shape} on {sa.where}, expected "
                         f"{a.shape[:3]} on {a.where}")
    o = _tensor.empty(a, (n, h, d), a.dtype)
    lse = _tensor.empty(a, (n, h), "f32")
    _ops.merge_states(_merge_config(a, h, d), v, _scale_(_as_f32(s), LN2),
                      o, lse)
    return o, _scale_(lse, LOG2E)


def _as_f32(s):
    """A float32 copy of an lse array (the merges scale it in place)."""
    if isinstance(s, np.ndarray):
        return s.astype(np.float32, copy=True)
    import torch
    return s.to(torch.float32, copy=True).contiguous()


# --------------------------------------------------------------------------
# Cache writes
# --------------------------------------------------------------------------

def get_batch_indices_positions(append_indptr, seq_lens, nnz,
                                batch_indices=None, positions=None):
    """flashinfer.get_batch_indices_positions: per appended row, its
    request and its position (seq_len - rows after it in the request)."""
    ind = _tensor.host_i32(append_indptr, "append_indptr")
    lens = _tensor.host_i32(seq_lens, "seq_lens")
    b = np.full(nnz, -1, np.int32)
    pos = np.zeros(nnz, np.int32)
    for r in range(ind.size - 1):
        lo, hi = int(ind[r]), int(ind[r + 1])
        b[lo:hi] = r
        pos[lo:hi] = lens[r] - (hi - np.arange(lo, hi))
    like = append_indptr
    rb, rp = _tensor.to_device_like(b, like), _tensor.to_device_like(pos, like)
    if batch_indices is not None:
        batch_indices[...] = rb
        positions[...] = rp
        return batch_indices, positions
    return rb, rp


def append_paged_kv_cache(append_key, append_value, batch_indices, positions,
                          paged_kv_cache, kv_indices, kv_indptr,
                          kv_last_page_len, kv_layout="NHD"):
    """flashinfer.append_paged_kv_cache: row i goes to request
    batch_indices[i] at position positions[i] (pa.append_kv_slots on the
    slots this computes; the page table must already hold the rows)."""
    cache = _ops.Cache(paged_kv_cache, _layout(kv_layout))
    ka = _tensor.wrap(append_key, "append_key")
    va = _tensor.wrap(append_value, "append_value")
    n = ka.shape[0]
    expect = (n, cache.kv_heads, cache.head_dim)
    for name, a in (("append_key", ka), ("append_value", va)):
        _tensor.check_array(a, name, expect, cache.dtype, cache.where)
    ip = _tensor.host_i32(kv_indptr, "kv_indptr")
    ix = _tensor.host_i32(kv_indices, "kv_indices")
    bi = _tensor.host_i32(batch_indices, "batch_indices")
    po = _tensor.host_i32(positions, "positions")
    _ops.check_indptr(ip, "kv_indptr")
    if bi.size != n or po.size != n:
        raise ValueError(f"batch_indices ({bi.size}) and positions "
                         f"({po.size}) must have one entry per row ({n})")
    P = cache.page_size
    if ((bi < 0) | (bi >= ip.size - 1)).any():
        i = int(np.argmax((bi < 0) | (bi >= ip.size - 1)))
        raise ValueError(f"batch_indices[{i}] = {bi[i]} out of range "
                         f"[0, {ip.size - 1})")
    npages = np.diff(ip)[bi]
    bad = (po < 0) | (po >= npages.astype(np.int64) * P)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"positions[{i}] = {po[i]} is outside the "
                         f"{npages[i]} pages of request {bi[i]}")
    page_at = ip[bi] + po // P
    if ix.size < ip[-1]:
        raise ValueError(f"kv_indices has {ix.size} entries, kv_indptr needs "
                         f"{ip[-1]}")
    pages = ix[page_at]
    if ((pages < 0) | (pages >= cache.num_pages)).any():
        i = int(np.argmax((pages < 0) | (pages >= cache.num_pages)))
        raise ValueError(f"row {i}'s page {pages[i]} is out of range "
                         f"[0, {cache.num_pages})")
    slots = (pages.astype(np.int64) * P + po % P)
    if slots.max(initial=0) >= 2**31:
        raise ValueError("slots do not fit int32")
    cfg = Config(target=_target(ka), head_dim=cache.head_dim, page_size=P,
                 kv_heads=cache.kv_heads, group=1, layout=cache.layout,
                 dtype=cache.dtype, kv="joint" if cache.joint else "split")
    _ops.append_slots(cfg, append_key, append_value,
                      _tensor.to_device_like(slots.astype(np.int32), ka),
                      cache)


# --------------------------------------------------------------------------
# Bit packing
# --------------------------------------------------------------------------

def _host_bool(x, name):
    if _tensor.is_torch(x):
        x = x.detach().cpu().numpy()
    return np.asarray(x).reshape(-1).astype(bool)


def _host_u8(x, name):
    if _tensor.is_torch(x):
        x = x.detach().cpu().numpy()
    a = np.asarray(x).reshape(-1)
    if a.dtype not in (np.uint8, np.int8):
        raise TypeError(f"{name} must be uint8, got {a.dtype}")
    return a.view(np.uint8)


def _segment_pack(bits, indptr, bitorder):
    seg = np.diff(indptr)
    out_indptr = np.concatenate([[0], np.cumsum((seg + 7) // 8)]).astype(
        np.int32)
    parts = [np.packbits(bits[indptr[i]:indptr[i + 1]], bitorder=bitorder)
             for i in range(seg.size)]
    packed = np.concatenate(parts) if parts else np.zeros(0, np.uint8)
    return packed.astype(np.uint8), out_indptr


def packbits(x, bitorder="big"):
    """flashinfer.packbits (numpy.packbits of x as bool)."""
    if bitorder not in ("big", "little"):
        raise ValueError(f"bitorder must be 'big' or 'little'")
    out = np.packbits(_host_bool(x, "x"), bitorder=bitorder)
    return _tensor.to_device_like(out, x) if _tensor.is_torch(x) else out


def segment_packbits(x, indptr, bitorder="big"):
    """flashinfer.segment_packbits: each segment packed on its own (zero
    padded to whole bytes); returns (packed, new_indptr)."""
    if bitorder not in ("big", "little"):
        raise ValueError(f"bitorder must be 'big' or 'little'")
    ind = _tensor.host_i32(indptr, "indptr")
    _ops.check_indptr(ind, "indptr")
    bits = _host_bool(x, "x")
    if ind[-1] > bits.size:
        raise ValueError(f"indptr[-1] = {ind[-1]} exceeds x's {bits.size}")
    packed, new = _segment_pack(bits, ind, bitorder)
    if _tensor.is_torch(x):
        return (_tensor.to_device_like(packed, x),
                _tensor.to_device_like(new, x))
    return packed, new
