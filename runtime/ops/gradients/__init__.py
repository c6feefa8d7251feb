"""Gradient rules (VJPs) of the registered ops, one module per op family.

Importing this package attaches a `vjp` facet to every differentiable op and marks
the others `differentiable=False`; see docs/architecture.md, "Gradient rules".
"""
from . import support, elementwise, reduction, manipulation, indexing, linalg, nn, creation, control  # noqa: F401
from .support import NO_RULE_YET, no_rule_yet, nondifferentiable, unbroadcast  # noqa: F401

no_rule_yet("being written (wt-rules)",
            "argsort", "bincount", "broadcast_arrays", "conv2d", "conv_transpose2d", "count_nonzero", "cumulative",
            "diff", "elu", "erf", "fft", "fftfreq", "fftshift", "leaky_relu", "linalg_cholesky",
            "linalg_cross", "linalg_det", "linalg_diagonal", "linalg_eigh", "linalg_eigvalsh", "linalg_inv",
            "linalg_matrix_norm", "linalg_matrix_power", "linalg_matrix_rank", "linalg_outer", "linalg_pinv",
            "linalg_qr", "linalg_slogdet", "linalg_solve", "linalg_svd", "linalg_svdvals", "linalg_trace",
            "linalg_vector_norm", "logsumexp", "max_pool2d", "meshgrid", "moveaxis", "nonzero", "one_hot", "pad",
            "repeat", "roll", "scatter", "searchsorted", "silu", "softplus", "sort", "split", "take",
            "take_along_axis", "tile", "topk", "tril", "triu", "unique_all", "unique_counts", "unique_inverse",
            "unique_values", "unstack")
