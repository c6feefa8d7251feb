"""Gradient checks for tests: central finite differences in float64, as the independent oracle."""
import numpy as np

import runtime as rt


def numeric_grad(f, arrays, eps=1e-6):
    """d f / d each array by central differences; f takes NumPy float64 arrays and returns a float."""
    grads = []
    for k, a in enumerate(arrays):
        g = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            plus = [b.copy() for b in arrays]
            minus = [b.copy() for b in arrays]
            plus[k][idx] += eps
            minus[k][idx] -= eps
            g[idx] = (f(*plus) - f(*minus)) / (2 * eps)
        grads.append(g)
    return grads


def of_tensors(fn):
    """fn over Tensors as a function of float64 arrays returning a Python float (for numeric_grad)."""
    return lambda *arrays: float(np.asarray(fn(*(rt.tensor(a) for a in arrays))))
# --- temporary gradient rules (until wt-rules lands): only the ops the engine tests need -----------
from runtime.ops.registry import get_op  # noqa: E402


def _sum_to(g, x):
    if not hasattr(x, "shape") or isinstance(x, (int, float)):
        return None
    xs = tuple(x.static_shape) if hasattr(x, "static_shape") else tuple(x.shape)
    gs = tuple(g.static_shape) if hasattr(g, "static_shape") else tuple(g.shape)
    lead = len(gs) - len(xs)
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(xs) if d == 1 and gs[lead + i] != 1)
    if axes:
        g = rt.sum(g, axis=axes, keepdims=False) if lead else g
        rest = tuple(i for i, d in enumerate(xs) if d == 1 and gs[lead + i] != 1)
        if rest:
            g = rt.sum(g, axis=rest, keepdims=True)
    return g


def _put(name, fn):
    op = get_op(name)
    if op.vjp is None:
        op.vjp = fn


def _apply(name, inputs, index):
    from runtime.ops.dispatch import apply
    return apply(get_op(name), inputs, {"index": index})


def install():
    _put("add", lambda g, i, o: (_sum_to(g, i[0]), _sum_to(g, i[1])))
    _put("subtract", lambda g, i, o: (_sum_to(g, i[0]), _sum_to(-g, i[1])))
    _put("multiply", lambda g, i, o: (_sum_to(g * i[1], i[0]), _sum_to(g * i[0], i[1])))
    _put("divide", lambda g, i, o: (_sum_to(g / i[1], i[0]), _sum_to(-g * o / i[1], i[1])))
    _put("negative", lambda g, i, o: (-g,))
    _put("tanh", lambda g, i, o: (g * (1 - o * o),))
    _put("exp", lambda g, i, o: (g * o,))
    _put("sin", lambda g, i, o: (g * rt.cos(i[0]),))
    _put("cos", lambda g, i, o: (-g * rt.sin(i[0]),))
    _put("sum", lambda g, i, o, axis=None, keepdims=False, **k: (rt.broadcast_to(g if axis is None or keepdims else rt.expand_dims(g, axis=axis), i[0].shape) if True else None,))
    _put("matmul", lambda g, i, o: (rt.matmul(g, rt.permute_dims(i[1], (1, 0))), rt.matmul(rt.permute_dims(i[0], (1, 0)), g)))
    _put("linear", lambda g, i, o: (rt.matmul(g, i[1]), rt.matmul(rt.permute_dims(g, (1, 0)), i[0]),
                                    None if i[2] is None else rt.sum(g, axis=0)))
    _put("stack", lambda g, i, o, axis=0: tuple(rt.take(g, k, axis=axis) if hasattr(rt, "take") else g[k]
                                               for k in range(len(i))))
    _put("getitem", lambda g, i, o, index: (_apply("setitem", (rt.zeros_like(i[0]), g, *i[1:]), index),)
         + (None,) * (len(i) - 1))
    _put("where", lambda g, i, o: (None, _sum_to(rt.where(i[0], g, 0.0), i[1]) if hasattr(i[1], "shape") else None,
                                   _sum_to(rt.where(i[0], 0.0, g), i[2]) if hasattr(i[2], "shape") else None))
    for name in ("greater", "less", "greater_equal", "less_equal", "equal", "not_equal", "logical_and",
                 "logical_or", "logical_not", "full", "full_like", "dim"):
        op = get_op(name)
        if op.vjp is None:
            op.differentiable = False


install()
