"""`convert_call`: a user function reached from converted code runs converted, a builtin runs as our
overload of it (registered here by the modules that define them, with `overload`); PyTorch's in-place
methods on a local name."""
import builtins
import types

import numpy as np

import runtime as rt
from runtime import tracing
from runtime.tracer import Tracer
from runtime.torch_methods import in_place_value

from .base import _symbolic

_OVERLOADS = {}     # a builtin -> what converted code calls in its place: see `overload`


def overload(*builtin_fns):
    """Make the decorated function what converted code calls for these builtins, also where one is reached
    through a variable (`fn = range; fn(n)`): `convert_call`. The modules of the overloads register them;
    the package imports them all."""
    def register(fn):
        _OVERLOADS.update(dict.fromkeys(builtin_fns, fn))
        return fn
    return register


@overload(builtins.map)
def convert_map(fn, *iterables):
    """map() calls fn as converted code would: a user function given to it is converted too."""
    return builtins.map(convert_call(fn), *iterables)


def _holds_traced(data):
    return isinstance(data, Tracer) or isinstance(data, (list, tuple)) and builtins.any(map(_holds_traced, data))


def _numpy_array_overload(numpy_fn):
    """`np.asarray(v)`, `np.array(v)` in converted code: of a traced value (or a list holding one) the
    value itself, cast by `dtype=` (what `.numpy()` is inside a trace: a NumPy array cannot hold a value
    that exists only when the Program runs); of anything else NumPy's own array."""
    def convert(data, dtype=None, *args, ndmin=0, **kwargs):
        if not _holds_traced(data):
            return numpy_fn(data, dtype, *args, **({"ndmin": ndmin} if ndmin else {}), **kwargs)
        out = rt.asarray(data, dtype)
        while out.ndim < ndmin:
            out = rt.expand_dims(out, 0)
        return out
    convert.__name__ = f"convert_{numpy_fn.__name__}"
    return convert


def convert_call(fn):
    """The converted form of fn when it is user code, our overload of a builtin reached through a
    variable (`fn = range; fn(n)`), fn itself otherwise."""
    if isinstance(fn, (types.BuiltinFunctionType, type)):
        return _OVERLOADS.get(fn, fn)
    return tracing.convert_callable(fn)       # static_function's converted_callable: it sits above this module


for _numpy_fn in (np.asarray, np.array, np.asanyarray, np.ascontiguousarray):
    overload(_numpy_fn)(_numpy_array_overload(_numpy_fn))


def convert_in_place(x, method, *args, **kwargs):
    """PyTorch's in-place method on a local name (`x.add_(y)`, `x.masked_fill_(m, v)`, `x.zero_()`): a traced
    value, which has no place to write to, is rebound to the value the method would leave in it (its dtype
    and shape); anything else runs the method itself (an eager Tensor is written in place) and stays bound."""
    if _symbolic(x):
        return in_place_value(x, method, args, kwargs)
    getattr(x, method)(*args, **kwargs)
    return x
