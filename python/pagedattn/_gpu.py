"""The GPU runtime through ctypes: libpa_runtime.so (the C API of
include/PagedAttn/Runtime/pa_runtime.h) loading GPU bundles and launching
their kernels on the caller's CUDA stream (torch's current stream). Failed
calls raise PagedAttnError with pa_last_error()'s message."""

import ctypes
import os

from .errors import PagedAttnError

u64, i64, c_int = ctypes.c_uint64, ctypes.c_int64, ctypes.c_int
_P32 = ctypes.POINTER(ctypes.c_int32)


def _struct(name, fields):
    return type(name, (ctypes.Structure,), {"_fields_": fields})


BundleConfig = _struct("pa_bundle_config", [
    ("head_dim", i64), ("page_size", i64), ("kv_heads", i64), ("group", i64),
    ("num_q_heads", i64), ("dtype", c_int), ("layout", c_int),
    ("kv_storage", c_int), ("has_split_kernels", c_int),
    ("has_decode", c_int), ("has_prefill", c_int), ("kv_dtype", c_int),
    ("kv_scale", c_int), ("has_append", c_int), ("has_merge", c_int),
    ("has_merge_states", c_int), ("has_page_writes", c_int),
    ("has_cacheblend", c_int), ("topk_ratio", ctypes.c_double),
    ("has_pack_mask", c_int), ("plan_chunk", i64), ("mla_kpe", i64)])
MLADecodeArgs = _struct("pa_mla_decode_args", [
    ("q_nope", u64), ("q_pe", u64), ("ckv_kpe", u64), ("kv_indptr", u64),
    ("kv_indices", u64), ("kv_last_page_len", u64), ("o", u64), ("lse", u64),
    ("batch", i64), ("num_pages", i64), ("nnz", i64), ("checked", c_int),
    ("num_splits", i64), ("max_kv_len", i64), ("workspace", u64),
    ("workspace_bytes", i64), ("split_merge", c_int)])
PlanOptions = _struct("pa_plan_options", [
    ("ctas_per_sm", i64), ("force_chunk", i64), ("graph_work_capacity", i64),
    ("split_merge", c_int)])
DecodeArgs = _struct("pa_decode_args", [
    ("q", u64), ("kv", u64), ("k", u64), ("v", u64), ("kv_indptr", u64),
    ("kv_indices", u64), ("kv_last_page_len", u64), ("o", u64), ("lse", u64),
    ("batch", i64), ("num_q_heads", i64), ("head_dim", i64),
    ("num_pages", i64), ("nnz", i64), ("checked", c_int), ("k_scale", u64),
    ("v_scale", u64)])
PrefillArgs = _struct("pa_prefill_args", [
    ("q", u64), ("qo_indptr", u64), ("kv", u64), ("k", u64), ("v", u64),
    ("kv_indptr", u64), ("kv_indices", u64), ("kv_last_page_len", u64),
    ("q_positions", u64), ("custom_mask", u64), ("mask_indptr", u64),
    ("mask_bytes", i64), ("alibi_slopes", u64), ("o", u64), ("lse", u64),
    ("batch", i64), ("num_query_rows", i64), ("num_q_heads", i64),
    ("head_dim", i64), ("num_pages", i64), ("nnz", i64), ("checked", c_int),
    ("k_scale", u64), ("v_scale", u64)])
AppendArgs = _struct("pa_append_args", [
    ("k_new", u64), ("v_new", u64), ("slot_mapping", u64), ("kv", u64),
    ("k", u64), ("v", u64), ("k_scale", u64), ("v_scale", u64),
    ("num_rows", i64), ("num_pages", i64), ("checked", c_int)])
MergeArgs = _struct("pa_merge_args", [
    ("o_a", u64), ("lse_a", u64), ("o_b", u64), ("lse_b", u64), ("o", u64),
    ("lse", u64), ("num_rows", i64), ("checked", c_int)])
MergeStatesArgs = _struct("pa_merge_states_args", [
    ("o_states", u64), ("lse_states", u64), ("o", u64), ("lse", u64),
    ("num_rows", i64), ("num_states", i64), ("checked", c_int)])
CascadeLevel = _struct("pa_cascade_level", [
    ("qo_indptr", _P32), ("kv_indptr", _P32), ("kv_last_page_len", _P32),
    ("batch", i64)])
CascadeLevelArgs = _struct("pa_cascade_level_args", [
    ("qo_indptr", u64), ("kv_indptr", u64), ("kv_indices", u64),
    ("kv_last_page_len", u64), ("nnz", i64)])
CascadeArgs = _struct("pa_cascade_args", [
    ("q", u64), ("kv", u64), ("k", u64), ("v", u64), ("k_scale", u64),
    ("v_scale", u64), ("levels", ctypes.POINTER(CascadeLevelArgs)),
    ("num_levels", i64), ("o", u64), ("lse", u64), ("num_query_rows", i64),
    ("num_q_heads", i64), ("head_dim", i64), ("num_pages", i64),
    ("checked", c_int), ("serial", c_int)])

_LIB = None


def library_path():
    env = os.environ.get("PAGEDATTN_RUNTIME")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    for cand in (os.path.join(here, "libpa_runtime.so"),
                 os.path.join(here, "..", "..", "build", "lib", "Runtime",
                              "libpa_runtime.so")):
        if os.path.exists(cand):
            return os.path.normpath(cand)
    return "libpa_runtime.so"


def lib():
    """The loaded runtime (pa_init of the current torch device)."""
    global _LIB
    if _LIB is None:
        path = library_path()
        try:
            l = ctypes.CDLL(path)
        except OSError as e:
            raise PagedAttnError(
                f"cannot load the GPU runtime {path} ({e}); set "
                f"PAGEDATTN_RUNTIME to libpa_runtime.so") from None
        l.pa_last_error.restype = ctypes.c_char_p
        vp = ctypes.c_void_p
        for name, args in {
            "pa_init": [c_int],
            "pa_bundle_load": [ctypes.c_char_p, ctypes.POINTER(vp)],
            "pa_bundle_get_config": [vp, ctypes.POINTER(BundleConfig)],
            "pa_decode_plan": [vp, _P32, _P32, i64, vp, ctypes.POINTER(vp)],
            "pa_decode_run": [vp, vp, ctypes.POINTER(DecodeArgs), vp],
            "pa_prefill_plan": [vp, _P32, _P32, _P32, i64, i64,
                                ctypes.POINTER(vp)],
            "pa_prefill_run": [vp, vp, ctypes.POINTER(PrefillArgs), vp],
            "pa_append_kv_slots": [vp, ctypes.POINTER(AppendArgs), vp],
            "pa_merge": [vp, ctypes.POINTER(MergeArgs), vp],
            "pa_merge_states": [vp, ctypes.POINTER(MergeStatesArgs), vp],
            "pa_cascade_plan": [vp, ctypes.POINTER(CascadeLevel), i64, i64,
                                ctypes.POINTER(vp)],
            "pa_cascade_run": [vp, vp, ctypes.POINTER(CascadeArgs), vp],
            "pa_mla_decode": [vp, ctypes.POINTER(MLADecodeArgs), vp],
            "pa_mla_workspace_bytes": [vp, i64, i64, ctypes.POINTER(i64)],
        }.items():
            f = getattr(l, name)
            f.argtypes, f.restype = args, c_int
        for name in ("pa_bundle_free", "pa_plan_free", "pa_prefill_plan_free",
                     "pa_cascade_plan_free"):
            f = getattr(l, name)
            f.argtypes, f.restype = [vp], None
        _LIB = l
    return _LIB


def check(rc, what):
    if rc != 0:
        msg = lib().pa_last_error()
        raise PagedAttnError(f"{what}: "
                             f"{msg.decode() if msg else 'failed'}")


def init(device_index):
    check(lib().pa_init(int(device_index)), "pa_init")


def i32_ptr(host):
    """A host int32 numpy array as int32_t* (kept alive by the caller)."""
    return host.ctypes.data_as(_P32)


class Handle:
    """An owned runtime object freed with `free_name`."""

    def __init__(self, ptr, free_name):
        self.ptr, self._free = ptr, free_name

    def __del__(self):
        if self.ptr and _LIB is not None:
            getattr(_LIB, self._free)(self.ptr)
            self.ptr = None


class GPUBundle:
    def __init__(self, directory):
        l = lib()
        h = ctypes.c_void_p()
        check(l.pa_bundle_load(directory.encode(), ctypes.byref(h)),
              "pa_bundle_load")
        self.directory = directory
        self.handle = Handle(h, "pa_bundle_free")
        cfg = BundleConfig()
        check(l.pa_bundle_get_config(h, ctypes.byref(cfg)),
              "pa_bundle_get_config")
        self.config = cfg

    @property
    def ptr(self):
        return self.handle.ptr
