"""PagedAttn from Python: FlashInfer- and vLLM-style calls over kernel
bundles that the PagedAttn compiler builds on demand (CPU: a shared
library through the CPU lowering; CUDA: cubins launched by the runtime).
See docs/Python.md."""

from . import flashinfer, vllm
from ._compiler import Config, bundle_dir, compile_bundle, find_compiler
from .errors import BundleNotFoundError, CompileError, PagedAttnError
from .pool import AutoCascade, PagePool, PoolFullError, apply_copies
from .flashinfer import (BatchDecodeWithPagedKVCacheWrapper,
                         BatchMLAPagedAttentionWrapper,
                         BatchPrefillWithPagedKVCacheWrapper,
                         MultiLevelCascadeAttentionWrapper,
                         append_paged_kv_cache, get_batch_indices_positions,
                         merge_state, merge_state_in_place, merge_states,
                         packbits, segment_packbits)

__version__ = "0.1.0"

# With torch already imported, register pagedattn::run_plan now, so that a
# model traced by torch.compile finds it (else on the first torch run()).
import sys as _sys  # noqa: E402

if "torch" in _sys.modules:
    from . import torch_ops  # noqa: F401,E402
