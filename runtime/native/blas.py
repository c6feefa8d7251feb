"""The CBLAS NumPy links, for native code to call with the arguments NumPy's matmul passes.

NumPy's wheels bundle scipy-openblas (symbols `scipy_cblas_sgemv64_`, ... with 64-bit ints; other
builds link `cblas_sgemv`): the symbols are looked up through NumPy's own extension module, so the
library found is the one NumPy calls. `product_call(dtype, m, k, n)` says which call NumPy's matmul
makes for C-contiguous operands (m, k) @ (k, n) — dot for one number, gemv for one row or one column,
gemm otherwise, and no BLAS at all where k == 1 — and returns it only when calling it gives
np.matmul's bits on that shape (checked once per shape, on special and random values); else the
product stays on NumPy.
"""
import ctypes
import threading
import time

import numpy as np
from numpy._core import _multiarray_umath

from . import disk_cache
from .numpy_loops import probe_values, same_bits

ROW_MAJOR, COL_MAJOR, NO_TRANS, TRANS = 101, 102, 111, 112
_PREFIX = {np.dtype("float32"): "s", np.dtype("float64"): "d"}
_NAMES = ("scipy_cblas_{}64_", "cblas_{}64_", "scipy_cblas_{}", "cblas_{}")

_STATE = {}
_LOCK = threading.Lock()
_CHECKED = {}
_COPIED = {}
# the copy of b.T is made once per call (and only from a loop's second product on): not for huge weights
MAX_COPIED = 1 << 18


class Symbol:
    """One CBLAS function: its address, the integer type of its sizes, and a ctypes way to call it."""

    def __init__(self, address, int_type, ctype, name=""):
        self.address, self.int_type, self.name = address, int_type, name      # name: 'sgemm', ...
        self.call = ctype(address)


def symbol(name):
    """The CBLAS function `name` ('sgemv', 'dgemm', ...) NumPy calls, or None."""
    with _LOCK:
        if "library" not in _STATE:
            try:
                _STATE["library"] = ctypes.CDLL(_multiarray_umath.__file__)
            except OSError:
                _STATE["library"] = None
        if name not in _STATE:
            _STATE[name] = _find(_STATE["library"], name)
        return _STATE[name]


def _find(library, name):
    if library is None:
        return None
    for pattern in _NAMES:
        full = pattern.format(name)
        try:
            fn = getattr(library, full)
        except AttributeError:
            continue
        int_type = ctypes.c_int64 if full.endswith("64_") else ctypes.c_int32
        real = ctypes.c_float if name[0] == "s" else ctypes.c_double
        p = ctypes.c_void_p
        if name.endswith("dot"):
            args = [int_type, p, int_type, p, int_type]
            return Symbol(ctypes.cast(fn, ctypes.c_void_p).value, int_type, ctypes.CFUNCTYPE(real, *args), name)
        if name.endswith("gemv"):
            args = [ctypes.c_int, ctypes.c_int, int_type, int_type, real, p, int_type, p, int_type, real, p, int_type]
        else:
            args = [ctypes.c_int, ctypes.c_int, ctypes.c_int, int_type, int_type, int_type, real, p, int_type, p,
                    int_type, real, p, int_type]
        ctype = ctypes.CFUNCTYPE(None, *args)
        return Symbol(ctypes.cast(fn, ctypes.c_void_p).value, int_type, ctype, name)
    return None


def product_call(dtype, m, k, n, transposed=False, verify=True, a_transposed=False):
    """(symbol, arguments) of NumPy's BLAS call for C-contiguous (m, k) @ (k, n) of dtype (with
    `transposed`, (m, k) @ b.T for a C-contiguous b of shape (n, k): `linear`; with `a_transposed`, a.T @ b
    for a C-contiguous a of shape (k, m): NumPy reads that view as a transposed row-major matrix), the
    operand slots named 'a', 'b', 'out'; or a string saying why the product is not native. With
    verify=False the symbol is None and the self-test is left for a later call (what the caller may ask on
    a plan's first call must be cheap)."""
    dtype = np.dtype(dtype)
    if dtype not in _PREFIX:
        return f"matmul of {dtype} (BLAS takes float32 and float64)"
    if min(m, k, n) < 1 or k == 1:
        return f"matmul of shape ({m}, {k}) @ ({k}, {n}) takes no BLAS call in NumPy"
    if max(m, k, n) > (1 << 30):
        return "matmul too big for one BLAS call"
    p = _PREFIX[dtype]
    if a_transposed:        # a gemm only: a vector's or a column's product is another call (not native yet)
        if m == 1 or n == 1:
            return f"matmul of a transposed ({k}, {m}) by ({k}, {n}): a vector product (not native yet)"
        call = (p + "gemm", [ROW_MAJOR, TRANS, TRANS if transposed else NO_TRANS, m, n, k, 1.0, "a", m, "b",
                             k if transposed else n, 0.0, "out", n])
    elif m == 1 and n == 1:               # row @ column: NumPy's dot of the k numbers, one sdot/ddot call
        call = (p + "dot", [k, "a", 1, "b", 1])
    elif m == 1 and not transposed:     # vector @ matrix: gemv on the matrix, row-major, transposed
        call = (p + "gemv", [ROW_MAJOR, TRANS, k, n, 1.0, "b", n, "a", 1, 0.0, "out", 1])
    elif m == 1:                        # vector @ b.T: b read column-major is b.T, transposed
        call = (p + "gemv", [COL_MAJOR, TRANS, k, n, 1.0, "b", k, "a", 1, 0.0, "out", 1])
    elif n == 1:        # matrix @ vector (a column, or b.T of one row: the same k numbers)
        call = (p + "gemv", [COL_MAJOR, TRANS, k, m, 1.0, "a", k, "b", 1, 0.0, "out", 1])
    else:
        call = (p + "gemm", [ROW_MAJOR, NO_TRANS, TRANS if transposed else NO_TRANS, m, n, k, 1.0, "a", k, "b",
                             k if transposed else n, 0.0, "out", n])
    key = (dtype.str, m, k, n, transposed) + (("a.T",) if a_transposed else ())
    if not verify:          # the caller runs the self-test later (the compiler thread), before the call is used
        return (None, call[1])
    if key not in _CHECKED:
        _CHECKED[key] = disk_cache.remembered(["blas", call[0], *key], lambda: _self_test(
            dtype, m, k, n, transposed, call, a_transposed=a_transposed), "")
    why = _CHECKED[key]
    return why if why else (symbol(call[0]), call[1])


def copied_transpose_call(dtype, m, k, n):
    """(symbol, arguments) of a gemm on a C-contiguous copy of b.T (shape (k, n), in slot 'b') for
    (m, k) @ b.T with b of shape (n, k) -- the product `linear` makes -- when it gives np.matmul(a, b.T)'s
    bits on that shape (self-tested as product_call's) and runs faster here than NumPy's own call; else why
    not. Why: OpenBLAS's small-matrix sgemm for a transposed b is 2.5-4x slower than for a plain one at the
    shapes of recurrent cells (8x64 @ (256x64).T: 39 vs 16 µs on AVX-512), each output being the same sum
    in the same order; a loop that multiplies by the same weight every iteration copies it once."""
    dtype = np.dtype(dtype)
    if dtype not in _PREFIX or m < 2 or n < 2 or k < 2 or n * k > MAX_COPIED or max(m, k, n) > (1 << 30):
        return f"no copied-transpose gemm for ({m}, {k}) @ ({n}, {k}).T of {dtype}"
    key = (dtype.str, m, k, n)
    if key not in _COPIED:
        plain = product_call(dtype, m, k, n, transposed=True)
        call = (_PREFIX[dtype] + "gemm", [ROW_MAJOR, NO_TRANS, NO_TRANS, m, n, k, 1.0, "a", k, "b", n, 0.0, "out", n])
        why = plain if isinstance(plain, str) else _self_test(dtype, m, k, n, True, call, copy_b=True)
        if not why and _seconds(dtype, m, k, n, call, True) > 0.8 * _seconds(dtype, m, k, n, (None, plain[1]), False):
            why = f"gemm on a copy of b.T is not faster here for ({m}, {k}) @ ({n}, {k}).T"
        _COPIED[key] = why or (symbol(call[0]), call[1])
    return _COPIED[key]


def _seconds(dtype, m, k, n, call, copy_b, repeats=5):
    """The fastest of a few runs of 8 calls (the self-tests' thread, once per shape)."""
    fn = symbol(_PREFIX[dtype] + "gemm")
    a, b, out = np.ones((m, k), dtype), np.ones((k, n) if copy_b else (n, k), dtype), np.empty((m, n), dtype)
    slots = {"a": a.ctypes.data, "b": b.ctypes.data, "out": out.ctypes.data}
    args = [slots.get(x, x) if isinstance(x, str) else x for x in call[1]]
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(8):
            fn.call(*args)
        best = min(best, time.perf_counter() - start)
    return best


def _self_test(dtype, m, k, n, transposed, call, copy_b=False, a_transposed=False):
    """'' when the call gives np.matmul's bits on that shape (and ndarray.dot's, which the plan calls
    for contiguous operands), else why not; with `copy_b`, the call reads a C-contiguous copy of b.T; with
    `a_transposed`, slot 'a' holds a C-contiguous (k, m) array and the product is of its .T."""
    fn = symbol(call[0])
    if fn is None:
        return "the BLAS NumPy links was not found"
    rng = np.random.default_rng(7)
    for trial in range(3):
        shape = (k, m) if a_transposed else (m, k)
        if trial == 0:
            a = probe_values(dtype, m * k).reshape(shape)
            b = np.roll(probe_values(dtype, k * n), 5).reshape((n, k) if transposed else (k, n))
        else:
            a = (rng.standard_normal(shape) * 10 ** trial).astype(dtype)
            b = rng.standard_normal((n, k) if transposed else (k, n)).astype(dtype)
        with np.errstate(all="ignore"):
            view = a.T if a_transposed else a
            want = np.matmul(view, b.T if transposed else b)
            dot = want if transposed else view.dot(b)
            got = np.empty((m, n), dtype)
            operand = np.ascontiguousarray(b.T) if copy_b else b
            slots = {"a": a.ctypes.data, "b": operand.ctypes.data, "out": got.ctypes.data}
            value = fn.call(*[slots.get(x, x) if isinstance(x, str) else x for x in call[1]])
            if call[0].endswith("dot"):     # NumPy sums the chunks' dots in a double, stored as the dtype
                got[0, 0] = value
        if not (same_bits(got, want) and same_bits(got, dot)):
            return f"self-test: {call[0]} differs from NumPy's matmul on ({m}, {k}) @ ({k}, {n})"
    return ""


_FLAT = {}


def flat_product_check(dtype, batch, m, k, n, transposed):
    """'' when one 2-D matmul of the (batch * m, k) rows gives np.matmul's bits for a C-contiguous
    (*batch, m, k) @ b (b.T with `transposed`, b C-contiguous), else why not. NumPy's matmul multiplies a
    stack one (m, k) matrix at a time (50 small gemm calls for a masked LSTM's hoisted input product,
    4x the time of one call of all its rows); each output row is the same sum either way on the BLAS
    checked here (special and random values, once per shape)."""
    dtype = np.dtype(dtype)
    if dtype not in _PREFIX or min(batch, m, k, n) < 1 or batch * m * max(k, n) > (1 << 30):
        return f"no one-call product for {batch} x ({m}, {k}) @ ({k}, {n}) of {dtype}"
    key = (dtype.str, batch, m, k, n, transposed)
    if key not in _FLAT:
        _FLAT[key] = _flat_self_test(dtype, batch, m, k, n, transposed)
    return _FLAT[key]


def stacked_items_check(dtype, batch, m, k, n, transposed):
    """'' when NumPy's matmul of a C-contiguous (batch, m, k) stack by b (b.T with `transposed`) gives
    the bits of each (m, k) item's own 2-D matmul by it (so a region making NumPy's 2-D call per item,
    `product_call`, gives the stack's bits), else why not; special and random values, once per shape."""
    dtype = np.dtype(dtype)
    if dtype not in _PREFIX or min(batch, m, k, n) < 1 or batch * m * max(k, n) > (1 << 30):
        return f"no per-item product for {batch} x ({m}, {k}) @ ({k}, {n}) of {dtype}"
    key = ("items", dtype.str, batch, m, k, n, transposed)
    if key not in _FLAT:
        rng = np.random.default_rng(19)
        _FLAT[key] = ""
        for trial in range(2):
            if trial == 0:
                x = probe_values(dtype, batch * m * k).reshape(batch, m, k)
                w = np.roll(probe_values(dtype, k * n), 3).reshape((n, k) if transposed else (k, n))
            else:
                x = rng.standard_normal((batch, m, k)).astype(dtype)
                w = rng.standard_normal((n, k) if transposed else (k, n)).astype(dtype)
            operand = w.T if transposed else w
            with np.errstate(all="ignore"):
                want = np.matmul(x, operand)
                got = np.stack([np.matmul(item, operand) for item in x])
            if not same_bits(got, want):
                _FLAT[key] = (f"self-test: NumPy's stacked matmul on {batch} x ({m}, {k}) @ ({k}, {n}) is not "
                              "its items' 2-D products")
                break
    return _FLAT[key]


def flat_product_known(dtype, batch, m, k, n, transposed):
    """What flat_product_check found for that shape before ('' or why not), or None: not checked yet."""
    return _FLAT.get((np.dtype(dtype).str, batch, m, k, n, transposed))


def _flat_self_test(dtype, batch, m, k, n, transposed):
    rng = np.random.default_rng(17)
    for trial in range(3):
        if trial == 0:
            x = probe_values(dtype, batch * m * k).reshape(batch, m, k)
            w = np.roll(probe_values(dtype, k * n), 5).reshape((n, k) if transposed else (k, n))
        else:
            x = (rng.standard_normal((batch, m, k)) * 10 ** trial).astype(dtype)
            w = rng.standard_normal((n, k) if transposed else (k, n)).astype(dtype)
        operand = w.T if transposed else w
        with np.errstate(all="ignore"):
            want = np.matmul(x, operand)
            got = np.matmul(x.reshape(batch * m, k), operand).reshape(batch, m, n)
        if not same_bits(got, want):
            return f"self-test: one matmul of {batch * m} rows differs from NumPy's stacked matmul on ({m}, {k}) @ ({k}, {n})"
    return ""
