"""Gradient rules (VJPs) of the registered ops, one module per op family.

Importing this package attaches a `vjp` facet to every differentiable op and marks
the others `differentiable=False`; see docs/architecture.md, "Gradient rules".
"""
from . import support  # noqa: F401  (first: the ops the rules use)
from . import (activations, control, creation, elementwise, indexing, linalg, manipulation, nn,  # noqa: F401
               rearrange, reduction, selection, sorting, spectral)
from .support import NO_RULE_YET, no_rule_yet, nondifferentiable, unbroadcast  # noqa: F401

no_rule_yet("being written (wt-rules)",
            "conv2d", "conv_transpose2d", "max_pool2d", "linalg_cholesky",
            "linalg_cross", "linalg_det", "linalg_diagonal", "linalg_eigh", "linalg_eigvalsh", "linalg_inv",
            "linalg_matrix_norm", "linalg_matrix_power", "linalg_matrix_rank", "linalg_outer", "linalg_pinv",
            "linalg_qr", "linalg_slogdet", "linalg_solve", "linalg_svd", "linalg_svdvals", "linalg_trace",
            "linalg_vector_norm")
