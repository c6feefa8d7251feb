"""Gradient rules of the selection ops (runtime/ops/selection.py): a gather's cotangent is
g scatter-added to where each element came from; index inputs take none."""
from ..dispatch import apply
from ..registry import facet, get_op
from .support import (cast_like, element_indices, gather_back, nondifferentiable, norm_axes, rt, takes_gradient,
                      unbroadcast)

nondifferentiable("one_hot", "nonzero", "count_nonzero")


def _gather(name):
    """Register the rule of a gather op(x, indices, **attrs)."""
    def vjp(g, inputs, outputs, **attrs):
        x, indices = inputs
        if not takes_gradient(x):
            return None, None
        source = apply(get_op(name), (element_indices(x), indices), attrs)
        return gather_back(g, x, source), None
    vjp.__name__ = f"{name}_vjp"
    facet(name, "vjp")(vjp)


_gather("take")
_gather("take_along_axis")


@facet("scatter", "vjp")
def _scatter_vjp(g, inputs, outputs, axis=0, reduce="set"):
    """"set" overwrites: x keeps g outside the written places (an index naming one place twice
    passes g to each of its writes); "add" passes g to x everywhere."""
    x, index, src = inputs
    gx = None
    if takes_gradient(x):
        gx = g if reduce == "add" else apply(get_op("scatter"), (g, index, 0), {"axis": axis, "reduce": "set"})
    gsrc = None
    if takes_gradient(src):
        gsrc = unbroadcast(rt.take_along_axis(g, index, axis=axis), src)
    return gx, None, gsrc


@facet("bincount", "vjp")
def _bincount_vjp(g, inputs, outputs, minlength=0):
    x, weights = inputs
    return None, (cast_like(rt.take(g, x, axis=0), weights) if takes_gradient(weights) else None)


@facet("cumulative", "vjp")
def _cumulative_vjp(g, inputs, outputs, axis=None, dtype=None, include_initial=False, kind="sum"):
    """A cumulative sum taken from the end; for products, of g * out, over x (exact where x
    has no zeros)."""
    (x,) = inputs
    if not takes_gradient(x):
        return (None,)
    a = norm_axes(0 if axis is None else axis, x.ndim)[0]
    lead = (slice(None),) * a
    if include_initial:
        g, outputs = g[lead + (slice(1, None),)], outputs[lead + (slice(1, None),)]
    carried = g if kind == "sum" else g * outputs
    back = rt.flip(rt.cumsum(rt.flip(carried, axis=a), axis=a), axis=a)
    return (cast_like(back if kind == "sum" else back / x, x),)
