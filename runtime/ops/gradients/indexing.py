"""Gradient rules of x[index] and the functional x[index] = v (runtime/ops/indexing.py).

The cotangent of a gather is a scatter-add of g into zeros of x's shape: the
`getitem_grad` op below, which adds (not assigns) so that an index naming the same
element twice passes it both contributions.
"""
import numpy as np

from ..dispatch import apply
from ..indexing import decode_index
from ..registry import OpDef, facet, get_op, register
from ..rules import Spec, dtype_of, shape_of
from .support import takes_gradient, unbroadcast
from ..samples import sample_array


def _getitem_grad_kernel(xp, g, x, *inputs, index):
    out = xp.zeros(x.shape, dtype=g.dtype)
    where = decode_index(index, inputs)
    if any(getattr(v, "ndim", 0) and v.dtype.kind != "b" for v in inputs):
        _add_at(xp)(out, where, g)           # integer arrays may repeat an element
    else:
        out[where] = g
    return out


def _add_at(xp):
    at = getattr(xp.add, "at", None)
    if at is not None:
        return at
    import cupyx
    return cupyx.scatter_add


def _getitem_grad_infer(g, x, *inputs, index):
    return Spec(shape_of(x), dtype_of(g))


def _getitem_grad_samples():
    g3, x = sample_array((3, 2)), sample_array((4, 2))

    def oracle(index):
        def run(g, x):
            out = np.zeros(x.shape, g.dtype)
            np.add.at(out, index, g)
            return out
        return run
    twice = np.array([2, 0, 2])
    return [dict(fn=lambda g, x, i: apply(_getitem_grad, (g, x, i), {"index": [{"$": 1}]}), args=(g3, x, twice),
                 oracle=lambda g, x, i: oracle(i)(g, x)),
            dict(fn=lambda g, x: apply(_getitem_grad, (g, x), {"index": [["slice", 1, None, None]]}),
                 args=(g3, x), oracle=oracle(slice(1, None)))]


_getitem_grad = register(OpDef("getitem_grad", _getitem_grad_kernel, _getitem_grad_infer,
                               scatters_cotangent=True, example=_getitem_grad_samples))


@facet("getitem", "vjp")
def _getitem_vjp(g, inputs, outputs, index):
    x, rest = inputs[0], inputs[1:]
    gx = apply(_getitem_grad, (g, x, *rest), {"index": index}) if takes_gradient(x) else None
    return (gx,) + (None,) * len(rest)


@facet("getitem_grad", "vjp")
def _getitem_grad_vjp(g, inputs, outputs, index):
    rest = inputs[2:]
    return (apply(get_op("getitem"), (g, *rest), {"index": index}), None) + (None,) * len(rest)


@facet("setitem", "vjp")
def _setitem_vjp(g, inputs, outputs, index):
    """x keeps g outside the written elements; value gets what g holds where it was written
    (for an integer index naming one element twice, the last write wins, as in the forward)."""
    x, value, rest = inputs[0], inputs[1], inputs[2:]
    gx = apply(get_op("setitem"), (g, 0, *rest), {"index": index}) if takes_gradient(x) else None
    gv = None
    if takes_gradient(value):
        gv = unbroadcast(apply(get_op("getitem"), (g, *rest), {"index": index}), value)
    return (gx, gv) + (None,) * len(rest)



def scatter_rows(g, weight, ids):
    """Zeros of weight's shape with g's rows added at `ids` (the cotangent of weight[ids])."""
    return apply(_getitem_grad, (g, weight, ids), {"index": [{"$": 1}]})
