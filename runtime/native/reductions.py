"""Whole-array reductions as NumPy computes them: its own binary loop called in reduce form.

NumPy's `add.reduce` of a contiguous float array (no axis) calls the `add` loop once with
data = [out, x, out], strides = [0, itemsize, 0] and n elements, `out` starting at the identity
+0.0: the loop sees the reduce form and sums pairwise (so `sum([-0.0])` is 0.0). `maximum` and
`minimum` have no identity: `out` starts as the first element and the loop runs over the other n - 1.
`reduce_loop(ufunc, dtype, n)` gives that loop for one length only after calling it so gives
`ufunc.reduce`'s bits on special and random values of that length; else the reduction stays on NumPy.

Rows of at most `MAX_INLINE_SUM` values may be summed inline instead (no call per row: a short row's
call costs more than its sum): NumPy's pairwise order, ported (`pairwise_sum`: under 8 values one by
one from +0.0, else eight lanes over blocks of 8 combined ((0+1)+(2+3))+((4+5)+(6+7)), then the rest
one by one; the loop adds the result to the identity), used only where `pairwise_check` finds the port
gives `add.reduce(x, -1)`'s bits on that shape here (special and random values, every row).
"""
import ctypes

import numpy as np

from . import disk_cache
from .numpy_loops import _LOOP_TYPE, probe_values, same_bits, strided_loop

# None: start from the first element (for multiply the same bits as from 1.0: 1.0 * x is x)
_IDENTITY = {"add": 0.0, "multiply": None, "maximum": None, "minimum": None}
_CHECKED = {}


def reduce_loop(ufunc_name, dtype, n, rows=None, verify=True):
    """(NumPy's loop, the identity the output starts from, None: the first element) for reducing n
    contiguous values, or why not; with `rows`, for reducing each row of a C-contiguous (rows, n)
    array over its last axis (the plan's `ufunc.reduce(x, -1)`, or for n <= 4 its binary calls). With
    verify=False, (None, identity) when the reduction may be native, the loop and its self-test left for later."""
    dtype = np.dtype(dtype)
    if ufunc_name not in _IDENTITY or dtype.kind != "f" or dtype not in (np.dtype("float32"), np.dtype("float64")):
        return f"{ufunc_name}.reduce of {dtype} is not native"
    if _IDENTITY[ufunc_name] is None and n == 0 and rows != 0:
        return f"{ufunc_name}.reduce of an empty array raises"
    if not verify:          # the self-tests run later (the compiler thread), before the loop is used
        return None, _IDENTITY[ufunc_name]
    loop = strided_loop(getattr(np, ufunc_name), (dtype, dtype, dtype))
    if loop is None:
        return f"no usable NumPy {ufunc_name} loop for {dtype}"
    key = (ufunc_name, dtype.str, n, rows)
    if key not in _CHECKED:
        _CHECKED[key] = disk_cache.remembered(["reduce", *key], lambda: _self_test(loop, dtype, n) if rows is None
                                              else _self_test_rows(loop, dtype, rows, n), "")
    return _CHECKED[key] or (loop, _IDENTITY[ufunc_name])


def call_reduce(loop, x, identity):
    """Reduce the contiguous 1-d array x with the loop in reduce form, from Python (the self-test's way in)."""
    out = np.full(1, identity, x.dtype) if identity is not None else x[:1].copy()
    rest = x if identity is not None else x[1:]
    if len(rest):
        data = (ctypes.c_void_p * 3)(out.ctypes.data, rest.ctypes.data, out.ctypes.data)
        dims = (ctypes.c_ssize_t * 1)(len(rest))
        strides = (ctypes.c_ssize_t * 3)(0, rest.itemsize, 0)
        if _LOOP_TYPE(loop.loop)(loop.context, data, dims, strides, loop.auxdata) != 0:
            return None
    return out[0]


def _self_test(loop, dtype, n):
    rng = np.random.default_rng(11)
    samples = [probe_values(dtype, n), np.full(n, -0.0, dtype)]
    samples += [(rng.standard_normal(n) * scale).astype(dtype) for scale in (1.0, 1e3, 1e-3)]
    samples.append(np.abs(rng.standard_normal(n)).astype(dtype))
    for x in samples:
        with np.errstate(all="ignore"):
            want = loop.ufunc.reduce(x)
            got = call_reduce(loop, x, _IDENTITY[loop.ufunc.__name__])
        if got is None or not same_bits(np.asarray(got), np.asarray(want)):
            return f"self-test: {loop.ufunc.__name__}.reduce in reduce form differs from NumPy's on {n} values"
    return ""


def _self_test_rows(loop, dtype, rows, n):
    rows = min(rows, 4)
    rng = np.random.default_rng(13)
    samples = [probe_values(dtype, rows * n).reshape(rows, n), (rng.standard_normal((rows, n)) * 100).astype(dtype)]
    ufunc, identity = loop.ufunc, _IDENTITY[loop.ufunc.__name__]
    for x in samples:
        with np.errstate(all="ignore"):
            want = ufunc.reduce(x, -1)
            got = np.array([call_reduce(loop, row, identity) for row in x], dtype)
            if ufunc.__name__ != "add" and 2 <= n <= 4:        # the plan's form for a short axis
                short = x[:, 0]
                for i in range(1, n):
                    short = ufunc(short, x[:, i])
                want = want if same_bits(want, short) else None
        if want is None or not same_bits(got, want):
            return f"self-test: {ufunc.__name__}.reduce over rows of {n} differs from NumPy's"
    return ""


MAX_INLINE_SUM = 128        # NumPy's pairwise block: up to it one level, no recursion
_PAIRWISE = {}


def pairwise_sum(x):
    """NumPy's pairwise sum of each row of a 2-D float array x (at most MAX_INLINE_SUM columns), added to
    the identity +0.0 as its loop's reduce form does: the order the inline code follows, IEEE op by op."""
    rows, n = x.shape
    dtype = x.dtype
    if n < 8:
        res = np.zeros(rows, dtype)
        for i in range(n):
            res = res + x[:, i]
    else:
        lanes = [x[:, j].copy() for j in range(8)]
        i = 8
        while i < n - n % 8:
            lanes = [lanes[j] + x[:, i + j] for j in range(8)]
            i += 8
        res = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]))
        for i in range(i, n):
            res = res + x[:, i]
    return np.zeros(rows, dtype) + res


def pairwise_check(dtype, n, rows):
    """'' when `pairwise_sum` gives NumPy's `add.reduce(x, -1)` bits for C-contiguous (rows, n) float arrays
    here (its iterator may order a short axis's sums another way), else why not; once per shape."""
    dtype = np.dtype(dtype)
    if dtype.kind != "f" or dtype not in (np.dtype("float32"), np.dtype("float64")) or not 1 <= n <= MAX_INLINE_SUM:
        return f"no inline sum of {n} {dtype} values"
    key = (dtype.str, n, rows)
    if key not in _PAIRWISE:
        _PAIRWISE[key] = disk_cache.remembered(["pairwise", *key], lambda: _pairwise_test(dtype, n, rows), "")
    return _PAIRWISE[key]


def _pairwise_test(dtype, n, rows):
    rng = np.random.default_rng(23)
    rows = max(1, min(rows, 1 << 16))
    samples = [np.resize(probe_values(dtype, max(n, 64) + 7), rows * n).reshape(rows, n),
               np.full((rows, n), -0.0, dtype)]
    samples += [(rng.standard_normal((rows, n)) * scale).astype(dtype) for scale in (1.0, 1e4)]
    samples.append((rng.standard_normal((rows, n)) * 10.0 ** rng.integers(-3, 5, (rows, n))).astype(dtype))
    for x in samples:
        with np.errstate(all="ignore"):
            if not same_bits(pairwise_sum(x), np.add.reduce(x, -1)):
                return f"self-test: the inline sum differs from NumPy's add.reduce over rows of {n}"
    return ""
