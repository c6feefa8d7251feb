"""Operators and NumPy-style methods shared by eager Tensors and traced values (runtime.tracer).

Every method forwards to the array namespace, so an op's semantics live only in
the op registry; `_ns` is bound by `runtime.ops` once all ops are defined.
Tensor and Variable sit below the ops, so they reach them only through `_ns`.
"""
import sys

import numpy as np

from .shape_text import shape_text
from . import torch_methods
from .torch_methods import TorchMethods

_ns = None


def bind_namespace(namespace):
    global _ns
    _ns = namespace
    torch_methods.bind_namespace(namespace)


def namespace():
    """The array namespace (`runtime.ops`), for Tensor/Variable methods that call an op."""
    return _ns


class ElementCount(int):
    """`x.size`: the number of elements, an int (NumPy's meaning). Called, it is PyTorch's `x.size()`
    (the shape) and `x.size(dim)` (one dim), so both spellings work."""

    def __new__(cls, n, shape=()):
        out = super().__new__(cls, n)
        out.shape = tuple(shape)
        return out

    def __call__(self, dim=None):
        if dim is None:
            return self.shape
        if not -max(len(self.shape), 1) <= dim < max(len(self.shape), 1):
            raise IndexError(f"size({dim}): dimension out of range for a tensor of rank {len(self.shape)}")
        return self.shape[dim]

    def __repr__(self):
        return int.__repr__(self)


_CALLABLE_SIZES = {}


def callable_size(count, shape):
    """A traced element count (a dynamic shape's product) that is also PyTorch's `x.size()` / `x.size(d)`:
    the same value, given a subclass of its own class whose call reads `shape`."""
    cls = type(count)
    sized = _CALLABLE_SIZES.get(cls)
    if sized is None:
        sized = _CALLABLE_SIZES[cls] = type(cls.__name__, (cls,), {"__call__": _size_call, "__module__": cls.__module__})
    count.__class__ = sized
    count.size_shape = tuple(shape)
    return count


def _size_call(self, dim=None):
    return self.size_shape if dim is None else self.size_shape[dim]


class ArrayMethods(TorchMethods):
    """NumPy's operators and methods; PyTorch's names and keywords come from `TorchMethods`."""

    __slots__ = ()

    # gradients (runtime.autodiff; `backward` is attached by runtime.autodiff.backward) ---------
    def detach(self):
        """The same value, with no gradient flowing back through it."""
        return _ns.stop_gradient(self)

    @property
    def data(self):
        """PyTorch's `x.data` of a traced value: the value with no gradient flowing back through it."""
        return self.detach()

    @data.setter
    def data(self, value):
        raise TypeError("x.data = v (or an in-place method on x.data) on a traced value, which is a value, not a "
                        "place: write x = v; a captured Tensor (a Parameter, a buffer) can be written so")

    # arithmetic -----------------------------------------------------------
    def __add__(self, other): return _ns.add(self, other)
    def __radd__(self, other): return _ns.add(other, self)
    def __sub__(self, other): return _ns.subtract(self, other)
    def __rsub__(self, other): return _ns.subtract(other, self)
    def __mul__(self, other): return _ns.multiply(self, other)
    def __rmul__(self, other): return _ns.multiply(other, self)
    def __truediv__(self, other): return _ns.divide(self, other)
    def __rtruediv__(self, other): return _ns.divide(other, self)
    def __floordiv__(self, other): return _ns.floor_divide(self, other)
    def __rfloordiv__(self, other): return _ns.floor_divide(other, self)
    def __mod__(self, other): return _ns.remainder(self, other)
    def __rmod__(self, other): return _ns.remainder(other, self)
    def __pow__(self, other): return _ns.pow(self, other)
    def __rpow__(self, other): return _ns.pow(other, self)
    def __matmul__(self, other): return _ns.matmul(self, other)
    def __rmatmul__(self, other): return _ns.matmul(other, self)
    def __neg__(self): return _ns.negative(self)
    def __pos__(self): return self
    def __abs__(self): return _ns.abs(self)
    def __invert__(self): return _ns.bitwise_invert(self)
    def __and__(self, other): return _ns.bitwise_and(self, other)
    def __rand__(self, other): return _ns.bitwise_and(other, self)
    def __or__(self, other): return _ns.bitwise_or(self, other)
    def __ror__(self, other): return _ns.bitwise_or(other, self)
    def __xor__(self, other): return _ns.bitwise_xor(self, other)
    def __rxor__(self, other): return _ns.bitwise_xor(other, self)
    def __lshift__(self, other): return _ns.bitwise_left_shift(self, other)
    def __rlshift__(self, other): return _ns.bitwise_left_shift(other, self)
    def __rshift__(self, other): return _ns.bitwise_right_shift(self, other)
    def __rrshift__(self, other): return _ns.bitwise_right_shift(other, self)

    # augmented assignment: NumPy's in-place dtype and shape rules; the name is rebound, never written
    def __iadd__(self, other): return _augmented("add", self, other)
    def __isub__(self, other): return _augmented("subtract", self, other)
    def __imul__(self, other): return _augmented("multiply", self, other)
    def __itruediv__(self, other): return _augmented("divide", self, other)
    def __ifloordiv__(self, other): return _augmented("floor_divide", self, other)
    def __imod__(self, other): return _augmented("remainder", self, other)
    def __ipow__(self, other): return _augmented("pow", self, other)
    def __imatmul__(self, other): return _augmented("matmul", self, other)
    def __iand__(self, other): return _augmented("bitwise_and", self, other)
    def __ior__(self, other): return _augmented("bitwise_or", self, other)
    def __ixor__(self, other): return _augmented("bitwise_xor", self, other)
    def __ilshift__(self, other): return _augmented("bitwise_left_shift", self, other)
    def __irshift__(self, other): return _augmented("bitwise_right_shift", self, other)

    # comparisons ----------------------------------------------------------
    def __eq__(self, other): return _ns.equal(self, other)
    def __ne__(self, other): return _ns.not_equal(self, other)
    def __lt__(self, other): return _ns.less(self, other)
    def __le__(self, other): return _ns.less_equal(self, other)
    def __gt__(self, other): return _ns.greater(self, other)
    def __ge__(self, other): return _ns.greater_equal(self, other)

    # indexing -------------------------------------------------------------
    def __getitem__(self, index): return _ns.getitem(self, index)

    # methods (reductions, shapes and the rest with PyTorch's names too: torch_methods.py) ---------
    def astype(self, dtype): return _ns.astype(self, dtype)

    @property
    def T(self): return _ns.permute_dims(self, None)

    @property
    def mT(self): return _ns.matrix_transpose(self)

    def __array_namespace__(self, *, api_version=None):
        """The array API's entry point: `x.__array_namespace__()` is `runtime` itself."""
        if api_version not in (None, "2021.12", "2022.12", "2023.12", "2024.12"):
            raise ValueError(f"unsupported array API version {api_version!r}; runtime implements 2024.12")
        return sys.modules[__package__]     # `runtime`: the package holding this module, always loaded first

    @property
    def size(self):
        n = 1
        for d in self.shape:
            n = n * d
        return ElementCount(n, self.shape) if isinstance(n, int) else callable_size(n, self.shape)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """NumPy ufuncs applied to us map onto the op of the same name."""
        return _ns.dispatch_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return _ns.dispatch_array_function(func, types, args, kwargs)


OPERATORS = tuple(f"__{name}__" for name in (
    "add radd sub rsub mul rmul truediv rtruediv floordiv rfloordiv mod rmod pow rpow neg pos abs invert "
    "and rand or ror xor rxor lshift rlshift rshift rrshift iadd isub imul itruediv ifloordiv imod ipow "
    "iand ior ixor ilshift irshift").split())
def _augmented(name, x, y):
    """`x op= y` as NumPy computes it into x: the result keeps x's dtype when NumPy's 'same_kind'
    casting allows it (float32 x += int32 i stays float32) and x's shape, else NumPy's error.
    A weak x (a Python number turned symbolic) has no dtype of its own: Python rebinds it."""
    out = getattr(_ns, name)(x, y)
    if getattr(x, "weak", False):
        return out
    if out.dtype != x.dtype:
        if not np.can_cast(out.dtype, x.dtype, casting="same_kind"):
            ufunc = getattr(_ns.REGISTRY[name], "ufunc", name)
            raise TypeError(f"Cannot cast ufunc '{ufunc}' output from dtype('{out.dtype.name}') to "
                            f"dtype('{x.dtype.name}') with casting rule 'same_kind'")
        out = _ns.astype(out, x.dtype)
    x_shape, out_shape = _static_shape(x), _static_shape(out)
    if len(x_shape) != len(out_shape) or any(a != b and -1 not in (a, b) for a, b in zip(x_shape, out_shape)):
        raise ValueError(f"non-broadcastable output operand with shape {shape_text(x_shape)} doesn't match the "
                         f"broadcast shape {shape_text(out_shape)}")
    return out


def _static_shape(x):
    return x.static_shape if hasattr(x, "static_shape") else tuple(x.shape)

