"""Bundles on demand: a configuration names the pa-compile flags of its
kernels; `bundle_dir(config)` finds that bundle in the disk cache (keyed by
the configuration and the compiler binary's hash, like FlashInfer's JIT
cache), compiling it with pa-compile on a miss, or, in ahead-of-time mode
(PAGEDATTN_BUNDLE_DIR set), in the directory the user names, with an error
naming the missing configuration and the command that builds it.

Environment:
  PAGEDATTN_COMPILER    path of pa-compile (else PATH, else the build tree
                        this package sits in: <repo>/build/bin/pa-compile)
  PAGEDATTN_CACHE_DIR   the JIT cache (default ~/.cache/pagedattn)
  PAGEDATTN_BUNDLE_DIR  ahead-of-time mode: prebuilt bundles only, named
                        config.name() (`python -m pagedattn prebuild`)
"""

import dataclasses
import hashlib
import os
import shutil
import subprocess
import tempfile

from .errors import BundleNotFoundError, CompileError


@dataclasses.dataclass(frozen=True)
class Config:
    """One bundle: the pa-compile flags it is built with."""
    target: str                 # "cpu" | "gpu"
    head_dim: int
    page_size: int
    kv_heads: int
    group: int
    layout: str = "nhd"         # "nhd" | "hnd"
    dtype: str = "f16"          # "f16" | "bf16" | "f32"
    kv: str = "joint"           # "joint" | "split"
    kernels: str = "all"        # "all" | "prefill" | "decode" | "mla"
    causal: bool = False
    window: int = 0             # Semantics' window (FlashInfer's window_left + 1)
    soft_cap: float = 0.0
    sm_scale: float = 0.0
    positions: bool = False
    custom_mask: bool = False
    alibi: bool = False
    chip: str = "sm_90a"
    lse_base2: bool = False
    # kernels "mla": head_dim is D_ckv, group the query heads (kv_heads 1),
    # kpe D_kpe.
    kpe: int = 0

    def flags(self):
        if self.kernels == "mla":
            f = ["--target", self.target, "--kernels", "mla", "--head-dim",
                 str(self.head_dim), "--kpe", str(self.kpe), "--mla-heads",
                 str(self.group), "--page-size", str(self.page_size),
                 "--dtype", self.dtype]
        else:
            f = ["--target", self.target, "--kernels", self.kernels,
                 "--head-dim", str(self.head_dim), "--page-size",
                 str(self.page_size), "--kv-heads", str(self.kv_heads),
                 "--group", str(self.group), "--layout", self.layout,
                 "--dtype", self.dtype, "--kv", self.kv]
        if self.target == "gpu":
            f += ["--chip", self.chip]
        if self.causal:
            f.append("--causal")
        if self.window:
            f += ["--window", str(self.window)]
        if self.soft_cap:
            f += ["--logits-soft-cap", repr(float(self.soft_cap))]
        if self.sm_scale:
            f += ["--sm-scale", repr(float(self.sm_scale))]
        if self.positions:
            f.append("--positions")
        if self.custom_mask:
            f.append("--custom-mask")
        if self.alibi:
            f.append("--alibi")
        if self.lse_base2:
            f.append("--lse-base2")
        return f

    def name(self):
        """A directory name: readable fields and a hash of every flag."""
        h = hashlib.sha256(" ".join(self.flags()).encode()).hexdigest()[:12]
        return (f"{self.target}-d{self.head_dim}-p{self.page_size}"
                f"-hkv{self.kv_heads}-g{self.group}-{self.layout}-"
                f"{self.dtype}-{self.kv}-{self.kernels}-{h}")


def find_compiler():
    """The pa-compile binary, or None."""
    env = os.environ.get("PAGEDATTN_COMPILER")
    if env:
        if not os.access(env, os.X_OK):
            raise CompileError(f"PAGEDATTN_COMPILER={env} is not an "
                               f"executable")
        return env
    found = shutil.which("pa-compile")
    if found:
        return found
    here = os.path.dirname(os.path.abspath(__file__))
    tree = os.path.join(here, "..", "..", "build", "bin", "pa-compile")
    return os.path.normpath(tree) if os.access(tree, os.X_OK) else None


_HASHES = {}


def compiler_version(path):
    """A hash of the compiler binary: the cache key's compiler version."""
    st = os.stat(path)
    key = (path, st.st_mtime_ns, st.st_size)
    if key not in _HASHES:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        _HASHES[key] = h.hexdigest()[:16]
    return _HASHES[key]


def _complete(directory, target):
    marker = "cpu.manifest" if target == "cpu" else "bundle.manifest"
    return os.path.exists(os.path.join(directory, marker))


def compile_bundle(config, out_dir, compiler=None):
    """Runs pa-compile for `config` into `out_dir`; raises CompileError
    with the compiler's message."""
    compiler = compiler or find_compiler()
    if compiler is None:
        raise CompileError("pa-compile not found (set PAGEDATTN_COMPILER or "
                           "put it on PATH)")
    cmd = [compiler] + config.flags() + ["-o", out_dir]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise CompileError(f"pa-compile failed for {config.name()} "
                           f"({' '.join(cmd)}):\n{p.stderr.strip()}")


def bundle_dir(config):
    """The directory of `config`'s bundle, compiled on a cache miss."""
    aot = os.environ.get("PAGEDATTN_BUNDLE_DIR")
    if aot:
        d = os.path.join(aot, config.name())
        if _complete(d, config.target):
            return d
        raise BundleNotFoundError(
            f"ahead-of-time mode (PAGEDATTN_BUNDLE_DIR={aot}): no bundle "
            f"'{config.name()}' for {config}; build it where pa-compile is "
            f"with: pa-compile {' '.join(config.flags())} -o "
            f"{os.path.join(aot, config.name())}  (or python -m pagedattn "
            f"prebuild)")
    compiler = find_compiler()
    if compiler is None:
        raise BundleNotFoundError(
            f"no compiler to build '{config.name()}' ({config}): set "
            f"PAGEDATTN_COMPILER to pa-compile, or PAGEDATTN_BUNDLE_DIR to "
            f"a directory of prebuilt bundles")
    root = os.environ.get("PAGEDATTN_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "pagedattn")
    d = os.path.join(root, compiler_version(compiler), config.name())
    if _complete(d, config.target):
        return d
    os.makedirs(os.path.dirname(d), exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=config.name() + ".", dir=os.path.dirname(d))
    try:
        compile_bundle(config, tmp, compiler)
        try:
            os.rename(tmp, d)  # atomic: another process may have won
        except OSError:
            if not _complete(d, config.target):
                raise
    finally:
        if os.path.exists(tmp):
            shutil.rmtree(tmp, ignore_errors=True)
    return d
