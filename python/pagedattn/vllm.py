"""vLLM's interface over PagedAttn: the cache write with a slot mapping and
paged decode over block tables, for vLLM's flash layout (key_cache and
value_cache [num_blocks, block_size, num_kv_heads, head_size], as its
FlashAttention / FlashInfer backends keep them; PagedAttn's NHD split
cache). The legacy 5-D key layout [num_blocks, Hkv, head_size / x,
block_size, x] of paged_attention_v1's CUDA kernel is rejected.

The block tables become PagedAttn's CSR page table (kv_indptr, kv_indices,
kv_last_page_len): the page list is gathered on the device, the lengths
(what planning reads) on the host. `PagedDecode` converts and plans once
per step and runs every layer; `paged_attention_v1` does both per call.
"""

import math

import numpy as np

from . import _ops, _tensor
from ._compiler import Config
from .flashinfer import BatchDecodeWithPagedKVCacheWrapper

__all__ = ["reshape_and_cache_flash", "PagedDecode", "paged_attention_v1",
           "block_tables_to_csr"]


def _check_auto(kv_cache_dtype, k_scale, v_scale):
    if kv_cache_dtype != "auto":
        raise NotImplementedError(f"kv_cache_dtype {kv_cache_dtype!r}: the "
                                  f"Python calls take 'auto' (fp8 caches "
                                  f"are in the C API)")
    for name, s in (("k_scale", k_scale), ("v_scale", v_scale)):
        if s is not None and float(np.asarray(
                s.detach().cpu() if _tensor.is_torch(s) else s)) != 1.0:
            raise NotImplementedError(f"{name} != 1 with kv_cache_dtype "
                                      f"'auto'")


def _flash_cache(key_cache, value_cache):
    k = _tensor.wrap(key_cache, "key_cache")
    if len(k.shape) != 4:
        raise NotImplementedError(
            f"key_cache has shape {k.shape}: PagedAttn takes vLLM's flash "
            f"layout [num_blocks, block_size, num_kv_heads, head_size] (the "
            f"5-D paged_attention_v1 key layout is not supported)")
    return _ops.Cache((key_cache, value_cache), "nhd")


def reshape_and_cache_flash(key, value, key_cache, value_cache, slot_mapping,
                            kv_cache_dtype="auto", k_scale=None,
                            v_scale=None):
    """vLLM's reshape_and_cache_flash: token r of key / value
    [num_tokens, Hkv, D] goes to block slot_mapping[r] // block_size, offset
    slot_mapping[r] % block_size; negative slots (padding) are skipped
    (pa.append_kv_slots)."""
    _check_auto(kv_cache_dtype, k_scale, v_scale)
    cache = _flash_cache(key_cache, value_cache)
    ka = _tensor.wrap(key, "key")
    expect = (ka.shape[0], cache.kv_heads, cache.head_dim)
    for name, x in (("key", key), ("value", value)):
        _tensor.check_array(_tensor.wrap(x, name), name, expect, cache.dtype,
                            cache.where)
    slots = _tensor.host_i32(slot_mapping, "slot_mapping") if not (
        _tensor.is_torch(slot_mapping) and slot_mapping.is_cuda) else None
    if slots is not None:
        if slots.size != ka.shape[0]:
            raise ValueError(f"slot_mapping has {slots.size} entries for "
                             f"{ka.shape[0]} tokens")
        if (slots >= cache.num_pages * cache.page_size).any():
            i = int(np.argmax(slots >= cache.num_pages * cache.page_size))
            raise ValueError(f"slot_mapping[{i}] = {slots[i]} is past the "
                             f"cache's {cache.num_pages * cache.page_size} "
                             f"slots")
        dev_slots = _tensor.to_device_like(slots, ka)
    else:
        # On the device: int64 -> int32 there; the kernel skips slots past
        # the cache (checked mode would report them).
        if slot_mapping.numel() != ka.shape[0]:
            raise ValueError(f"slot_mapping has {slot_mapping.numel()} "
                             f"entries for {ka.shape[0]} tokens")
        dev_slots = slot_mapping.to(dtype=__import__("torch").int32).contiguous()
    cfg = Config(target="cpu" if ka.device == "cpu" else "gpu",
                 head_dim=cache.head_dim, page_size=cache.page_size,
                 kv_heads=cache.kv_heads, group=1, layout="nhd",
                 dtype=cache.dtype, kv="split")
    _ops.append_slots(cfg, key, value, dev_slots, cache)


def block_tables_to_csr(block_tables, seq_lens, block_size):
    """(kv_indptr, kv_indices, kv_last_page_len) of vLLM's block tables
    [B, max_blocks] and seq_lens [B]: indptr and last_page_len on the host
    (int32 numpy, what planning reads); kv_indices where block_tables lives
    (gathered on the device for a CUDA tensor, with no copy of the table to
    the host)."""
    on_cuda = _tensor.is_torch(block_tables) and block_tables.is_cuda
    bt = block_tables if on_cuda else (
        block_tables.detach().cpu().numpy() if _tensor.is_torch(block_tables)
        else np.asarray(block_tables))
    lens = _tensor.host_i32(seq_lens, "seq_lens")
    if bt.ndim != 2 or bt.shape[0] != lens.size:
        raise ValueError(f"block_tables has shape {tuple(bt.shape)}, "
                         f"expected [{lens.size}, max_blocks]")
    if (lens < 0).any():
        raise ValueError("seq_lens must be >= 0")
    npages = (lens.astype(np.int64) + block_size - 1) // block_size
    if (npages > bt.shape[1]).any():
        i = int(np.argmax(npages > bt.shape[1]))
        raise ValueError(f"sequence {i} has {lens[i]} tokens: "
                         f"{npages[i]} blocks, block_tables has "
                         f"{bt.shape[1]} columns")
    indptr = np.concatenate([[0], np.cumsum(npages)]).astype(np.int32)
    if on_cuda:
        import torch
        n = torch.from_numpy(npages).to(bt.device)
        keep = torch.arange(bt.shape[1], device=bt.device)[None, :] < n[:, None]
        indices = bt[keep].to(torch.int32)  # row-major: request order
    else:
        indices = np.concatenate([bt[i, :npages[i]] for i in
                                  range(lens.size)] or [np.zeros(0)]).astype(
                                      np.int32)
    last = np.where(npages > 0, lens - (npages - 1) * block_size, 0)
    return indptr, indices, last.astype(np.int32)


class PagedDecode:
    """Paged decode of one step over vLLM's block tables: plan once
    (per step), run per layer. `scale` is the softmax scale."""

    def __init__(self, block_tables, seq_lens, num_heads, num_kv_heads,
                 head_size, block_size, scale, dtype="float16"):
        ip, ix, last = block_tables_to_csr(block_tables, seq_lens, block_size)
        default = 1.0 / math.sqrt(head_size)
        sm = None if math.isclose(scale, default, rel_tol=1e-6) else scale
        self._w = BatchDecodeWithPagedKVCacheWrapper(None, "NHD")
        self._w.plan(ip, ix, last, num_heads, num_kv_heads, head_size,
                     block_size, sm_scale=sm, q_data_type=dtype)

    def run(self, query, key_cache, value_cache, out=None):
        _flash_cache(key_cache, value_cache)
        o = self._w.run(query, (key_cache, value_cache))
        if out is not None:
            out[...] = o
            return out
        return o


def paged_attention_v1(out, query, key_cache, value_cache, num_kv_heads,
                       scale, block_tables, seq_lens, block_size, max_seq_len,
                       alibi_slopes=None, kv_cache_dtype="auto", k_scale=None,
                       v_scale=None, tp_rank=0, blocksparse_local_blocks=0,
                       blocksparse_vert_stride=0, blocksparse_block_size=64,
                       blocksparse_head_sliding_step=0):
    """vLLM's paged_attention_v1 (one query per sequence) into `out`, over
    the flash cache layout. Plans per call (host copy of seq_lens); reuse a
    PagedDecode across layers instead."""
    if alibi_slopes is not None:
        raise NotImplementedError("alibi_slopes")
    if blocksparse_vert_stride > 1:
        raise NotImplementedError("block-sparse attention")
    _check_auto(kv_cache_dtype, k_scale, v_scale)
    qa = _tensor.wrap(query, "query")
    if len(qa.shape) != 3:
        raise ValueError(f"query must be [num_seqs, num_heads, head_size], "
                         f"got {qa.shape}")
    dtype = {"f16": "float16", "bf16": "bfloat16", "f32": "float32"}.get(
        qa.dtype)
    if dtype is None:
        raise NotImplementedError(f"query dtype {qa.dtype}: float16, "
                                  f"bfloat16 or float32")
    step = PagedDecode(block_tables, seq_lens, qa.shape[1], num_kv_heads,
                       qa.shape[2], block_size, scale, dtype)
    return step.run(query, key_cache, value_cache, out=out)
