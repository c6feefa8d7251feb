"""`rt.linalg`: the array API's linear-algebra extension (NumPy's `numpy.linalg` names and results).

Every function is one op (see runtime/ops/decompositions.py), so it runs eagerly,
traces into a Program and runs there on NumPy or CuPy alike.
"""
import functools

from .ops import decompositions
from .ops.decompositions import (cholesky, cross, det, diagonal, eigh, eigvalsh, inv, matrix_norm, matrix_power,
                                 matrix_rank, outer, pinv, qr, slogdet, solve, svd, svdvals, trace)
from .ops.linalg import matmul, tensordot, vecdot
from .ops.rearrange import matrix_transpose, moveaxis


def _dims(dim):
    return tuple(int(d) for d in dim) if isinstance(dim, (list, tuple)) else dim


def vector_norm(x, ord=2, dim=None, keepdim=False, *, axis=None, keepdims=False, dtype=None):
    """The array API's vector_norm(x, axis=, keepdims=, ord=); PyTorch's (x, ord, dim, keepdim, dtype=) too."""
    if dim is not None:
        if axis is not None:
            raise TypeError("vector_norm: give axis= (the array API's spelling) or dim= (PyTorch's), not both")
        axis = dim
    x = x if dtype is None else x.astype(dtype)
    return decompositions.vector_norm(x, axis=_dims(axis), keepdims=bool(keepdims or keepdim), ord=ord)


def norm(x, ord=None, dim=None, keepdim=False, *, dtype=None):
    """PyTorch's linalg.norm: a vector norm over one dim (or of a 1-D x), a matrix norm over two dims (or of a
    2-D x; the Frobenius norm when ord is None)."""
    dims = _dims(dim)
    if dims is None:
        dims = tuple(range(x.ndim)) if x.ndim <= 2 else None
        if dims is None:
            raise ValueError(f"linalg.norm: give dim for a {x.ndim}-D tensor (or use vector_norm)")
    if isinstance(dims, int) or len(dims) == 1:
        return vector_norm(x, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
    if ord is None or ord == "fro":
        return vector_norm(x, 2, dims, keepdim, dtype=dtype)
    out = matrix_norm(moveaxis(x, dims, (-2, -1)), keepdims=keepdim, ord=ord)
    return moveaxis(out, (-2, -1), dims) if keepdim else out


def multi_dot(tensors):
    """The matrices multiplied in order (left to right)."""
    return functools.reduce(matmul, list(tensors))

__all__ = ["cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul", "matrix_norm",
           "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv", "qr", "slogdet", "solve", "svd",
           "svdvals", "tensordot", "trace", "vecdot", "vector_norm", "norm", "multi_dot"]
