"""The array namespace's functions, all backed by the op registry.

Note: this module defines `sum`, `any`, `all`, `max`, `min`, `abs`, `round`: use `builtins.` for Python's.
"""
import builtins

import numpy as np

from .. import array_methods
from ..tensor import Tensor
from ..tracer import Tracer
from .registry import REGISTRY, OpDef, defop, get_op, register
from .dispatch import apply
from . import creation, elementwise, reduction, linalg, manipulation, indexing, tensor_array, control
from . import scan as _scan_op  # noqa: F401  (registers the scan region op; rt.scan is runtime/scan_loop.py)
from . import nn_ops  # noqa: F401  (registers the ops behind runtime.nn.functional)
from . import activations, decompositions, numpy_functions, rearrange, selection, sorting, spectral
from . import onnx_lowerings  # noqa: F401  (attaches each op's `onnx` facet)
from . import native_forms  # noqa: F401  (attaches the `native` facets the native tier's regions read)
from .creation import arange, eye, full, full_like, linspace, ones, ones_like, zeros, zeros_like
from .elementwise import astype, clip, where
from .reduction import argmax, argmin, cumsum
from .linalg import einsum, matmul, tensordot, vecdot
from .activations import ACTIVATION_FUNCTIONS
from .rearrange import REARRANGE_FUNCTIONS
from .selection import SELECTION_FUNCTIONS
from .sorting import SORTING_FUNCTIONS
from .random import RANDOM_FUNCTIONS
from .elementwise import imag, real
from .manipulation import (broadcast_to, concat, dim, expand_dims, flip, permute_dims, reshape, shape,
                           squeeze, stack)
from .indexing import getitem, setitem
from .tensor_array import (array_append, array_from_list, array_concat, array_extend, array_insert, array_join,
                           array_length, array_new, array_pop, array_read, array_slice, array_stack)
from .control import assert_, print_, raise_, undefined_value

globals().update(elementwise.UNARY_FUNCTIONS)
globals().update(elementwise.BINARY_FUNCTIONS)
globals().update(reduction.REDUCTION_FUNCTIONS)
globals().update(ACTIVATION_FUNCTIONS)
globals().update(REARRANGE_FUNCTIONS)
globals().update(SELECTION_FUNCTIONS)
globals().update(SORTING_FUNCTIONS)
globals().update(RANDOM_FUNCTIONS)

FUNCTIONS = {
    **elementwise.UNARY_FUNCTIONS, **elementwise.BINARY_FUNCTIONS, **reduction.REDUCTION_FUNCTIONS,
    **{f.__name__: f for f in (
        arange, eye, full, full_like, linspace, ones, ones_like, zeros, zeros_like, astype, clip, where,
        argmax, argmin, cumsum, matmul, broadcast_to, concat, dim, expand_dims, flip, permute_dims, reshape,
        shape, squeeze, stack, getitem, setitem, einsum, tensordot, vecdot, real, imag)},
    **ACTIVATION_FUNCTIONS, **REARRANGE_FUNCTIONS, **SELECTION_FUNCTIONS, **SORTING_FUNCTIONS, **RANDOM_FUNCTIONS,
}

# NumPy names that differ from the array-API names we use
_NUMPY_ALIASES = {
    "absolute": "abs", "power": "pow", "true_divide": "divide", "mod": "remainder", "arcsin": "asin",
    "arccos": "acos", "arctan": "atan", "arctan2": "atan2", "arcsinh": "asinh", "arccosh": "acosh",
    "arctanh": "atanh", "rint": "round", "invert": "bitwise_invert", "left_shift": "bitwise_left_shift",
    "right_shift": "bitwise_right_shift", "concatenate": "concat", "transpose": "permute_dims",
    "amax": "max", "amin": "min", "around": "round",
}
NUMPY_NAMES = {alias: FUNCTIONS[name] for alias, name in _NUMPY_ALIASES.items()}   # rt.power, rt.concatenate...
globals().update(NUMPY_NAMES)


def runtime_name(numpy_name):
    name = _NUMPY_ALIASES.get(numpy_name, numpy_name)
    return name if name in FUNCTIONS else None


def dispatch_ufunc(ufunc, method, inputs, kwargs):
    """`np.tanh(x)` on a Tensor/Variable runs our op of that name; other ufunc uses
    (no such op, `out=`, `.reduce`, ...) run NumPy itself on eager Tensors, and are a
    clear TypeError on Variables."""
    name = runtime_name(ufunc.__name__)
    if method == "__call__" and not kwargs and name is not None:
        return FUNCTIONS[name](*inputs)
    if method == "__call__" and not kwargs and ufunc in NUMPY_FUNCTIONS:      # np.heaviside: written with ours
        return NUMPY_FUNCTIONS[ufunc](*inputs)
    out = kwargs.get("out") or ()
    if builtins.any(isinstance(a, Tracer) for a in (*inputs, *out)):
        what = f"numpy.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
        return _numpy_error(what + (" with " + ", ".join(f"{k}=" for k in kwargs) if kwargs else ""), name)
    if builtins.any(isinstance(a, Tensor) for a in out):
        raise TypeError(f"numpy.{ufunc.__name__}: out= cannot be a Tensor; use the result, "
                        "or pass a NumPy array as out")
    unwrapped = [a.numpy() if isinstance(a, Tensor) else a for a in inputs]
    return getattr(ufunc, method)(*unwrapped, **kwargs)


def dispatch_array_function(func, types, args, kwargs):
    """Other NumPy functions: ours with NumPy's signature (`numpy_functions`), else our op of that
    name; on eager Tensors the same, falling back to NumPy itself where ours refuses the call."""
    ours = NUMPY_FUNCTIONS.get(func)
    if ours is None and func.__module__ == "numpy":
        name = runtime_name(func.__name__)
        ours = FUNCTIONS[name] if name is not None else None
    symbolic = builtins.any(issubclass(t, Tracer) for t in types)
    if symbolic:
        if ours is None:
            return _numpy_error(f"{func.__module__}.{func.__name__}", None)
        return ours(*args, **kwargs)
    if ours is not None:
        try:
            return ours(*args, **kwargs)
        except (TypeError, ValueError, IndexError):
            pass        # a call ours does not take (np.cross of 2-vectors): NumPy's answer, or its own error
    unwrapped = [a.numpy() if isinstance(a, Tensor) else a for a in args]
    return func(*unwrapped, **kwargs)


def _numpy_error(what, name):
    hint = f"use rt.{name}" if name else "use the runtime (`import runtime as rt`) function of the same job"
    raise TypeError(f"{what} cannot run on a traced Variable (it has no value while tracing): {hint}")


from .stop import stop_gradient  # noqa: E402  (an op whose only job is to stop gradients)
FUNCTIONS["stop_gradient"] = stop_gradient

array_methods.bind_namespace(__import__(__name__, fromlist=["FUNCTIONS"]))
NUMPY_FUNCTIONS = numpy_functions.table(array_methods.namespace())   # np.vstack, np.fft.fftshift, ... on ours
del np
