"""What every gradient rule leans on: the `unbroadcast` op, the non-differentiable marker,
and small helpers that decide whether an input takes a cotangent at all.

Rules are written with runtime functions only (the `rt` namespace below), so one rule
runs eagerly, records backward ops while tracing, and runs on every backend.
"""
from types import SimpleNamespace

from ...tensor import Tensor
from ...tracer import Tracer
from .. import FUNCTIONS
from ..dispatch import apply
from ..registry import OpDef, facet, get_op, register
from ..rules import Spec, dtype_of, shape_of
from ..samples import sample_array

rt = SimpleNamespace(**FUNCTIONS)

# Differentiable ops whose rule is not written yet, op name -> why (empty today): an engine
# can report the reason, and tests/unit/test_gradients.py accepts exactly these.
NO_RULE_YET = {}


def nondifferentiable(*names):
    """Mark ops through which no gradient flows (comparisons, argmax, integer and creation ops)."""
    for name in names:
        opdef = get_op(name)
        if opdef.vjp is not None:
            raise ValueError(f"op {name!r} has a gradient rule; it cannot also be non-differentiable")
        opdef.differentiable = False


def is_array(x):
    return isinstance(x, (Tensor, Tracer))


def takes_gradient(x):
    """A floating (or complex) array input: one that gets a cotangent. Literals and ints do not."""
    return is_array(x) and x.dtype.kind in "fc"


def unbroadcast(g, x):
    """The cotangent g of a broadcast result, summed back to x's shape and cast to x's dtype;
    None when x takes no gradient."""
    if not takes_gradient(x):
        return None
    if tuple(shape_of(g)) == tuple(shape_of(x)) and -1 not in shape_of(x) and g.dtype == x.dtype:
        return g
    return apply(_unbroadcast, (g, x), {})


def cast_like(g, x):
    """g in x's dtype (a cotangent has its input's dtype); None when x takes no gradient."""
    if not takes_gradient(x):
        return None
    return g if g.dtype == x.dtype else rt.astype(g, x.dtype)


def norm_axes(axis, ndim):
    """`axis` (None, int or tuple) as a sorted tuple of non-negative axes of an ndim array."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int) else axis
    return tuple(sorted(int(a) % max(ndim, 1) for a in axes))


def broadcast_back(g, x, axis, keepdims):
    """The cotangent of a reduction over `axis`, spread back over x's shape."""
    if not keepdims:
        axes = norm_axes(axis, x.ndim)
        if axes:
            g = rt.expand_dims(g, axes)
    return rt.broadcast_to(g, rt.shape(x))


def count(x, axis):
    """The number of elements a reduction over `axis` folds into one: a Python int, or for
    unknown dims a scalar of x's dtype (so dividing by it keeps x's precision)."""
    n = 1
    for a in norm_axes(axis, x.ndim):
        n = n * rt.shape(x)[a]
    return n if isinstance(n, int) else rt.astype(n, x.dtype)


def size_of(x):
    """x's element count: a Python int, or a symbolic int for unknown dims."""
    n = 1
    for d in rt.shape(x):
        n = n * d
    return n


def element_indices(x):
    """An int64 array of x's shape holding each element's flat index: run through an op that
    only moves elements, it tells where every output element came from."""
    return rt.reshape(rt.arange(size_of(x)), rt.shape(x))


def gather_back(g, x, source):
    """x's cotangent when output element k is x.flat[source.flat[k]] (source < 0: a filled-in
    element that came from no input): g scatter-added to its sources."""
    if not takes_gradient(x):
        return None
    source = rt.reshape(source, (-1,))
    valid = rt.greater_equal(source, 0)
    flat_g = rt.where(valid, rt.reshape(g, (-1,)), 0)
    flat = apply(get_op("getitem_grad"), (flat_g, rt.reshape(x, (-1,)), rt.where(valid, source, 0)),
                 {"index": [{"$": 1}]})
    return cast_like(rt.reshape(flat, rt.shape(x)), x)


def as_tuple(value):
    return value if isinstance(value, tuple) else (value,)


def zeros_for_missing(gs, outputs):
    """The cotangents of several outputs, with zeros where none flowed (None)."""
    return [rt.zeros_like(o) if g is None else g for g, o in zip(as_tuple(gs), as_tuple(outputs))]


# --- the unbroadcast op ----------------------------------------------------------------

def _unbroadcast_kernel(xp, g, x):
    shape = x.shape
    extra = g.ndim - len(shape)
    axes = tuple(range(extra)) + tuple(extra + i for i, d in enumerate(shape) if d == 1 and g.shape[extra + i] != 1)
    if axes:
        g = xp.sum(g, axis=axes, keepdims=True)
    g = xp.reshape(g, shape)
    return xp.asarray(g).astype(x.dtype, copy=False)


def _unbroadcast_infer(g, x):
    gs, xs = shape_of(g), shape_of(x)
    if len(gs) < len(xs) or any(a != b and -1 not in (a, b) and b != 1 for a, b in zip(gs[len(gs) - len(xs):], xs)):
        raise ValueError(f"unbroadcast: {tuple(gs)} is not a broadcast of {tuple(xs)}")
    return Spec(tuple(xs), dtype_of(x))


def _unbroadcast_samples():
    g, x = sample_array((4, 2, 3)), sample_array((2, 1), "float64")
    return [dict(fn=lambda g, x: apply(_unbroadcast, (g, x), {}), args=(g, x),
                 oracle=lambda g, x: g.sum(axis=(0, 2), keepdims=True)[0].astype(x.dtype)),
            dict(fn=lambda g, x: apply(_unbroadcast, (g, x), {}), args=(g, sample_array((3,))),
                 oracle=lambda g, x: g.sum(axis=(0, 1))),
            dict(fn=lambda g, x: apply(_unbroadcast, (g, x), {}), args=(g, sample_array((4, 2, 3))),
                 oracle=lambda g, x: g)]


_unbroadcast = register(OpDef("unbroadcast", _unbroadcast_kernel, _unbroadcast_infer, example=_unbroadcast_samples))


@facet("unbroadcast", "vjp")
def _unbroadcast_vjp(g, inputs, outputs):
    grad, x = inputs
    return (rt.broadcast_to(cast_like(g, grad), rt.shape(grad)) if takes_gradient(grad) else None), None
