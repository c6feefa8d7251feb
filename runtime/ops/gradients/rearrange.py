"""Gradient rules of the rearranging ops (runtime/ops/rearrange.py). Ops that only copy
elements (tile, repeat, pad) send g back to where each element came from, found by
running the op on element indices (`gather_back`)."""
from ..dispatch import apply
from ..registry import facet, get_op
from .support import (as_tuple, cast_like, element_indices, gather_back, norm_axes, rt, takes_gradient,
                      unbroadcast, zeros_for_missing)


@facet("moveaxis", "vjp")
def _moveaxis_vjp(g, inputs, outputs, source, destination):
    (x,) = inputs
    return (rt.moveaxis(g, destination, source) if takes_gradient(x) else None,)


@facet("roll", "vjp")
def _roll_vjp(g, inputs, outputs, shift, axis=None):
    (x,) = inputs
    back = -shift if isinstance(shift, int) else tuple(-s for s in shift)
    return (rt.roll(g, back, axis=axis) if takes_gradient(x) else None,)


def _copying(name):
    """Register the rule of an op that only copies elements of its first input."""
    def vjp(g, inputs, outputs, **attrs):
        x = inputs[0]
        source = None
        if takes_gradient(x):
            source = apply(get_op(name), (element_indices(x),) + tuple(inputs[1:]), _index_attrs(name, attrs))
        return (gather_back(g, x, source) if source is not None else None,) + (None,) * (len(inputs) - 1)
    vjp.__name__ = f"{name}_vjp"
    facet(name, "vjp")(vjp)


def _index_attrs(name, attrs):
    """The op's attrs for a run on element indices: padding there marks filled-in elements with -1."""
    if name == "pad":
        return {**attrs, "constant_values": -1}
    return attrs


_copying("tile")
_copying("repeat")
_copying("pad")


@facet("tril", "vjp")
def _tril_vjp(g, inputs, outputs, k=0):
    return (rt.tril(g, k=k) if takes_gradient(inputs[0]) else None,)


@facet("triu", "vjp")
def _triu_vjp(g, inputs, outputs, k=0):
    return (rt.triu(g, k=k) if takes_gradient(inputs[0]) else None,)


@facet("diff", "vjp")
def _diff_vjp(g, inputs, outputs, axis=-1, n=1, prepend=False, append=False):
    """diff is linear: each order sends g[i] to +x[i+1] and -x[i]; the joined array is split back
    into prepend, x and append (a scalar or lower-rank one sums its broadcast slice)."""
    x = inputs[0]
    a = norm_axes(axis, x.ndim)[0]
    widths = [(0, 0)] * g.ndim
    for _ in range(n):
        before, after = list(widths), list(widths)
        before[a], after[a] = (1, 0), (0, 1)
        g = rt.pad(g, before) - rt.pad(g, after)
    lead = (slice(None),) * a
    start, grads = 0, []
    parts = [(inputs[1], True)] if prepend else []
    parts.append((x, False))
    if append:
        parts.append((inputs[-1], True))
    for value, extra in parts:
        full_rank = not extra or (getattr(value, "ndim", 0) == x.ndim)
        size = rt.shape(value)[a] if full_rank else 1
        piece = g[lead + (slice(start, start + size),)]
        start = start + size
        grads.append(unbroadcast(piece if full_rank else rt.squeeze(piece, a), value)
                     if takes_gradient(value) else None)
    if prepend:
        return (grads[1], grads[0]) + tuple(grads[2:])
    return tuple(grads)


@facet("unstack", "vjp")
def _unstack_vjp(g, inputs, outputs, axis=0):
    (x,) = inputs
    return (cast_like(rt.stack(zeros_for_missing(g, outputs), axis=axis), x) if takes_gradient(x) else None,)


@facet("split", "vjp")
def _split_vjp(g, inputs, outputs, sections, axis=0):
    (x,) = inputs
    return (cast_like(rt.concat(zeros_for_missing(g, outputs), axis=axis), x) if takes_gradient(x) else None,)


@facet("meshgrid", "vjp")
def _meshgrid_vjp(g, inputs, outputs, indexing="xy"):
    """Output i is input i spread along the other axes: sum them away."""
    grads = []
    for i, (x, gi) in enumerate(zip(inputs, as_tuple(g))):
        if gi is None or not takes_gradient(x):
            grads.append(None)
            continue
        axis = (1 - i if i < 2 else i) if indexing == "xy" and len(inputs) > 1 else i
        others = tuple(a for a in range(gi.ndim) if a != axis)
        grads.append(cast_like(rt.sum(gi, axis=others) if others else gi, x))
    return tuple(grads)


@facet("broadcast_arrays", "vjp")
def _broadcast_arrays_vjp(g, inputs, outputs):
    return tuple(None if gi is None else unbroadcast(gi, x) for gi, x in zip(as_tuple(g), inputs))
