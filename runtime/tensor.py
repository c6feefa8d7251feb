"""Eager Tensor: an array on a backend, with NumPy's operators and methods.

Eager calls go straight through the op registry's kernels, so eager and static
results agree by construction. A Tensor is deliberately thin: `data` (the
backend's array) and `backend`; everything else is derived.
"""
import numpy as np

from . import tracing
from .array_methods import ArrayMethods
from .backends import get_backend
from .ir import Variable


class Tensor(ArrayMethods):
    __slots__ = ("data", "backend", "__weakref__")
    __array_priority__ = 1000

    def __init__(self, data, backend):
        self.data = data
        self.backend = backend

    # --- facts -------------------------------------------------------------
    @property
    def shape(self):
        return tuple(self.data.shape)

    @property
    def dtype(self):
        return self.data.dtype

    @property
    def ndim(self):
        return self.data.ndim

    @property
    def size(self):
        return int(self.data.size)

    @property
    def device(self):
        return self.backend.name

    # --- conversion --------------------------------------------------------
    def numpy(self):
        return np.asarray(self.backend.to_numpy(self.data))

    def __array__(self, dtype=None, copy=None):
        out = self.numpy()
        return out if dtype is None else out.astype(dtype, copy=False)

    def item(self):
        return self.numpy().item()

    def tolist(self):
        return self.numpy().tolist()

    def to(self, device):
        backend = get_backend(device)
        if backend is self.backend:
            return self
        return Tensor(backend.asarray(self.backend.to_numpy(self.data)), backend)

    def cpu(self):
        return self.to("cpu")

    def gpu(self):
        return self.to("gpu")

    def __bool__(self):
        return bool(self.numpy())

    def __float__(self):
        return float(self.numpy())

    def __int__(self):
        return int(self.numpy())

    def __index__(self):
        return self.numpy().__index__()

    def __complex__(self):
        return complex(self.numpy())

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.data.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        for i in range(self.data.shape[0]):
            yield Tensor(self.data[i], self.backend)

    def __hash__(self):
        return id(self)

    def __setitem__(self, index, value):
        from . import tracing
        from .ops import setitem
        if tracing.current_block() is not None:
            raise TypeError(
                "cannot assign into an eager Tensor inside traced code: the change would not be part of "
                "the Program; make a new value instead: y = rt.setitem(x, index, value)")
        self.data = setitem(self, index, value).data

    def __repr__(self):
        body = np.array2string(self.numpy(), separator=", ", prefix="tensor(")
        dev = "" if self.backend.name == "cpu" else f", device='{self.backend.name}'"
        return f"tensor({body}, dtype={self.dtype.name}{dev})"

    __str__ = __repr__

    def __format__(self, spec):
        if self.ndim == 0:
            return format(self.item(), spec)
        return format(str(self), spec)


class Parameter(Tensor):
    """A Tensor owned by a Layer: a persistable input of every Program that uses it."""

    __slots__ = ()


def tensor(data, dtype=None, device="cpu"):
    """Make an eager Tensor from a Python/NumPy/CuPy value (float64 data stays float64).

    On a traced Variable (or a list/tuple holding one) it is what NumPy's asarray is on an
    array: the value itself, a cast with `dtype=`, or the rows stacked.
    """
    if _holds_variable(data):
        from .ops.creation import symbolic_asarray
        return symbolic_asarray(data, dtype)
    backend = get_backend(device)
    constant = bool(tracing._blocks) and _python_data(data)     # made inside a trace from constants (known.py)
    if isinstance(data, Tensor):
        data = data.data if data.backend is backend else data.backend.to_numpy(data.data)
    elif type(data) is float and dtype is None:     # a Python float; np.float64 (a float subclass) stays float64
        dtype = np.float32
    elif isinstance(data, (list, tuple)) and dtype is None:
        probe = np.asarray(data)
        if probe.dtype == np.float64 and not _has_numpy_float64(data):
            dtype = np.float32
    arr = backend.asarray(data, dtype=dtype)
    out = Tensor(arr, backend)
    if constant:
        from .known import note_trace_constant
        note_trace_constant(out)
    return out


def _python_data(data, top=True):
    """Whether data is Python/NumPy values whose copy the new Tensor holds: no tensor, and not an
    array at the top (the Tensor may share its memory, so an in-place update would show through)."""
    if isinstance(data, (bool, int, float, complex, np.generic)):
        return True
    if isinstance(data, np.ndarray):
        return not top and data.dtype != object
    if isinstance(data, (list, tuple)):
        return all(_python_data(d, top=False) for d in data)
    return False


def _has_numpy_float64(seq):
    for item in seq:
        if isinstance(item, (list, tuple)):
            if _has_numpy_float64(item):
                return True
        elif isinstance(item, (np.ndarray, np.float64, Tensor)) and getattr(item, "dtype", None) == np.float64:
            return True
    return False


def _holds_variable(data):
    if isinstance(data, Variable):
        return True
    return isinstance(data, (list, tuple)) and any(_holds_variable(item) for item in data)


asarray = tensor
