"""Gradient rules of the shape ops (runtime/ops/manipulation.py): each undoes its own move."""
from ..registry import facet
from .support import cast_like, count, nondifferentiable, norm_axes, rt, takes_gradient, unbroadcast

nondifferentiable("dim")


def _no_grads(n):
    return (None,) * n


@facet("reshape", "vjp")
def _reshape_vjp(g, inputs, outputs):
    x = inputs[0]
    gx = rt.reshape(g, rt.shape(x)) if takes_gradient(x) else None
    return (gx,) + _no_grads(len(inputs) - 1)


@facet("squeeze", "vjp")
def _squeeze_vjp(g, inputs, outputs, axis=None):
    (x,) = inputs
    return (rt.reshape(g, rt.shape(x)) if takes_gradient(x) else None,)


@facet("expand_dims", "vjp")
def _expand_dims_vjp(g, inputs, outputs, axis):
    (x,) = inputs
    return (rt.squeeze(g, norm_axes(axis, outputs.ndim)) if takes_gradient(x) else None,)


@facet("permute_dims", "vjp")
def _permute_dims_vjp(g, inputs, outputs, axes=None):
    (x,) = inputs
    if not takes_gradient(x):
        return (None,)
    order = tuple(reversed(range(x.ndim))) if axes is None else tuple(a % x.ndim for a in axes)
    inverse = tuple(sorted(range(len(order)), key=order.__getitem__))
    return (rt.permute_dims(g, inverse),)


@facet("broadcast_to", "vjp")
def _broadcast_to_vjp(g, inputs, outputs):
    return (unbroadcast(g, inputs[0]),) + _no_grads(len(inputs) - 1)


@facet("flip", "vjp")
def _flip_vjp(g, inputs, outputs, axis=None):
    (x,) = inputs
    return (rt.flip(g, axis=axis) if takes_gradient(x) else None,)


@facet("concat", "vjp")
def _concat_vjp(g, inputs, outputs, axis=0):
    """Each input's cotangent is its own slice of g (flattened ones get their shape back)."""
    grads, start = [], 0
    for x in inputs:
        if axis is None:
            size = count(x, None)
            piece = rt.reshape(g[start:start + size], rt.shape(x)) if takes_gradient(x) else None
        else:
            size = rt.shape(x)[axis]
            lead = (slice(None),) * (axis % x.ndim)
            piece = g[lead + (slice(start, start + size),)] if takes_gradient(x) else None
        grads.append(cast_like(piece, x) if piece is not None else None)
        start = start + size
    return tuple(grads)


@facet("stack", "vjp")
def _stack_vjp(g, inputs, outputs, axis=0):
    lead = (slice(None),) * (axis % outputs.ndim)
    return tuple(cast_like(g[lead + (i,)], x) if takes_gradient(x) else None for i, x in enumerate(inputs))
