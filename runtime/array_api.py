"""What the Python array API standard (2024.12) asks of a namespace besides its functions:
the version, constants, data-type functions and `__array_namespace_info__`.

Dtypes are NumPy's (see dtypes.py); the default floating dtype is float32, the
default integer int64, and the devices are "cpu" and, with CuPy, "gpu".
"""
import math

import numpy as np

from .backends import gpu_available
from .dtypes import DEFAULT_FLOAT, DEFAULT_INT, as_dtype
from .ops import zeros, zeros_like
from .ops.creation import tensor
from .tensor import EagerTensor, Tensor

__array_api_version__ = "2024.12"

e, pi, inf, nan = math.e, math.pi, math.inf, math.nan
newaxis = None

_KINDS = {
    "bool": "b", "signed integer": "i", "unsigned integer": "u", "integral": "iu",
    "real floating": "f", "complex floating": "c", "numeric": "iufc",
}
_ALL = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "float32", "float64", "complex64", "complex128")


def _dtype_of(value):
    """The dtype of an array, or a dtype-like itself (np.float32, "float32", rt.float32)."""
    if isinstance(value, type) or isinstance(value, (str, np.dtype)):
        return as_dtype(value)
    return as_dtype(value.dtype)


def isdtype(dtype, kind):
    """Whether dtype is of `kind`: a dtype, a kind name ('real floating', ...) or a tuple of those."""
    dtype = as_dtype(dtype)
    if isinstance(kind, tuple):
        return any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise ValueError(f"isdtype: unknown kind {kind!r}; use one of {', '.join(map(repr, _KINDS))}")
        return dtype.kind in _KINDS[kind]
    return dtype == as_dtype(kind)


def result_type(*arrays_and_dtypes):
    """The dtype of an operation over these arrays/dtypes/Python scalars (NumPy 2 promotion)."""
    args = []
    for a in arrays_and_dtypes:
        if isinstance(a, (bool, int, float, complex)):
            args.append(a)
        else:
            args.append(_dtype_of(a))
    if not any(isinstance(a, np.dtype) for a in args):
        raise TypeError("result_type: needs at least one array or dtype")
    return np.result_type(*args)


def can_cast(from_, to, /):
    """Whether a value of dtype `from_` casts to `to` without losing information (safe casting)."""
    return bool(np.can_cast(_dtype_of(from_), as_dtype(to), casting="safe"))


class _NamespaceInfo:
    """`rt.__array_namespace_info__()`: the devices and dtypes this namespace offers."""

    def capabilities(self):
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self):
        return "cpu"

    def devices(self):
        return ["cpu", "gpu"] if gpu_available() else ["cpu"]

    def default_dtypes(self, *, device=None):
        return {"real floating": DEFAULT_FLOAT, "complex floating": np.dtype(np.complex64),
                "integral": DEFAULT_INT, "indexing": np.dtype(np.int64)}

    def dtypes(self, *, device=None, kind=None):
        chosen = [np.dtype(d) for d in _ALL]
        if kind is not None:
            chosen = [d for d in chosen if isdtype(d, kind)]
        return {d.name: d for d in chosen}


def __array_namespace_info__():
    return _NamespaceInfo()


def empty(shape, dtype=None, device=None):
    """A new array of `shape` (zero-filled: never uninitialized memory that could leak into results)."""
    return zeros(shape, dtype=dtype, device=device)


def empty_like(x, /, *, dtype=None, device=None):
    return zeros_like(x, dtype=dtype, device=device)


def from_dlpack(x, /, *, device=None, copy=None):
    """An eager Tensor sharing (or copying) the memory of any DLPack-capable array."""
    if isinstance(x, EagerTensor):
        return x if device is None else x.to(device)
    target = device or ("gpu" if hasattr(x, "__cuda_array_interface__") else "cpu")
    if target == "cpu":
        return tensor(np.from_dlpack(x), device="cpu")
    import cupy
    return tensor(cupy.from_dlpack(x), device="gpu")
