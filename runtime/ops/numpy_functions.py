"""NumPy's functions on our tensors: `np.vstack(x)`, `np.fft.fftshift(x)`, `np.linalg.norm(x)`.

`__array_function__` hands a NumPy function and its arguments to `dispatch_array_function`
(runtime/ops/__init__), which finds here our implementation with NumPy's signature and
meaning, written with our ops: a traced value records them, an eager Tensor runs them (the
same kernels), so eager and static agree. Functions whose NumPy name is ours (`np.sum`,
`np.fft.fft`, `np.linalg.inv`) take NumPy's parameter names (`table`); others are written
out below. A NumPy function with neither stays a TypeError on a traced value.
"""
import inspect

import numpy as np

from ..tensor import EagerTensor
from ..tracer import Tracer
from . import decompositions, linalg, spectral
from .creation import asarray

_ns = None      # the array namespace (runtime.ops), bound by `table`


def table(namespace):
    """{NumPy function: our implementation}: the ones written here, then NumPy's `numpy.fft` and
    `numpy.linalg` functions whose names are ours, taking NumPy's parameters."""
    global _ns
    _ns = namespace
    found = {}
    for module, ours in ((np.fft, spectral), (np.linalg, decompositions), (np.linalg, linalg)):
        for name in dir(ours):
            theirs, fn = getattr(module, name, None), getattr(ours, name)
            if callable(theirs) and callable(fn) and not name.startswith("_") and \
                    getattr(fn, "__module__", "").startswith("runtime.ops"):
                found[theirs] = with_numpy_parameters(fn, theirs)
    found.update({getattr(np, name): fn for name, fn in _WRITTEN.items() if hasattr(np, name)})
    found[np.linalg.norm] = norm
    return found


def with_numpy_parameters(ours, theirs):
    """`ours` (array API: leading positional-only, then keywords) called with `theirs`'s (NumPy's)
    parameters: the leading ones by position, the rest by name; one left at NumPy's default is not
    passed, so ours applies its own (`norm=None` is NumPy's spelling of "backward")."""
    try:
        signature = inspect.signature(theirs)
    except (TypeError, ValueError):
        return ours
    leading = sum(p.kind is p.POSITIONAL_ONLY for p in inspect.signature(ours).parameters.values())
    names = list(signature.parameters)

    def call(*args, **kwargs):
        given = signature.bind(*args, **kwargs).arguments
        positional = [given.pop(name) for name in names[:leading] if name in given]
        keywords = {name: value for name, value in given.items()
                    if not _is_default(value, signature.parameters[name].default)}
        return ours(*positional, **keywords)
    call.__name__ = ours.__name__
    call.__doc__ = ours.__doc__
    return call


def _is_default(value, default):
    return value is default or type(value) in (bool, int, float, str, type(None)) and \
        type(value) is type(default) and value == default


def _array(a):
    """An argument as a tensor: a NumPy array or nested list of numbers among the arguments is a
    constant of NumPy's dtype (`weights=[1.0, 2.0]` is float64, as NumPy reads it)."""
    if isinstance(a, (Tracer, EagerTensor)):
        return a
    if isinstance(a, (list, tuple, np.ndarray)) and not _holds_tensor(a):
        return asarray(np.asarray(a))
    return asarray(a)


def _holds_tensor(value):
    if isinstance(value, (Tracer, EagerTensor)):
        return True
    return isinstance(value, (list, tuple)) and any(_holds_tensor(v) for v in value)


def _flat(a):
    return _ns.reshape(_array(a), (-1,))


def _axis(axis, ndim):
    return axis + ndim if axis < 0 else axis


# --- shapes and joins -------------------------------------------------------------------------------

def atleast_1d(*arys):
    out = [a if _array(a).ndim >= 1 else _ns.reshape(a, (1,)) for a in map(_array, arys)]
    return out[0] if len(out) == 1 else tuple(out)


def atleast_2d(*arys):
    out = []
    for a in map(_array, arys):
        out.append(a if a.ndim >= 2 else _ns.reshape(a, (1, -1) if a.ndim == 1 else (1, 1)))
    return out[0] if len(out) == 1 else tuple(out)


def atleast_3d(*arys):
    out = []
    for a in map(_array, arys):
        if a.ndim == 0:
            a = _ns.reshape(a, (1, 1, 1))
        elif a.ndim == 1:
            a = _ns.expand_dims(_ns.expand_dims(a, 0), 2)
        elif a.ndim == 2:
            a = _ns.expand_dims(a, 2)
        out.append(a)
    return out[0] if len(out) == 1 else tuple(out)


def vstack(tup, *, dtype=None, casting="same_kind"):
    return _joined([atleast_2d(a) for a in tup], 0, dtype)


def hstack(tup, *, dtype=None, casting="same_kind"):
    arrays = [atleast_1d(a) for a in tup]
    return _joined(arrays, 0 if arrays and arrays[0].ndim == 1 else 1, dtype)


def dstack(tup):
    return _joined([atleast_3d(a) for a in tup], 2, None)


def column_stack(tup):
    arrays = [_array(a) for a in tup]
    return _joined([_ns.reshape(a, (-1, 1)) if a.ndim < 2 else a for a in arrays], 1, None)


def row_stack(tup, *, dtype=None, casting="same_kind"):
    return vstack(tup, dtype=dtype)


def _joined(arrays, axis, dtype):
    out = _ns.concat(list(arrays), axis=axis)
    return out if dtype is None else _ns.astype(out, dtype)


def ravel(a, order="C"):
    return _flat(a)


def swapaxes(a, axis1, axis2):
    axes = list(range(a.ndim))
    i, j = _axis(axis1, a.ndim), _axis(axis2, a.ndim)
    axes[i], axes[j] = axes[j], axes[i]
    return _ns.permute_dims(a, tuple(axes))


def fliplr(m):
    return _ns.flip(m, 1)


def flipud(m):
    return _ns.flip(m, 0)


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """NumPy's meshgrid: each input is flattened first (eager NumPy accepts 2-d inputs so)."""
    if sparse:
        raise TypeError("numpy.meshgrid(sparse=True) on a traced value: use rt.meshgrid (dense grids)")
    return tuple(_ns.meshgrid(*(_flat(x) for x in xi), indexing=indexing))


def tril(m, k=0):
    return _ns.tril(m, k=k)


def triu(m, k=0):
    return _ns.triu(m, k=k)


def take(a, indices, axis=None, out=None, mode="raise"):
    if out is not None or mode != "raise":
        raise TypeError("numpy.take with out= or mode= on a traced value: use rt.take")
    indices = _array(indices)
    if axis is None:
        a, axis = _flat(a), 0
    if indices.ndim == 1:
        return _ns.take(a, indices, axis=axis)
    picked = _ns.take(a, _flat(indices), axis=axis)
    axis = _axis(axis, a.ndim)
    return _ns.reshape(picked, tuple(a.shape[:axis]) + tuple(indices.shape) + tuple(a.shape[axis + 1:]))


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *, equal_nan=True,
           sorted=True):
    if return_index or return_inverse or return_counts or axis is not None:
        raise TypeError("numpy.unique with return_index/return_inverse/return_counts/axis on a traced value: use "
                        "rt.unique_all, rt.unique_inverse or rt.unique_counts")
    return _ns.unique_values(_flat(ar))


def flatnonzero(a):
    return _ns.nonzero(_flat(a))[0]


def argwhere(a):
    a = _array(a)
    if a.ndim == 0:
        return _ns.reshape(_ns.nonzero(_ns.reshape(a, (1,)))[0], (-1, 0))
    return _ns.stack(list(_ns.nonzero(a)), axis=1)


def copy(a, order="K", subok=False):
    return _ns.astype(a, a.dtype, copy=True)


def shape(a):
    return tuple(a.shape)


def ndim(a):
    return a.ndim


def size(a, axis=None):
    return a.size if axis is None else a.shape[axis]


# --- products ---------------------------------------------------------------------------------------

def dot(a, b, out=None):
    if out is not None:
        raise TypeError("numpy.dot with out= on a traced value: use the result")
    a, b = _array(a), _array(b)
    if a.ndim == 0 or b.ndim == 0:
        return _ns.multiply(a, b)
    if a.ndim <= 2 and b.ndim <= 2:
        return _ns.matmul(a, b)
    return _ns.tensordot(a, b, axes=([a.ndim - 1], [max(b.ndim - 2, 0)]))


def inner(a, b):
    a, b = _array(a), _array(b)
    if a.ndim == 0 or b.ndim == 0:
        return _ns.multiply(a, b)
    return _ns.tensordot(a, b, axes=([a.ndim - 1], [b.ndim - 1]))


def outer(a, b, out=None):
    return decompositions.outer(_flat(a), _flat(b))


def vdot(a, b):
    return _ns.vecdot(_flat(a), _flat(b))


def kron(a, b):
    a, b = _array(a), _array(b)
    n = max(a.ndim, b.ndim)
    a = _ns.reshape(a, (1,) * (n - a.ndim) + tuple(a.shape))
    b = _ns.reshape(b, (1,) * (n - b.ndim) + tuple(b.shape))
    spread_a = sum(((d, 1) for d in a.shape), ())
    spread_b = sum(((1, d) for d in b.shape), ())
    product = _ns.multiply(_ns.reshape(a, spread_a), _ns.reshape(b, spread_b))
    return _ns.reshape(product, tuple(x * y for x, y in zip(a.shape, b.shape)))


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    if axis is None and (axisa, axisb, axisc) != (-1, -1, -1):
        raise TypeError("numpy.cross with axisa/axisb/axisc on a traced value: use rt.linalg.cross(axis=)")
    return decompositions.cross(a, b, axis=-1 if axis is None else axis)


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    if out is not None:
        raise TypeError("numpy.trace with out= on a traced value: use the result")
    return decompositions.trace(_ns.moveaxis(a, (axis1, axis2), (-2, -1)), offset=offset,
                                dtype=dtype if dtype is not None else _sum_dtype(a))


def diagonal(a, offset=0, axis1=0, axis2=1):
    return decompositions.diagonal(_ns.moveaxis(a, (axis1, axis2), (-2, -1)), offset=offset)


def diag(v, k=0):
    v = _array(v)
    if v.ndim == 2:
        return decompositions.diagonal(v, offset=k)
    if v.ndim != 1:
        raise ValueError("Input must be 1- or 2-d.")
    n = v.shape[0] + abs(k)
    row = _ns.pad(v, ((k, 0),) if k >= 0 else ((0, -k),))
    on_diagonal = _ns.astype(_ns.eye(n, n, k=k, dtype="int8"), "bool")
    return _ns.where(on_diagonal, _ns.expand_dims(row, 0), _ns.zeros((), dtype=v.dtype))


def _sum_dtype(a):
    kind = np.dtype(a.dtype).kind
    return "int64" if kind in "bi" and np.dtype(a.dtype).itemsize < 8 else \
        "uint64" if kind == "u" and np.dtype(a.dtype).itemsize < 8 else None


# --- reductions and comparisons ---------------------------------------------------------------------

def cumprod(a, axis=None, dtype=None, out=None):
    if out is not None:
        raise TypeError("numpy.cumprod with out= on a traced value: use the result")
    if axis is None:
        a, axis = _flat(a), 0
    return _ns.cumulative_prod(a, axis=axis, dtype=dtype)


def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    if returned:
        raise TypeError("numpy.average(returned=True) on a traced value: compute the sum of weights too")
    if weights is None:
        return _ns.mean(a, axis=axis, keepdims=keepdims)
    weights = _array(weights)
    if weights.ndim == 1 and a.ndim > 1:
        if axis is None:
            raise TypeError("Axis must be specified when shapes of a and weights differ.")
        shape = [1] * a.ndim
        shape[_axis(axis, a.ndim)] = weights.shape[0]
        weights = _ns.reshape(weights, tuple(shape))
    total = _ns.sum(_ns.multiply(a, weights), axis=axis, keepdims=keepdims)
    return _ns.divide(total, _ns.sum(_ns.multiply(_ns.ones_like(a), weights), axis=axis, keepdims=keepdims))


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """The middle of the sorted values (the mean of the two middle ones for an even count); NaN
    where the values hold one, as NumPy."""
    if out is not None:
        raise TypeError("numpy.median with out= on a traced value: use the result")
    a = _array(a)
    ndim = a.ndim
    if axis is None:
        a, axis = _flat(a), 0
    axis = _axis(axis, a.ndim)
    n = a.shape[axis]
    if not isinstance(n, int):
        raise TypeError(f"numpy.median over a dynamic dimension (axis {axis}) of a traced value: its middle is "
                        "known only when the Program runs; give that dimension a fixed size")
    ordered = _ns.sort(a, axis=axis)
    middle = _ns.mean(_ns.take(ordered, asarray(np.asarray([(n - 1) // 2, n // 2])), axis=axis), axis=axis,
                      keepdims=True)
    if np.dtype(a.dtype).kind in "fc":
        nan = _ns.any(_ns.isnan(a), axis=axis, keepdims=True)
        middle = _ns.where(nan, _ns.zeros((), dtype=middle.dtype) + np.nan, middle)
    if not keepdims:
        return _ns.squeeze(middle, axis)
    return _ns.reshape(middle, (1,) * ndim) if a.ndim != ndim else middle


def ptp(a, axis=None, out=None, keepdims=False):
    return _ns.subtract(_ns.max(a, axis=axis, keepdims=keepdims), _ns.min(a, axis=axis, keepdims=keepdims))


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    if out is not None or initial is not None or where is not None:
        raise TypeError("numpy.nansum with out=, initial= or where= on a traced value: use rt.sum")
    return _ns.sum(_without_nan(a, 0), axis=axis, dtype=dtype, keepdims=keepdims)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    if out is not None or where is not None or dtype is not None:
        raise TypeError("numpy.nanmean with out=, dtype= or where= on a traced value: use rt.mean")
    present = _ns.logical_not(_ns.isnan(a))
    total = _ns.sum(_without_nan(a, 0), axis=axis, keepdims=keepdims)
    return _ns.divide(total, _ns.astype(_ns.sum(present, axis=axis, keepdims=keepdims), total.dtype))


def _without_nan(a, fill):
    a = _array(a)
    if np.dtype(a.dtype).kind not in "fc":
        return a
    return _ns.where(_ns.isnan(a), _ns.zeros((), dtype=a.dtype) + fill, a)


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """NumPy's rule: finite pairs within atol + rtol * |b|, others (inf) only when equal."""
    a, b = _array(a), _array(b)
    finite = _ns.logical_and(_ns.isfinite(a), _ns.isfinite(b))
    near = _ns.less_equal(_ns.abs(_ns.subtract(a, b)), _ns.add(atol, _ns.multiply(rtol, _ns.abs(b))))
    close = _ns.where(finite, near, _ns.equal(a, b))
    if equal_nan:
        close = _ns.logical_or(close, _ns.logical_and(_ns.isnan(a), _ns.isnan(b)))
    return close


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """A 0-d bool tensor (NumPy's Python bool, known only when the Program runs)."""
    return _ns.all(isclose(a, b, rtol, atol, equal_nan))


def array_equal(a1, a2, equal_nan=False):
    a1, a2 = _array(a1), _array(a2)
    if a1.ndim != a2.ndim or any(isinstance(x, int) and isinstance(y, int) and x != y
                                 for x, y in zip(a1.shape, a2.shape)):
        return False
    same = _ns.equal(a1, a2)
    if equal_nan:
        same = _ns.logical_or(same, _ns.logical_and(_ns.isnan(a1), _ns.isnan(a2)))
    return _ns.all(same)


# --- elementwise ------------------------------------------------------------------------------------

def clip(a, a_min=np._NoValue, a_max=np._NoValue, out=None, *, min=np._NoValue, max=np._NoValue):
    if out is not None:
        raise TypeError("numpy.clip with out= on a traced value: use the result")
    low = None if a_min is np._NoValue else a_min
    high = None if a_max is np._NoValue else a_max
    low = low if min is np._NoValue else min
    high = high if max is np._NoValue else max
    return _ns.clip(a, low, high)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    x = _array(x)
    if np.dtype(x.dtype).kind != "f":
        return x
    info = np.finfo(x.dtype)
    x = _ns.where(_ns.isnan(x), _ns.zeros((), dtype=x.dtype) + nan, x)
    x = _ns.where(_ns.logical_and(_ns.isinf(x), _ns.greater(x, 0)),
                  _ns.zeros((), dtype=x.dtype) + (info.max if posinf is None else posinf), x)
    return _ns.where(_ns.logical_and(_ns.isinf(x), _ns.less(x, 0)),
                     _ns.zeros((), dtype=x.dtype) + (info.min if neginf is None else neginf), x)


def sinc(x):
    """NumPy's own formula (sin(pi y) / (pi y), with 1e-20 for 0), so the bits agree."""
    y = _ns.multiply(np.pi, _ns.where(_ns.equal(x, 0), 1.0e-20, x))
    return _ns.divide(_ns.sin(y), y)


def heaviside(x1, x2):
    zero = _ns.zeros((), dtype=_array(x1).dtype)
    return _ns.where(_ns.less(x1, 0), zero, _ns.where(_ns.greater(x1, 0), zero + 1,
                                                       _ns.where(_ns.isnan(x1), x1, zero + x2)))


def angle(z, deg=False):
    z = _array(z)
    if np.dtype(z.dtype).kind == "c":
        out = _ns.atan2(_ns.imag(z), _ns.real(z))
    else:
        out = _ns.atan2(0, z)
    return _ns.multiply(out, 180 / np.pi) if deg else out


def norm(x, ord=None, axis=None, keepdims=False):
    """numpy.linalg.norm: the 2-norm of the flattened array by default, a vector norm along one
    axis, a matrix norm over two."""
    x = _array(x)
    if axis is None and ord is None:
        out = decompositions.vector_norm(_flat(x), ord=2)
        return _ns.reshape(out, (1,) * x.ndim) if keepdims else out
    if axis is None:
        axis = tuple(range(x.ndim))
    if isinstance(axis, int) or len(axis) == 1:
        axis = axis if isinstance(axis, int) else axis[0]
        return decompositions.vector_norm(x, axis=axis, keepdims=keepdims, ord=2 if ord is None else ord)
    moved = _ns.moveaxis(x, tuple(axis), (-2, -1))
    out = decompositions.matrix_norm(moved, keepdims=keepdims, ord="fro" if ord is None else ord)
    if keepdims:
        out = _ns.moveaxis(out, (-2, -1), tuple(axis))
    return out


_WRITTEN = {fn.__name__: fn for fn in (
    atleast_1d, atleast_2d, atleast_3d, vstack, hstack, dstack, column_stack, row_stack, ravel, swapaxes, fliplr,
    flipud, meshgrid, tril, triu, take, unique, flatnonzero, argwhere, copy, shape, ndim, size, dot, inner, outer,
    vdot, kron, cross, trace, diagonal, diag, cumprod, average, median, ptp, nansum, nanmean, isclose, allclose,
    array_equal, clip, nan_to_num, sinc, heaviside, angle)}
