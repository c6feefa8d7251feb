"""Reductions over axes, with NumPy's result dtypes (asked of NumPy itself)."""
import math

import numpy as np

from ..ir import Variable
from .dispatch import apply
from .registry import OpDef, register
from .rules import Spec, norm_axes, reduction, shape_of


def _numpy_result(fn):
    """dtype rule: what NumPy's reduction returns for a one-element array of that dtype."""
    cache = {}

    def rule(dtype):
        if dtype not in cache:
            cache[dtype] = getattr(np, fn)(np.ones((1,), dtype)).dtype
        return cache[dtype]
    return rule


REDUCTIONS = ("sum", "mean", "prod", "max", "min", "any", "all", "std", "var")
_EXTRA = {"sum": "dtype", "prod": "dtype", "std": "correction", "var": "correction"}   # the array API's extras


def _reduction_infer(name):
    base = reduction(_numpy_result(name))

    def infer(x, axis=None, keepdims=False, dtype=None, correction=0.0):
        spec = base(x, axis, keepdims)
        return spec if dtype is None else Spec(spec.shape, np.dtype(dtype))
    return infer


_FEW = 4      # a reduced axis of at most this many is one binary ufunc call per element instead


def _reduce_with(ufunc):
    """Plan code on NumPy: a float reduction is `ufunc.reduce` (what np.sum calls, less its Python layers).

    Over one short static axis (a box's corners, (300, 2) -> (300,)) it is the ufunc applied to the
    axis's slices, first to last: the order `reduce` takes for every ufunc but add (whose pairwise
    sum starts from 0.0), and ~8x cheaper than reducing 300 runs of 2."""
    def emit(gen, op):
        x = op.inputs[0]
        if not gen.numpy or not isinstance(x, Variable) or x.dtype.kind != "f" or set(op.attrs) - {"axis", "keepdims"}:
            return None
        axis, keepdims = op.attrs.get("axis"), op.attrs.get("keepdims", False)
        if ufunc != "add" and not keepdims and isinstance(axis, int) and x.ndim >= 2 and -x.ndim <= axis < x.ndim:
            lead = ":, " * (axis % x.ndim)
            size = x.static_shape[axis]
            if 2 <= size <= _FEW:
                fn, name = gen.bound(ufunc), gen.value(x)
                value = f"{name}[{lead}0]"
                for i in range(1, size):
                    value = f"{fn}({value}, {name}[{lead}{i}])"
                return value
        tail = ", None, None, True" if keepdims else ""
        return f"{gen.bound(ufunc + '.reduce')}({gen.value(x)}, {gen.attr(axis)}{tail})"
    return emit


def _emit_mean(gen, op):
    """Plan code on NumPy: the mean of a whole static float array is `add.reduce(x) / n` (what np.mean computes)."""
    x = op.inputs[0]
    if (not gen.numpy or not isinstance(x, Variable) or x.dtype.name not in ("float32", "float64")
            or op.attrs.get("axis") is not None or op.attrs.get("keepdims") or -1 in x.static_shape):
        return None
    n = math.prod(x.static_shape)
    if not 0 < n <= (1 << 24):
        return None
    return f"{gen.bound('add.reduce')}({gen.value(x)}, None) / {n}"


def _as_method(name):
    """Plan code for a reduction of a boolean array: the array's method (the kernel's call, less its frame)."""
    def emit(gen, op):
        x = op.inputs[0]
        if not gen.is_array(x) or x.dtype.kind != "b" or set(op.attrs) - {"axis", "keepdims"}:
            return None
        axis, keepdims = op.attrs.get("axis"), bool(op.attrs.get("keepdims", False))
        args = "" if axis is None and not keepdims else f"axis={gen.attr(axis)}, keepdims={keepdims}"
        return f"{gen.value(x)}.{name}({args})"
    return emit


_EMIT = {"sum": _reduce_with("add"), "prod": _reduce_with("multiply"), "max": _reduce_with("maximum"),
         "min": _reduce_with("minimum"), "mean": _emit_mean, "any": _as_method("any"), "all": _as_method("all")}
_NEED_NONEMPTY = ("max", "min")     # no identity: an empty input raises

_OPS = {}
for _name in REDUCTIONS:      # kernels bind their method's name by a default (what export copies)
    # the array's method, not xp.<fn>(x): the function form costs 1-2 µs of dispatch per call
    if _EXTRA.get(_name) == "dtype":
        def _dtype_kernel(xp, x, axis=None, keepdims=False, dtype=None, _fn=_name):
            return getattr(xp.asarray(x), _fn)(axis=axis, keepdims=keepdims, dtype=dtype)
        _kernel = _dtype_kernel
    elif _EXTRA.get(_name) == "correction":
        def _correction_kernel(xp, x, axis=None, keepdims=False, correction=0.0, _fn=_name):
            return getattr(xp.asarray(x), _fn)(axis=axis, keepdims=keepdims, ddof=correction)   # NumPy's ddof
        _kernel = _correction_kernel
    else:
        def _kernel(xp, x, axis=None, keepdims=False, _fn=_name):
            return getattr(xp.asarray(x), _fn)(axis=axis, keepdims=keepdims)
    _OPS[_name] = register(OpDef(_name, _kernel, _reduction_infer(_name), copies=True, emit=_EMIT.get(_name),
                                 safe_when_static=_name not in ("std", "var"), needs_nonempty=_name in _NEED_NONEMPTY))


def _axis_attr(axis):
    if axis is None:
        return None
    if isinstance(axis, (list, tuple)):
        return tuple(int(a) for a in axis)
    return int(axis)


def _make(name):
    def fn(x, axis=None, keepdims=False):
        return apply(_OPS[name], (x,), {"axis": _axis_attr(axis), "keepdims": bool(keepdims)})

    def with_dtype(x, /, axis=None, *, dtype=None, keepdims=False):
        attrs = {"axis": _axis_attr(axis), "keepdims": bool(keepdims)}
        if dtype is not None:
            attrs["dtype"] = np.dtype(dtype).name
        return apply(_OPS[name], (x,), attrs)

    def with_correction(x, /, axis=None, *, correction=0.0, keepdims=False):
        attrs = {"axis": _axis_attr(axis), "keepdims": bool(keepdims)}
        if correction:
            attrs["correction"] = float(correction)
        return apply(_OPS[name], (x,), attrs)

    chosen = {"dtype": with_dtype, "correction": with_correction}.get(_EXTRA.get(name), fn)
    chosen.__name__ = chosen.__qualname__ = name
    chosen.__doc__ = f"`{name}` over `axis` (None = all), NumPy semantics."
    return chosen


REDUCTION_FUNCTIONS = {name: _make(name) for name in REDUCTIONS}


def _arg_infer(x, axis=None, keepdims=False):
    spec = reduction()(x, axis, keepdims)
    return Spec(spec.shape if axis is not None or keepdims else (), np.dtype(np.int64))


def _argmax_kernel(xp, x, axis=None, keepdims=False):
    return xp.asarray(x).argmax(axis=axis, keepdims=keepdims)     # the method: no function dispatch


def _argmin_kernel(xp, x, axis=None, keepdims=False):
    return xp.asarray(x).argmin(axis=axis, keepdims=keepdims)


_argmax = register(OpDef("argmax", _argmax_kernel, _arg_infer, copies=True, safe_when_static=True, needs_nonempty=True))
_argmin = register(OpDef("argmin", _argmin_kernel, _arg_infer, copies=True, safe_when_static=True, needs_nonempty=True))


def argmax(x, axis=None, keepdims=False):
    return apply(_argmax, (x,), {"axis": None if axis is None else int(axis), "keepdims": bool(keepdims)})


def argmin(x, axis=None, keepdims=False):
    return apply(_argmin, (x,), {"axis": None if axis is None else int(axis), "keepdims": bool(keepdims)})


def _cumsum_infer(x, axis=None):
    shape = shape_of(x)
    if axis is None:
        n = -1 if -1 in shape else int(np.prod(shape))
        shape = (n,)
    else:
        norm_axes(axis, len(shape))
    return Spec(tuple(shape), np.cumsum(np.ones((1,), x.dtype)).dtype)


_cumsum = register(OpDef("cumsum", lambda xp, x, axis=None: xp.cumsum(x, axis=axis), _cumsum_infer, copies=True))


def cumsum(x, axis=None):
    return apply(_cumsum, (x,), {"axis": None if axis is None else int(axis)})
