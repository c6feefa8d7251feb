"""Gradient rules of the reductions (runtime/ops/reduction.py): the cotangent is spread back
over the reduced axes; max/min share it among the elements that reached the extremum."""
from ..registry import facet
from .support import broadcast_back, cast_like, count, nondifferentiable, norm_axes, rt, takes_gradient

nondifferentiable("any", "all", "argmax", "argmin")


@facet("sum", "vjp")
def _sum_vjp(g, inputs, outputs, axis=None, keepdims=False, dtype=None):
    (x,) = inputs
    if not takes_gradient(x):
        return (None,)
    return (cast_like(broadcast_back(g, x, axis, keepdims), x),)


@facet("mean", "vjp")
def _mean_vjp(g, inputs, outputs, axis=None, keepdims=False):
    (x,) = inputs
    if not takes_gradient(x):
        return (None,)
    return (cast_like(broadcast_back(g, x, axis, keepdims) / count(x, axis), x),)


@facet("prod", "vjp")
def _prod_vjp(g, inputs, outputs, axis=None, keepdims=False, dtype=None):
    """g times the product of the other elements, from products before and after each element
    along the reduced axes (flattened into one): exact also where x holds zeros."""
    (x,) = inputs
    if not takes_gradient(x):
        return (None,)
    axes = norm_axes(axis, x.ndim)
    if not axes:
        return (cast_like(g, x),)
    kept = [a for a in range(x.ndim) if a not in axes]
    order = tuple(kept + list(axes))
    kept_shape = tuple(rt.shape(x)[a] for a in kept)
    moved = rt.permute_dims(x, order)
    flat = rt.reshape(moved, kept_shape + (-1,))
    before = rt.cumulative_prod(flat, axis=-1, include_initial=True)[..., :-1]
    after = rt.flip(rt.cumulative_prod(rt.flip(flat, axis=-1), axis=-1, include_initial=True)[..., :-1], axis=-1)
    spread = before * after * rt.reshape(g, kept_shape + (1,))
    back = rt.reshape(spread, rt.shape(moved))
    inverse = tuple(sorted(range(x.ndim), key=order.__getitem__))
    return (cast_like(rt.permute_dims(back, inverse), x),)


def _extremum_vjp(g, inputs, outputs, axis=None, keepdims=False):
    (x,) = inputs
    if not takes_gradient(x):
        return (None,)
    hit = rt.equal(x, broadcast_back(outputs, x, axis, keepdims))
    ties = rt.sum(rt.astype(hit, x.dtype), axis=norm_axes(axis, x.ndim), keepdims=True)
    share = rt.where(hit, broadcast_back(g, x, axis, keepdims), 0) / ties
    return (cast_like(share, x),)


facet("max", "vjp")(_extremum_vjp)
facet("min", "vjp")(_extremum_vjp)


@facet("var", "vjp")
def _var_vjp(g, inputs, outputs, axis=None, keepdims=False, correction=0.0):
    (x,) = inputs
    if not takes_gradient(x):
        return (None,)
    centered = x - rt.mean(x, axis=norm_axes(axis, x.ndim), keepdims=True)
    scale = 2.0 / (count(x, axis) - correction)
    return (cast_like(broadcast_back(g, x, axis, keepdims) * centered * scale, x),)


@facet("std", "vjp")
def _std_vjp(g, inputs, outputs, axis=None, keepdims=False, correction=0.0):
    (x,) = inputs
    if not takes_gradient(x):
        return (None,)
    centered = x - rt.mean(x, axis=norm_axes(axis, x.ndim), keepdims=True)
    spread = broadcast_back(g / outputs, x, axis, keepdims)
    return (cast_like(spread * centered / (count(x, axis) - correction), x),)


@facet("cumsum", "vjp")
def _cumsum_vjp(g, inputs, outputs, axis=None):
    """Each input element feeds every later output: a cumulative sum of g taken from the end."""
    (x,) = inputs
    if not takes_gradient(x):
        return (None,)
    along = 0 if axis is None else axis
    back = rt.flip(rt.cumsum(rt.flip(g, axis=along), axis=along), axis=along)
    if axis is None:
        back = rt.reshape(back, rt.shape(x))
    return (cast_like(back, x),)
