"""Gradient rules of sort and topk (runtime/ops/sorting.py): values go back to the places
they were taken from. Indices, searches and unique sets carry no gradient."""
from ..registry import facet
from .support import as_tuple, element_indices, gather_back, nondifferentiable, rt, takes_gradient

nondifferentiable("argsort", "searchsorted", "unique_values", "unique_counts", "unique_inverse", "unique_all")


@facet("sort", "vjp")
def _sort_vjp(g, inputs, outputs, axis=-1, descending=False):
    (x,) = inputs
    if not takes_gradient(x):
        return (None,)
    order = rt.argsort(x, axis=axis, descending=descending)
    return (gather_back(g, x, rt.take_along_axis(element_indices(x), order, axis=axis)),)


@facet("topk", "vjp")
def _topk_vjp(g, inputs, outputs, k, axis=-1, largest=True):
    x = inputs[0]
    g_values = as_tuple(g)[0]
    if not takes_gradient(x) or g_values is None:
        return (None,) * len(inputs)
    source = rt.take_along_axis(element_indices(x), outputs[1], axis=axis)
    return (gather_back(g_values, x, source),) + (None,) * (len(inputs) - 1)
