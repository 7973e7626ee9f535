"""CPU bundles: ``pa-compile --target cpu`` writes ``kernels_cpu.so`` (the
program through ``pa-lower-to-cpu``, one ``_mlir_ciface_<fn>`` per
function) and ``cpu.manifest`` (each function's arguments: name, memref
rank, element type; its results; its options). This module loads one and
calls its functions on host arrays through memref descriptors
(docs/Runtime.md, "CPU bundles")."""

import ctypes
import os

from . import _tensor
from .errors import PagedAttnError

_DESCRIPTORS = {}


def _descriptor(rank):
    """The C struct MLIR passes a rank-`rank` memref as."""
    if rank not in _DESCRIPTORS:
        _DESCRIPTORS[rank] = type(
            f"MemRef{rank}D", (ctypes.Structure,),
            {"_fields_": [("allocated", ctypes.c_void_p),
                          ("aligned", ctypes.c_void_p),
                          ("offset", ctypes.c_int64),
                          ("sizes", ctypes.c_int64 * rank),
                          ("strides", ctypes.c_int64 * rank)]})
    return _DESCRIPTORS[rank]


class Function:
    """One function of a CPU bundle."""

    def __init__(self, name):
        self.name = name
        self.args = []      # (name, rank, dtype)
        self.results = []   # (rank, dtype)
        self.options = {}   # "options" / "topk" lines

    def arg_names(self):
        return [a[0] for a in self.args]


def parse_manifest(text, path="cpu.manifest"):
    """(config dict, {name: Function}) of a cpu.manifest."""
    lines = [l.split() for l in text.splitlines() if l.strip()]
    if not lines or lines[0] != ["pa-cpu-bundle", "1"]:
        raise PagedAttnError(f"{path}: not a version-1 CPU bundle manifest")
    config, functions, cur = {}, {}, None
    for i, words in enumerate(lines[1:], start=2):
        key = words[0]
        try:
            if key == "config":
                it = iter(words[1:])
                config = {k: v for k, v in zip(it, it)}
            elif key == "function":
                cur = functions[words[1]] = Function(words[1])
            elif key == "arg":
                cur.args.append((words[1], int(words[3]), words[4]))
            elif key == "result":
                cur.results.append((int(words[2]), words[3]))
            elif key in ("options", "topk", "plan"):
                it = iter(words[1:])
                cur.options.update({k: float(v) for k, v in zip(it, it)})
            elif key == "end":
                break
            else:
                raise ValueError(f"unknown line '{key}'")
        except (IndexError, ValueError, AttributeError) as e:
            raise PagedAttnError(f"{path}:{i}: malformed line "
                                 f"'{' '.join(words)}' ({e})") from None
    for k in ("head_dim", "page_size", "kv_heads", "group"):
        if k not in config:
            raise PagedAttnError(f"{path}: the config line lacks '{k}'")
        config[k] = int(config[k])
    return config, functions


class CPUBundle:
    """A loaded CPU bundle directory."""

    def __init__(self, directory):
        self.directory = directory
        manifest = os.path.join(directory, "cpu.manifest")
        library = os.path.join(directory, "kernels_cpu.so")
        for p in (manifest, library):
            if not os.path.exists(p):
                raise PagedAttnError(f"CPU bundle '{directory}' lacks "
                                     f"{os.path.basename(p)}")
        with open(manifest) as f:
            self.config, self.functions = parse_manifest(f.read(), manifest)
        self._lib = ctypes.CDLL(library)

    def has(self, fn):
        return fn in self.functions

    def call(self, fn, **arrays):
        """Calls function `fn` with the arrays named by its manifest
        (numpy or torch CPU, C-contiguous, of the listed rank and element
        type). Outs are written in place."""
        f = self.functions.get(fn)
        if f is None:
            raise PagedAttnError(f"CPU bundle '{self.directory}' has no "
                                 f"function '{fn}'")
        missing = [n for n in f.arg_names() if n not in arrays]
        extra = [n for n in arrays if n not in f.arg_names()]
        if missing or extra:
            raise PagedAttnError(f"{fn}: arguments missing {missing}, "
                                 f"unexpected {extra}")
        descs, keep = [], []
        for name, rank, dtype in f.args:
            a = _tensor.wrap(arrays[name], name)
            if a.device != "cpu":
                raise PagedAttnError(f"{fn}: argument '{name}' is on "
                                     f"{a.device}; CPU bundles take host "
                                     f"arrays")
            if len(a.shape) != rank or a.dtype != dtype:
                raise PagedAttnError(
                    f"{fn}: argument '{name}' must be a rank-{rank} "
                    f"{dtype} array, got shape {a.shape} of {a.dtype}")
            d = _descriptor(rank)()
            d.allocated = d.aligned = a.ptr
            d.offset = 0
            stride = 1
            for k in reversed(range(rank)):
                d.sizes[k] = a.shape[k]
                d.strides[k] = stride
                stride *= a.shape[k]
            descs.append(d)
            keep.append(a)
        call_args = [ctypes.byref(d) for d in descs]
        result = None
        if f.results:
            fields = [(f"r{i}", _descriptor(r)) for i, (r, _) in
                      enumerate(f.results)]
            result = type("Results", (ctypes.Structure,),
                          {"_fields_": fields})()
            call_args.insert(0, ctypes.byref(result))
        sym = getattr(self._lib, "_mlir_ciface_" + fn)
        sym.restype = None
        sym(*call_args)
        if result is not None:
            # The results are the outs, written in place: result k is the
            # k-th of the last len(results) arguments.
            outs = descs[len(descs) - len(f.results):]
            for i, d in enumerate(outs):
                got = getattr(result, f"r{i}").aligned
                if got != d.aligned:
                    raise PagedAttnError(
                        f"{fn}: result {i} came back in a new buffer "
                        f"rather than in its out (a compiler bug)")
