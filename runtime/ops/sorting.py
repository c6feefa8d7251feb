"""Sorting and set functions: sort, argsort, searchsorted, topk, unique_*.

Orders are stable: equal elements keep their input order, also when sorting
descending (the array API's `stable=True`), and `topk` returns the first of
equal elements first. NaNs sort last ascending and first descending, as NumPy's
sort puts them last. `unique_*` sizes depend on the values: traced, their
length is an unknown dim.
"""
from collections import namedtuple

import numpy as np

from .dispatch import apply
from .registry import OpDef, register
from .rules import Spec, dtype_of, norm_axes, shape_of

_INDEX = np.dtype(np.int64)


def _axis(x, axis):
    return norm_axes(axis, len(shape_of(x)))[0]


def _stable_argsort(xp, x, axis, descending):
    if not descending:
        return xp.argsort(x, axis=axis, kind="stable")
    # descending and stable: sort the reversed array ascending, then read it backwards
    n = x.shape[axis]
    order = xp.argsort(xp.flip(x, axis=axis), axis=axis, kind="stable")
    return (n - 1) - xp.flip(order, axis=axis)


def _sort_infer(x, axis=-1, descending=False):
    _axis(x, axis)
    return Spec(shape_of(x), dtype_of(x))


def _argsort_infer(x, axis=-1, descending=False):
    _axis(x, axis)
    return Spec(shape_of(x), _INDEX)


def _sort_kernel(xp, x, axis=-1, descending=False):
    if not descending:
        return xp.sort(x, axis=axis, kind="stable")
    return xp.take_along_axis(x, _stable_argsort(xp, x, axis, True), axis=axis)


def _argsort_kernel(xp, x, axis=-1, descending=False):
    return _stable_argsort(xp, x, axis, descending).astype(np.int64, copy=False)


def _sort_samples():
    x = np.array([[3.0, 1.0, 2.0, 1.0], [0.5, np.nan, -1.0, 0.5]], np.float32)
    ints = np.array([[4, 1, 4, 2], [0, 0, 3, -1]], np.int32)
    return [
        dict(fn=lambda a: sort(a), args=(x,), oracle=lambda a: np.sort(a, axis=-1)),
        dict(fn=lambda a: sort(a, axis=0), args=(ints,), oracle=lambda a: np.sort(a, axis=0)),
        dict(fn=lambda a: sort(a, descending=True), args=(ints,), oracle=lambda a: -np.sort(-a, axis=-1)),
    ]


def _argsort_samples():
    ints = np.array([[4, 1, 4, 2], [0, 0, 3, -1]], np.int32)
    return [
        dict(fn=lambda a: argsort(a), args=(ints,), oracle=lambda a: np.argsort(a, axis=-1, kind="stable")),
        dict(fn=lambda a: argsort(a, axis=0), args=(ints,), oracle=lambda a: np.argsort(a, axis=0, kind="stable")),
        # descending, stable: equal elements keep their order
        dict(fn=lambda a: argsort(a, descending=True), args=(ints,),
             oracle=lambda a: np.argsort(-a.astype(np.int64), axis=-1, kind="stable")),
    ]


_sort = register(OpDef("sort", _sort_kernel, _sort_infer, example=_sort_samples))
_argsort = register(OpDef("argsort", _argsort_kernel, _argsort_infer, example=_argsort_samples))


def sort(x, /, *, axis=-1, descending=False, stable=True):
    """Sorted copy along `axis` (always stable; NaNs last, or first when descending)."""
    return apply(_sort, (x,), {"axis": int(axis), "descending": bool(descending)})


def argsort(x, /, *, axis=-1, descending=False, stable=True):
    """Indices that sort `x` along `axis` (stable: ties keep their input order)."""
    return apply(_argsort, (x,), {"axis": int(axis), "descending": bool(descending)})


# --- searchsorted ----------------------------------------------------------------------

def _searchsorted_infer(x1, x2, sorter=None, side="left"):
    if len(shape_of(x1)) != 1:
        raise ValueError(f"searchsorted: x1 must be 1-D, got shape {tuple(shape_of(x1))}")
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    return Spec(shape_of(x2), _INDEX)


def _searchsorted_kernel(xp, x1, x2, sorter=None, side="left"):
    return xp.searchsorted(x1, x2, side=side, sorter=sorter).astype(np.int64, copy=False)


def _searchsorted_samples():
    x1 = np.array([-1.0, 0.0, 0.0, 2.5, 7.0], np.float32)
    x2 = np.array([[0.0, 3.0], [-5.0, 7.0]], np.float32)
    return [
        dict(fn=lambda a, v: searchsorted(a, v), args=(x1, x2), oracle=lambda a, v: np.searchsorted(a, v),
             dynamic=False),
        dict(fn=lambda a, v: searchsorted(a, v, side="right"), args=(x1, x2),
             oracle=lambda a, v: np.searchsorted(a, v, side="right"), dynamic=False),
        dict(fn=lambda a, v, s: searchsorted(a, v, sorter=s), args=(x1[::-1].copy(), x2, np.arange(5)[::-1].copy()),
             oracle=lambda a, v, s: np.searchsorted(a, v, sorter=s), dynamic=False),
    ]


_searchsorted = register(OpDef("searchsorted", _searchsorted_kernel, _searchsorted_infer,
                               example=_searchsorted_samples))


def searchsorted(x1, x2, /, *, side="left", sorter=None):
    """Where x2's values would be inserted into the sorted 1-D x1 to keep it sorted."""
    return apply(_searchsorted, (x1, x2, sorter), {"side": side})


# --- topk ----------------------------------------------------------------------------------

def _topk_infer(x, k, axis=-1, largest=True):
    shape = list(shape_of(x))
    a = _axis(x, axis)
    if not isinstance(k, int) or k < 0:
        raise ValueError(f"topk: k must be a non-negative int, got {k!r}")
    if shape[a] != -1 and k > shape[a]:
        raise ValueError(f"topk: k={k} is larger than the size {shape[a]} of axis {axis}")
    shape[a] = k
    return [Spec(tuple(shape), dtype_of(x)), Spec(tuple(shape), _INDEX)]


# Rows at least this long with k at most a quarter of them select before sorting; shorter ones are
# sorted whole: below it one stable argsort costs less than the dozen array calls that selecting makes.
_SELECT_MIN = 2048


def _topk_kernel(xp, x, k, axis=-1, largest=True):
    n = x.shape[axis]
    if k > n:
        raise ValueError(f"topk: k={k} is larger than the size {n} of axis {axis}")
    last = axis in (-1, x.ndim - 1)
    rows = x if last else xp.swapaxes(x, axis, -1)
    if n >= _SELECT_MIN and 0 < 4 * k <= n and x.dtype.kind in "biuf":
        values, index = _top_selected(xp, rows, k, largest)
    else:
        index = _top_sorted(xp, rows, k, largest)
        values = rows[index] if rows.ndim == 1 else xp.take_along_axis(rows, index, axis=-1)
    if not last:
        values, index = xp.swapaxes(values, axis, -1), xp.swapaxes(index, axis, -1)
    return values, index.astype(np.int64, copy=False)


def _top_sorted(xp, rows, k, largest):
    """The first k of each row's stable order; descending sorts the reversed row ascending and reads it
    backwards, so ties keep the lowest index first and NaNs (sorted last ascending) come first."""
    if not largest:
        return xp.argsort(rows, axis=-1, kind="stable")[..., :k]
    order = xp.argsort(rows[..., ::-1], axis=-1, kind="stable")
    return (rows.shape[-1] - 1) - order[..., ::-1][..., :k]


def _top_selected(xp, rows, k, largest):
    """(values, indices) of each row's top k from a partition, then a stable sort of those k alone.

    The partition finds the k-th value t (NaN counts as the largest, as in sort). Every element
    ordered before t is in; of the elements equal to t (NaNs equal to a NaN t) only the first ones
    by index fill the row up to k, as the full stable order would take them. The kept indices come
    out ascending per row, so a stable sort of their values orders ties by index."""
    n = rows.shape[-1]
    kth = n - k if largest else k - 1
    t = xp.partition(rows, kth, axis=-1)[..., kth:kth + 1]
    if rows.dtype.kind == "f":
        nan_rows, nan_t = xp.isnan(rows), xp.isnan(t)
        before = (rows > t) | (nan_rows & ~nan_t) if largest else (rows < t) | (~nan_rows & nan_t)
        tie = (rows == t) | (nan_rows & nan_t)
    else:
        before = rows > t if largest else rows < t
        tie = rows == t
    short = k - xp.count_nonzero(before, axis=-1)[..., None]
    keep = before | (tie & (xp.cumsum(tie, axis=-1) <= short))
    chosen = xp.nonzero(keep)[-1].reshape(rows.shape[:-1] + (k,))
    picked = xp.take_along_axis(rows, chosen, axis=-1)
    order = _top_sorted(xp, picked, k, largest)
    return xp.take_along_axis(picked, order, axis=-1), xp.take_along_axis(chosen, order, axis=-1)


def _topk_oracle(part, largest):
    def oracle(a, k, axis=-1):
        key = -a.astype(np.float64) if largest else a
        index = np.take(np.argsort(key, axis=axis, kind="stable"), np.arange(k), axis=axis)
        return index if part else np.take_along_axis(a, index, axis=axis)
    return oracle


def _topk_samples():
    x = np.array([[1.0, 5.0, 3.0, 5.0, -2.0], [0.0, -1.0, 8.0, 2.0, 2.0]], np.float32)
    ints = np.array([[3, 9, 9, 1], [7, 0, 7, 7], [2, 2, 5, 1]], np.int64)
    # rows that select before sorting; every value about twice, so the k-th is often tied
    long = np.random.default_rng(0).integers(-_SELECT_MIN, _SELECT_MIN, (2, 2 * _SELECT_MIN)).astype(np.float32)
    return [
        dict(fn=lambda a: topk(a, 3)[0], args=(x,), oracle=lambda a: _topk_oracle(0, True)(a, 3)),
        dict(fn=lambda a: topk(a, 3)[1], args=(x,), oracle=lambda a: _topk_oracle(1, True)(a, 3)),
        dict(fn=lambda a: topk(a, 2, axis=0, largest=False)[1], args=(ints,),
             oracle=lambda a: _topk_oracle(1, False)(a, 2, axis=0)),
        dict(fn=lambda a: topk(a, 2, largest=False)[0], args=(ints,),
             oracle=lambda a: _topk_oracle(0, False)(a, 2)),
        dict(fn=lambda a: topk(a, 9)[1], args=(long,), oracle=lambda a: _topk_oracle(1, True)(a, 9)),
        dict(fn=lambda a: topk(a.T, 9, axis=0, largest=False)[0], args=(long,),
             oracle=lambda a: _topk_oracle(0, False)(a.T, 9, axis=0)),
    ]


_topk = register(OpDef("topk", _topk_kernel, _topk_infer, num_outputs=2, example=_topk_samples))


def topk(x, k, axis=-1, largest=True):
    """(values, indices) of the k largest (or smallest) elements along `axis`, in order.

    Like torch.topk with sorted=True; among equal values the first comes first.
    """
    return apply(_topk, (x,), {"k": int(k), "axis": int(axis), "largest": bool(largest)})


# --- unique_* -------------------------------------------------------------------------------

def _unique_parts(xp, x):
    """values, first indices, inverse (x's shape), counts; NaNs are each their own value."""
    flat = x.reshape(-1)
    order = xp.argsort(flat, kind="stable")
    ordered = flat[order]
    if ordered.size == 0:
        empty = xp.zeros((0,), np.int64)
        return ordered, empty, xp.zeros(x.shape, np.int64), empty
    new = xp.ones(ordered.shape, bool)
    new[1:] = ordered[1:] != ordered[:-1]       # NaN != NaN: every NaN starts a group of its own
    starts = xp.nonzero(new)[0]
    group = xp.cumsum(new) - 1
    inverse = xp.empty(flat.shape, np.int64)
    inverse[order] = group
    counts = xp.diff(xp.concatenate([starts, xp.asarray([flat.size])]))
    return ordered[starts], order[starts].astype(np.int64), inverse.reshape(x.shape), counts.astype(np.int64)


def _unique_infer(parts):
    def infer(x):
        specs = {"values": Spec((-1,), dtype_of(x)), "indices": Spec((-1,), _INDEX),
                 "inverse_indices": Spec(shape_of(x), _INDEX), "counts": Spec((-1,), _INDEX)}
        out = [specs[p] for p in parts]
        return out[0] if len(out) == 1 else out
    return infer


def _unique_kernel(parts):
    def kernel(xp, x):
        values, indices, inverse, counts = _unique_parts(xp, x)
        found = {"values": values, "indices": indices, "inverse_indices": inverse, "counts": counts}
        out = tuple(found[p] for p in parts)
        return out[0] if len(out) == 1 else out
    return kernel


def _np_unique(a):
    values, index, inverse, counts = np.unique(a, return_index=True, return_inverse=True, return_counts=True,
                                               equal_nan=False)
    return values, index.astype(np.int64), inverse.reshape(a.shape).astype(np.int64), counts.astype(np.int64)


def _unique_samples(parts):
    x = np.array([[3.0, 1.0, 3.0], [np.nan, 1.0, np.nan]], np.float32)
    ints = np.array([5, 2, 5, 5, -1, 2], np.int32)
    names = ("values", "indices", "inverse_indices", "counts")
    out = []
    for i, part in enumerate(parts):
        k = names.index(part)
        fn = (lambda a, i=i: UNIQUE[parts](a)[i]) if len(parts) > 1 else UNIQUE[parts]
        for arr in (x, ints):
            out.append(dict(fn=fn, args=(arr,), oracle=lambda a, k=k: _np_unique(a)[k], data_dependent=True))
    return out


UNIQUE = {}


def _define_unique(name, parts):
    opdef = register(OpDef(name, _unique_kernel(parts), _unique_infer(parts), num_outputs=len(parts),
                           example=lambda: _unique_samples(parts)))
    result = namedtuple(name.title().replace("_", "") + "Result", parts)   # the array API's named results

    def fn(x, /):
        out = apply(opdef, (x,), {})
        return out if len(parts) == 1 else result(*out)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Unique elements of x (flattened), sorted; returns {', '.join(parts)}. NaNs are all distinct."
    UNIQUE[parts] = fn
    return fn


unique_values = _define_unique("unique_values", ("values",))
unique_counts = _define_unique("unique_counts", ("values", "counts"))
unique_inverse = _define_unique("unique_inverse", ("values", "inverse_indices"))
unique_all = _define_unique("unique_all", ("values", "indices", "inverse_indices", "counts"))

SORTING_FUNCTIONS = {f.__name__: f for f in (sort, argsort, searchsorted, topk, unique_values, unique_counts,
                                              unique_inverse, unique_all)}
