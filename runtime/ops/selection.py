"""Selecting and scattering by index, and counting: take, take_along_axis, put_along_axis,
scatter_add, one_hot, nonzero, count_nonzero, bincount, cumulative_sum/prod.

`scatter_add` takes PyTorch's argument order (x, axis, index, src); every op
returns a new array (the functional form the IR needs), never writes into x.
Out-of-range indices are an IndexError, as in NumPy.
"""
import numpy as np

from ..dtypes import as_dtype
from .dispatch import apply
from .registry import OpDef, register
from .rules import Spec, dtype_of, is_weak, norm_axes, shape_of
from .samples import sample_array as _rand

_INDEX = np.dtype(np.int64)


def _check_index_dtype(name, index):
    if dtype_of(index).kind not in "iu":
        raise TypeError(f"{name}: indices must be integers, got {dtype_of(index).name}")


# --- take / take_along_axis ---------------------------------------------------------------------

def _take_infer(x, indices, axis=None):
    _check_index_dtype("take", indices)
    shape = shape_of(x)
    if axis is None:
        if len(shape) != 1:
            raise ValueError(f"take: give `axis` for an array of rank {len(shape)} (the array API flattens "
                             "only 1-D arrays)")
        axis = 0
    (a,) = norm_axes(axis, len(shape))
    return Spec(shape[:a] + tuple(shape_of(indices)) + shape[a + 1:], dtype_of(x), is_weak(x))


def _emit_take(gen, op):
    """Plan code: the array's method (what xp.take calls, less its dispatch)."""
    x, indices = op.inputs
    if not gen.is_array(x) or set(op.attrs) - {"axis"}:
        return None
    axis = op.attrs.get("axis")
    return f"{gen.value(x)}.take({gen.value(indices)}, {0 if axis is None else int(axis)})"


_take = register(OpDef(
    "take", lambda xp, x, indices, axis=None: xp.take(x, indices, axis=0 if axis is None else axis), _take_infer,
    emit=_emit_take,
    example=lambda: [
        dict(fn=lambda a, i: take(a, i, axis=1), args=(_rand((3, 4)), np.array([3, 0, 0, -1])),
             oracle=lambda a, i: np.take(a, i, axis=1)),
        dict(fn=lambda a, i: take(a, i), args=(_rand((5,), "int32"), np.array([[4, 1], [2, 2]])),
             oracle=lambda a, i: np.take(a, i))]))


def take(x, indices, /, *, axis=None):
    """Elements of x at integer `indices` along `axis` (NumPy's take; negative indices count from the end)."""
    return apply(_take, (x, indices), {"axis": None if axis is None else int(axis)})


def _along_shape(name, x, index, axis):
    sx, si = shape_of(x), shape_of(index)
    _check_index_dtype(name, index)
    if len(sx) != len(si):
        raise ValueError(f"{name}: indices need the rank of x ({len(sx)}), got shape {tuple(si)}")
    (a,) = norm_axes(axis, len(sx))
    for i, (d, e) in enumerate(zip(sx, si)):
        if i != a and -1 not in (d, e) and e not in (1, d) and d != 1:
            raise ValueError(f"{name}: shapes {tuple(sx)} and {tuple(si)} do not match outside axis {axis}")
    return a


def _take_along_infer(x, indices, axis=-1):
    a = _along_shape("take_along_axis", x, indices, axis)
    sx, si = shape_of(x), shape_of(indices)
    out = tuple(si[i] if i == a else (d if e in (1, -1) and d != 1 else e) for i, (d, e) in enumerate(zip(sx, si)))
    return Spec(out, dtype_of(x), is_weak(x))


_take_along = register(OpDef(
    "take_along_axis", lambda xp, x, indices, axis=-1: xp.take_along_axis(x, indices, axis), _take_along_infer,
    example=lambda: [
        dict(fn=lambda a, i: take_along_axis(a, i), args=(_rand((3, 4)), np.array([[0, 3], [1, 1], [2, 0]])),
             oracle=lambda a, i: np.take_along_axis(a, i, -1)),
        dict(fn=lambda a, i: take_along_axis(a, i, axis=0), args=(_rand((3, 2), "int32"), np.array([[2, 0]])),
             oracle=lambda a, i: np.take_along_axis(a, i, 0), dynamic=False)]))


def take_along_axis(x, indices, /, *, axis=-1):
    """out[..., j, ...] = x[..., indices[..., j, ...], ...] along `axis` (index arrays of x's rank)."""
    return apply(_take_along, (x, indices), {"axis": int(axis)})


# --- put_along_axis / scatter_add ---------------------------------------------------------------------

def _scatter_infer(x, index, src, axis=0, reduce="set"):
    _along_shape("scatter", x, index, axis)
    if reduce not in ("set", "add"):
        raise ValueError(f"scatter: reduce must be 'set' or 'add', got {reduce!r}")
    return Spec(shape_of(x), dtype_of(x), is_weak(x))


def _scatter_kernel(xp, x, index, src, axis=0, reduce="set"):
    out = xp.array(x, copy=True)
    src = xp.asarray(src, dtype=out.dtype)
    if reduce == "set":
        xp.put_along_axis(out, index, xp.broadcast_to(src, index.shape) if src.ndim == 0 else src, axis)
        return out
    # add: out[i][index[i][j]][k] += src[i][j][k]; repeated indices all add (unbuffered)
    if src.shape != index.shape:
        src = src[tuple(slice(0, n) for n in index.shape)] if src.ndim else xp.broadcast_to(src, index.shape)
    grids = list(xp.indices(index.shape, sparse=True))
    grids[axis] = index
    add = getattr(xp, "add")
    if hasattr(add, "at"):
        add.at(out, tuple(grids), src)
    else:                     # CuPy: scatter_add lives in cupyx
        import cupyx
        cupyx.scatter_add(out, tuple(grids), src)
    return out


def _np_scatter_add(x, axis, index, src):
    out = x.copy()
    for pos in np.ndindex(*index.shape):
        target = list(pos)
        target[axis] = index[pos]
        out[tuple(target)] += src[pos]
    return out


def _np_put_along(x, index, values, axis):
    out = x.copy()
    np.put_along_axis(out, index, values, axis)
    return out


_scatter = register(OpDef(
    "scatter", _scatter_kernel, _scatter_infer,
    example=lambda: [
        dict(fn=lambda a, i, s: scatter_add(a, 0, i, s), args=(_rand((3, 2)), np.array([[0, 2], [0, 0]]),
                                                             _rand((2, 2))),
             oracle=lambda a, i, s: _np_scatter_add(a, 0, i, s), dynamic=False),
        dict(fn=lambda a, i, s: scatter_add(a, 1, i, s), args=(_rand((2, 4), "int32"), np.array([[1, 1, 3]] * 2),
                                                             _rand((2, 3), "int32")),
             oracle=lambda a, i, s: _np_scatter_add(a, 1, i, s)),
        dict(fn=lambda a, i, v: put_along_axis(a, i, v, axis=1), args=(_rand((3, 4)), np.array([[0], [3], [1]]),
                                                                      _rand((3, 1))),
             oracle=lambda a, i, v: _np_put_along(a, i, v, 1))]))


def put_along_axis(x, indices, values, axis):
    """A copy of x with values written at `indices` along `axis` (NumPy's put_along_axis, functional)."""
    return apply(_scatter, (x, indices, values), {"axis": int(axis), "reduce": "set"})


def scatter_add(x, axis, index, src):
    """A copy of x where out[index[i][j]][j] += src[i][j] (for axis 0); repeated indices all add (PyTorch's order)."""
    return apply(_scatter, (x, index, src), {"axis": int(axis), "reduce": "add"})


# --- one_hot / bincount -------------------------------------------------------------------------------------

def _one_hot_infer(indices, num_classes, dtype="float32"):
    _check_index_dtype("one_hot", indices)
    if not isinstance(num_classes, int) or num_classes < 0:
        raise ValueError(f"one_hot: num_classes must be a non-negative int, got {num_classes!r}")
    return Spec(tuple(shape_of(indices)) + (num_classes,), as_dtype(dtype))


def _one_hot_kernel(xp, indices, num_classes, dtype="float32"):
    if indices.size and (int(indices.min()) < 0 or int(indices.max()) >= num_classes):
        raise IndexError(f"one_hot: class indices must be in [0, {num_classes}), got values in "
                         f"[{int(indices.min())}, {int(indices.max())}]")
    return (indices[..., None] == xp.arange(num_classes)).astype(dtype)


_one_hot = register(OpDef(
    "one_hot", _one_hot_kernel, _one_hot_infer,
    example=lambda: [
        dict(fn=lambda i: one_hot(i, 4), args=(np.array([0, 3, 1, 1]),),
             oracle=lambda i: np.eye(4, dtype=np.float32)[i]),
        dict(fn=lambda i: one_hot(i, 3, dtype="int64"), args=(np.array([[2, 0], [1, 1]], np.int32),),
             oracle=lambda i: np.eye(3, dtype=np.int64)[i])]))


def one_hot(indices, num_classes, dtype="float32"):
    """out[..., c] = 1 where indices == c (float32 by default; PyTorch gives int64: pass dtype=)."""
    return apply(_one_hot, (indices,), {"num_classes": int(num_classes), "dtype": as_dtype(dtype).name})


def _bincount_infer(x, weights=None, minlength=0):
    if len(shape_of(x)) != 1:
        raise ValueError(f"bincount: needs a 1-D array, got shape {tuple(shape_of(x))}")
    _check_index_dtype("bincount", x)
    dtype = _INDEX if weights is None else np.bincount(np.zeros(1, np.int64),
                                                       np.ones(1, dtype_of(weights))).dtype
    return Spec((-1,), dtype)


def _bincount_kernel(xp, x, weights=None, minlength=0):
    return xp.bincount(x, weights=weights, minlength=minlength)


_bincount = register(OpDef(
    "bincount", _bincount_kernel, _bincount_infer,
    example=lambda: [
        dict(fn=lambda a: bincount(a), args=(np.array([1, 1, 3, 0, 1]),), oracle=lambda a: np.bincount(a),
             data_dependent=True),
        dict(fn=lambda a, w: bincount(a, w, minlength=6), args=(np.array([1, 1, 3]), _rand((3,))),
             oracle=lambda a, w: np.bincount(a, w, minlength=6), data_dependent=True)]))


def bincount(x, weights=None, minlength=0):
    """Count of each non-negative int in x (or the sum of its weights); length max(x) + 1 or minlength."""
    return apply(_bincount, (x, weights), {"minlength": int(minlength)})


# --- nonzero / count_nonzero -------------------------------------------------------------------------------

def _nonzero_infer(x):
    if not shape_of(x):
        raise ValueError("nonzero: needs at least one dim (the array API has no 0-d nonzero)")
    return [Spec((-1,), _INDEX) for _ in shape_of(x)]


def _nonzero_kernel(xp, x):
    return tuple(i.astype(np.int64, copy=False) for i in xp.nonzero(x))


_nonzero = register(OpDef(
    "nonzero", _nonzero_kernel, _nonzero_infer, num_outputs=-1,
    example=lambda: [
        dict(fn=lambda a: nonzero(a)[0], args=(np.array([0.0, 1.5, 0.0, -2.0], np.float32),),
             oracle=lambda a: np.nonzero(a)[0], data_dependent=True),
        dict(fn=lambda a: nonzero(a)[1], args=(np.array([[True, False], [True, True]]),),
             oracle=lambda a: np.nonzero(a)[1], data_dependent=True)]))


def nonzero(x, /):
    """Indices of the non-zero elements, one int64 array per dim (their length is known only at run time)."""
    out = apply(_nonzero, (x,), {})
    return out if isinstance(out, tuple) else (out,)


def _count_nonzero_infer(x, axis=None, keepdims=False):
    shape = shape_of(x)
    axes = norm_axes(axis, len(shape))
    out = tuple(1 if i in axes else d for i, d in enumerate(shape)) if keepdims else \
        tuple(d for i, d in enumerate(shape) if i not in axes)
    return Spec(out, _INDEX)


def _count_nonzero_kernel(xp, x, axis=None, keepdims=False):
    return xp.asarray(xp.count_nonzero(x, axis=axis, keepdims=keepdims)).astype(np.int64, copy=False)


_count_nonzero = register(OpDef(
    "count_nonzero", _count_nonzero_kernel, _count_nonzero_infer,
    example=lambda: [
        dict(fn=lambda a: count_nonzero(a), args=(np.array([[0, 1, 2], [0, 0, 3]], np.int32),),
             oracle=lambda a: np.asarray(np.count_nonzero(a), np.int64)),
        dict(fn=lambda a: count_nonzero(a, axis=1, keepdims=True), args=(np.array([[0.0, 1.0], [0.0, 0.0]]),),
             oracle=lambda a: np.count_nonzero(a, axis=1, keepdims=True).astype(np.int64))]))


def count_nonzero(x, /, *, axis=None, keepdims=False):
    axis = None if axis is None else (int(axis) if isinstance(axis, (int, np.integer)) else tuple(axis))
    return apply(_count_nonzero, (x,), {"axis": axis, "keepdims": bool(keepdims)})


# --- cumulative_sum / cumulative_prod ---------------------------------------------------------------------

def _cumulative_infer(x, axis=None, dtype=None, include_initial=False, kind="sum"):
    shape = list(shape_of(x))
    if axis is None:
        if len(shape) > 1:
            raise ValueError(f"cumulative_{kind}: give `axis` for an array of rank {len(shape)}")
        axis = 0
    if not shape:
        raise ValueError(f"cumulative_{kind}: needs at least one dim")
    (a,) = norm_axes(axis, len(shape))
    if include_initial and shape[a] != -1:
        shape[a] += 1
    if dtype is None:
        dtype = getattr(np, "cum" + kind)(np.ones(1, dtype_of(x))).dtype
    return Spec(tuple(shape), as_dtype(dtype))


def _cumulative_kernel(xp, x, axis=None, dtype=None, include_initial=False, kind="sum"):
    axis = 0 if axis is None else axis
    out = getattr(xp, "cum" + kind)(x, axis=axis, dtype=dtype)
    if include_initial:
        shape = list(out.shape)
        shape[axis] = 1
        start = xp.full(shape, 0 if kind == "sum" else 1, dtype=out.dtype)
        out = xp.concatenate([start, out], axis=axis)
    return out


_cumulative_op = register(OpDef(
    "cumulative", _cumulative_kernel, _cumulative_infer,
    example=lambda: [
        dict(fn=lambda a: cumulative_sum(a), args=(_rand((5,)),), oracle=lambda a: np.cumulative_sum(a)),
        dict(fn=lambda a: cumulative_sum(a, axis=1, include_initial=True), args=(_rand((2, 3), "int32"),),
             oracle=lambda a: np.cumulative_sum(a, axis=1, include_initial=True)),
        dict(fn=lambda a: cumulative_prod(a, axis=0, dtype="float64"), args=(_rand((3, 2)),),
             oracle=lambda a: np.cumulative_prod(a, axis=0, dtype=np.float64)),
        dict(fn=lambda a: cumulative_prod(a, include_initial=True), args=(_rand((4,), "int64", 1, 3),),
             oracle=lambda a: np.cumulative_prod(a, include_initial=True))]))


def _cumulative(kind):
    def fn(x, /, *, axis=None, dtype=None, include_initial=False):
        return apply(_cumulative_op, (x,), {"axis": None if axis is None else int(axis),
                                         "dtype": None if dtype is None else as_dtype(dtype).name,
                                         "include_initial": bool(include_initial), "kind": kind})
    fn.__name__ = fn.__qualname__ = f"cumulative_{kind}"
    fn.__doc__ = f"Cumulative {kind} along axis (the array API's; include_initial prepends the identity)."
    return fn


cumulative_sum = _cumulative("sum")
cumulative_prod = _cumulative("prod")

SELECTION_FUNCTIONS = {f.__name__: f for f in (take, take_along_axis, put_along_axis, scatter_add, one_hot,
                                                bincount, nonzero, count_nonzero, cumulative_sum, cumulative_prod)}
