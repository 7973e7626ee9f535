"""The wrappers' runs as a torch custom op, `pagedattn::run_plan`, with a
fake (meta) implementation, so that a model calling them traces under
torch.compile without a graph break. A wrapper's plan() stays in Python
(host planning, as in FlashInfer); run() on torch tensors under
torch.compile calls torch.ops.pagedattn.run_plan(q, kv, v, plan_id), whose
id names the planned wrapper (eager calls skip the op's dispatch). Imported
on the first run() with torch tensors."""

import sys
from typing import Optional, Tuple

import torch

from . import flashinfer
from .flashinfer import WRAPPERS

LOG2E = 1.4426950408889634


def compiling():
    """True while torch.compile traces (the op is then opaque)."""
    return torch.compiler.is_compiling()


@torch.library.custom_op("pagedattn::run_plan", mutates_args=())
def run_plan(q: torch.Tensor, kv: torch.Tensor, v: Optional[torch.Tensor],
             plan: int) -> Tuple[torch.Tensor, torch.Tensor]:
    wrapper = WRAPPERS.get(plan)
    if wrapper is None:
        raise RuntimeError(f"pagedattn::run_plan: plan {plan} is gone (its "
                           f"wrapper was freed)")
    cache = kv if v is None else (kv, v)
    out, lse = wrapper._run_eager(q, cache)
    return out, lse.mul_(LOG2E)


@run_plan.register_fake
def _(q, kv, v, plan):
    wrapper = WRAPPERS[plan]
    rows = wrapper._rows()
    return (q.new_empty((rows,) + tuple(q.shape[1:])),
            q.new_empty((rows, q.shape[1]), dtype=torch.float32))


def run(wrapper, q, paged_kv_cache):
    if isinstance(paged_kv_cache, (tuple, list)):
        kv, v = paged_kv_cache
    else:
        kv, v = paged_kv_cache, None
    return torch.ops.pagedattn.run_plan(q, kv, v, wrapper._plan_id)


flashinfer._TORCH_OPS = sys.modules[__name__]
