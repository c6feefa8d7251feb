"""`rt.linalg`: the array API's linear-algebra extension (NumPy's `numpy.linalg` names and results).

Every function is one op (see runtime/ops/decompositions.py), so it runs eagerly,
traces into a Program and runs there on NumPy or CuPy alike.
"""
from .ops.decompositions import (cholesky, cross, det, diagonal, eigh, eigvalsh, inv, matrix_norm, matrix_power,
                                 matrix_rank, outer, pinv, qr, slogdet, solve, svd, svdvals, trace, vector_norm)
from .ops.linalg import matmul, tensordot, vecdot
from .ops.rearrange import matrix_transpose

__all__ = ["cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul", "matrix_norm",
           "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv", "qr", "slogdet", "solve", "svd",
           "svdvals", "tensordot", "trace", "vecdot", "vector_norm"]
