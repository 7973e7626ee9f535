"""Arrays the package accepts and returns, without copies: numpy arrays and
torch tensors on the CPU (and CPU DLPack producers), torch tensors on
CUDA. torch is optional: it is imported
only when a torch tensor is passed."""

import numpy as np

# Element type names, as the bundles' manifests spell them.
_NUMPY = {
    np.dtype(np.float16): "f16",
    np.dtype(np.float32): "f32",
    np.dtype(np.int32): "i32",
    np.dtype(np.int8): "i8",
    np.dtype(np.uint8): "i8",
    np.dtype(np.bool_): "i1",
}
_NUMPY_OF = {"f16": np.float16, "f32": np.float32, "i32": np.int32,
             "i8": np.uint8, "i1": np.bool_, "bf16": np.uint16,
             "f8E4M3FN": np.uint8, "f8E5M2": np.uint8}
_TORCH_NAMES = {
    "float16": "f16", "bfloat16": "bf16", "float32": "f32", "int32": "i32",
    "int8": "i8", "uint8": "i8", "bool": "i1", "float8_e4m3fn": "f8E4M3FN",
    "float8_e5m2": "f8E5M2",
}
_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "i32": 4, "i8": 1, "i1": 1,
          "f8E4M3FN": 1, "f8E5M2": 1}


# torch dtype -> manifest spelling, filled on first use.
_TORCH_DTYPES = {}


def is_torch(x):
    return type(x).__module__.startswith("torch")


class Array:
    """A view of a caller's array: device, data pointer, shape, element
    type (manifest spelling). `obj` keeps the caller's object alive."""

    __slots__ = ("obj", "device", "where", "ptr", "shape", "dtype")

    def __init__(self, obj, device, ptr, shape, dtype, where=None):
        self.obj, self.device, self.ptr = obj, device, ptr
        self.shape, self.dtype = tuple(int(s) for s in shape), dtype
        # "cpu" or "cuda:N": operands of one call must share it.
        self.where = where or device

    @property
    def nbytes(self):
        n = _BYTES[self.dtype]
        for s in self.shape:
            n *= s
        return n

    def numpy(self):
        """The CPU array as numpy (bf16 / fp8 as their bits)."""
        if self.device != "cpu":
            raise ValueError("numpy() of a CUDA array")
        if isinstance(self.obj, np.ndarray):
            return self.obj
        t = self.obj
        if self.dtype in ("bf16",):
            import torch
            t = t.view(torch.int16)
        elif self.dtype in ("f8E4M3FN", "f8E5M2"):
            import torch
            t = t.view(torch.uint8)
        return t.numpy()


def same_place(name_a, a, name_b, b):
    """Raises unless two operands live on the same device."""
    if a.where != b.where:
        raise ValueError(f"{name_a} is on {a.where} and {name_b} on "
                         f"{b.where}: the operands of a call share a device")


def check_array(a, name, shape, dtype, where):
    """Raises unless Array `a` has this shape, element type and device."""
    if a.where != where:
        raise ValueError(f"{name} is on {a.where}, expected {where}")
    if tuple(a.shape) != tuple(shape) or a.dtype != dtype:
        raise ValueError(f"{name} has shape {a.shape} of {a.dtype}, expected "
                         f"{tuple(shape)} of {dtype}")


def wrap(x, name):
    """An Array of `x` (numpy array, torch tensor, a CPU DLPack producer).
    It must be C-contiguous: the kernels address it row-major."""
    if isinstance(x, Array):
        return x
    if isinstance(x, np.ndarray):
        if x.dtype not in _NUMPY:
            raise TypeError(f"{name}: numpy dtype {x.dtype} is not supported "
                            f"(float16, float32, int32, int8, uint8, bool)")
        if not x.flags.c_contiguous:
            raise ValueError(f"{name}: the array must be C-contiguous")
        return Array(x, "cpu", x.ctypes.data, x.shape, _NUMPY[x.dtype])
    if is_torch(x):
        # Per call: a dict lookup of the dtype object (run() wraps several
        # tensors a call; the string spelling is made once per dtype).
        dt = _TORCH_DTYPES.get(x.dtype)
        if dt is None:
            s = str(x.dtype).replace("torch.", "")
            if s not in _TORCH_NAMES:
                raise TypeError(f"{name}: torch dtype {x.dtype} is not "
                                f"supported")
            dt = _TORCH_DTYPES[x.dtype] = _TORCH_NAMES[s]
        if not x.is_contiguous():
            raise ValueError(f"{name}: the tensor must be contiguous")
        device = x.device
        if device.type == "cuda":
            dev, where = "cuda", f"cuda:{device.index or 0}"
        elif device.type == "cpu":
            dev = where = "cpu"
        else:
            raise ValueError(f"{name}: device {device} is not supported")
        return Array(x, dev, x.data_ptr(), x.shape, dt, where)
    if getattr(x, "__cuda_array_interface__", None) is not None:
        raise NotImplementedError(
            f"{name}: CUDA arrays other than torch tensors are not supported "
            f"(the calls launch on torch's current stream); pass "
            f"torch.as_tensor(x, device='cuda')")
    if hasattr(x, "__dlpack__"):
        return wrap(np.from_dlpack(x), name)
    raise TypeError(f"{name}: expected a numpy array or a torch tensor, got "
                    f"{type(x).__name__}")


def empty(like, shape, dtype):
    """A new array of `shape` / `dtype` (manifest spelling) where `like`
    lives (numpy for numpy, torch on its device for torch)."""
    obj = like.obj if isinstance(like, Array) else like
    if is_torch(obj):
        import torch
        tdt = {"f16": torch.float16, "bf16": torch.bfloat16,
               "f32": torch.float32, "i32": torch.int32, "i8": torch.uint8,
               "i1": torch.bool}[dtype]
        return torch.empty(shape, dtype=tdt, device=obj.device)
    if isinstance(obj, np.ndarray) or (isinstance(like, Array)
                                       and like.device == "cpu"):
        return np.empty(shape, dtype=_NUMPY_OF[dtype])
    raise TypeError("outputs on CUDA need torch (pass out= to provide them)")


def host_i32(x, name):
    """A host int32 numpy copy of an index array (plan() arguments)."""
    if is_torch(x):
        x = x.detach().cpu().numpy()
    a = np.asarray(x)
    if a.dtype.kind not in "iu":
        raise TypeError(f"{name}: expected integers, got {a.dtype}")
    if a.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array, got shape {a.shape}")
    if a.size and (a.min() < -2**31 or a.max() >= 2**31):
        raise ValueError(f"{name}: values do not fit int32")
    # A copy: plan() checks these once, and what runs later must not see
    # the caller's later changes.
    return np.array(a, dtype=np.int32, copy=True)


def to_device_like(host, like):
    """`host` (numpy) where `like` lives: itself on the CPU, a torch tensor
    on `like`'s CUDA device."""
    obj = like.obj if isinstance(like, Array) else like
    if is_torch(obj):
        import torch
        return torch.from_numpy(np.ascontiguousarray(host)).to(obj.device)
    return np.ascontiguousarray(host)
