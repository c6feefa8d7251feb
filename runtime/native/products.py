"""A matmul of a stack of matrices by one matrix (`linear` of a (T, N, K) input) as one BLAS call.

NumPy's matmul multiplies (*batch, m, k) @ (k, n) one (m, k) matrix at a time; the same rows as one
(batch * m, k) matrix are one gemm call, ~4x faster for a recurrent layer's hoisted input product, with
the same bits where `blas.flat_product_check` shows it for that shape (run in the compiler thread, as
every self-test). Where the rows are single vectors, (T, 1, k) @ (k, n), one gemm gives other bits than
NumPy's T sgemv calls; there the T products are the inline gemv of `gemv.py` (OpenBLAS's order of sums,
self-tested) in one compiled function, where it gives NumPy's bits on that shape. `FlatProduct.run(a, b[,
bias])` is None (the plan's own NumPy line runs) until the check passed, and for any call whose operands
are not the C-contiguous arrays of the shapes checked.
"""
import math

import numpy as np

from ..ir import Variable
from . import gemv
from .blas import flat_product_check, flat_product_known
from .tiering import Warming


def analyse(form, out):
    """(dtype, batch, m, k, n, transposed) of a matmul form that may run as one call, or why not."""
    _, a, b, transposed, bias = form
    if not (isinstance(a, Variable) and isinstance(b, Variable)) or a.ndim < 3 or b.ndim != 2:
        return "not a stack of matrices by one matrix"
    shapes = (a.static_shape, b.static_shape, out.static_shape) + ((bias.static_shape,) if bias is not None else ())
    if any(d < 0 for s in shapes for d in s):
        return "a dynamic shape"
    if not np.dtype(a.dtype) == np.dtype(b.dtype) == np.dtype(out.dtype) or a.dtype.kind != "f":
        return "not one float dtype"
    if bias is not None and (np.dtype(bias.dtype) != np.dtype(out.dtype) or bias.ndim > 1):
        return "a bias other than one row"
    m, k = a.static_shape[-2:]
    n = b.static_shape[0 if transposed else 1]
    return (np.dtype(a.dtype).str, math.prod(a.static_shape[:-2]), m, k, n, bool(transposed))


def product_job(key):
    """`job()` runs the self-test: '' (one BLAS call), a stacked gemv kernel, or why not; `job.cached()`
    its earlier result, else None."""
    dtype, batch, m, k, n, transposed = key
    vectors = m == 1 and not transposed and not gemv.applies(dtype, k, n)

    def job():
        why = flat_product_check(*key)
        if why and vectors:
            kernel = gemv.stacked_kernel(batch, k, n)
            return kernel if callable(kernel) else f"{why}; {kernel}"
        return why

    def cached():
        found = flat_product_known(*key)
        if found and vectors:
            return gemv.stacked_known(batch, k, n)      # None until the compiler thread made it
        return found

    job.cached = cached
    return job


class FlatProduct(Warming):
    """A plan's call of one stacked matmul: `run(a, b[, bias])`, None where the NumPy line runs instead
    (timed while the product warms: `tiering.Warming`)."""

    def __init__(self, key, a_shape, out_shape, status):
        super().__init__()
        self.key, self.status = key, status
        self.a_shape, self.out_shape = tuple(a_shape), tuple(out_shape)
        self.run = lambda *arrays: None

    def use(self, why):
        self.warm = None
        if isinstance(why, str) and why:
            self.status[1] = why
            return
        if callable(why):
            self.run = stacked_call(why, self.key, self.a_shape, self.out_shape)
            self.status[1] = "native"
            return
        self.run = flat_call(self.key, self.a_shape, self.out_shape)
        self.status[1] = "native"


def flat_call(key, a_shape, out_shape):
    dtype, _, m, k, n, transposed = key
    dtype = np.dtype(dtype)
    rows, b_shape = math.prod(a_shape[:-1]), (n, k) if transposed else (k, n)
    ndarray, matmul = np.ndarray, np.matmul

    def run(a, b, bias=None):
        if (type(a) is not ndarray or type(b) is not ndarray or a.dtype != dtype or b.dtype != dtype
                or a.shape != a_shape or b.shape != b_shape or not a.flags.c_contiguous
                or not b.flags.c_contiguous):
            return None
        out = matmul(a.reshape(rows, k), b.T if transposed else b).reshape(out_shape)
        if bias is not None:
            out += bias
        return out
    return run


def stacked_call(kernel, key, a_shape, out_shape):
    """run(a, b[, bias]) by the stacked inline gemv `kernel` (`gemv.stacked_kernel`), None for other operands."""
    dtype, _, _, k, n, _ = key
    dtype = np.dtype(dtype)
    ndarray, empty = np.ndarray, np.empty

    def run(a, b, bias=None):
        if (type(a) is not ndarray or type(b) is not ndarray or a.dtype != dtype or b.dtype != dtype
                or a.shape != a_shape or b.shape != (k, n) or not a.flags.c_contiguous
                or not b.flags.c_contiguous):
            return None
        out = empty(out_shape, dtype)
        kernel(a, b, out)
        if bias is not None:
            out += bias
        return out
    return run
