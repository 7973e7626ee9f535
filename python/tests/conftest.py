"""Shared fixtures: a seed printed per test, random paged caches."""

import os
import zlib

import numpy as np
import pytest


@pytest.fixture
def rng(request):
    base = int(os.environ.get("PA_SEED", "20261125"))
    seed = base ^ zlib.crc32(request.node.nodeid.encode())
    print(f"seed {seed} (PA_SEED={base}, {request.node.nodeid})")
    return np.random.default_rng(seed)


def make_table(rng, kv_lens, page_size, extra_pages=3):
    """A random page order: (indptr, indices, last_page_len, num_pages)."""
    npages = [(l + page_size - 1) // page_size for l in kv_lens]
    indptr = np.concatenate([[0], np.cumsum(npages)]).astype(np.int32)
    num_pages = int(indptr[-1]) + extra_pages
    indices = rng.permutation(num_pages)[:indptr[-1]].astype(np.int32)
    last = np.array([l - (n - 1) * page_size if n else 0
                     for l, n in zip(kv_lens, npages)], np.int32)
    return indptr, indices, last, num_pages


def make_cache(rng, num_pages, page_size, kv_heads, head_dim, layout, joint,
               dtype=np.float16):
    page = ((page_size, kv_heads, head_dim) if layout == "NHD"
            else (kv_heads, page_size, head_dim))
    if joint:
        return rng.uniform(-1, 1, (num_pages, 2) + page).astype(dtype)
    return (rng.uniform(-1, 1, (num_pages,) + page).astype(dtype),
            rng.uniform(-1, 1, (num_pages,) + page).astype(dtype))


def ref_cache(cache):
    """(k, v) of a cache for the oracle (joint as k with v None)."""
    if isinstance(cache, tuple):
        return cache
    return cache, None


def rel_err(got, want):
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    assert not np.isnan(got).any(), "NaN in the result"
    den = np.linalg.norm(want)
    return np.linalg.norm(got - want) / (den if den > 0 else 1.0)


def lse_err(got, want):
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    assert not np.isnan(got).any(), "NaN in lse"
    inf_g, inf_w = np.isneginf(got), np.isneginf(want)
    assert (inf_g == inf_w).all(), "-inf rows differ"
    fin = ~inf_w
    return float(np.abs(got[fin] - want[fin]).max(initial=0.0))
