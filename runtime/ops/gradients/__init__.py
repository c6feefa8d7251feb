"""Gradient rules (VJPs) of the registered ops, one module per op family.

Importing this package attaches a `vjp` facet to every differentiable op and marks
the others `differentiable=False`; see docs/architecture.md, "Gradient rules".
"""
from . import support  # noqa: F401  (first: the ops the rules use)
from . import (activations, control, conv, creation, decompositions, elementwise, indexing, linalg,  # noqa: F401
               manipulation, nn,
               rearrange, reduction, selection, sorting, spectral)
from .support import NO_RULE_YET, nondifferentiable, unbroadcast  # noqa: F401
