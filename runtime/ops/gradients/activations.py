"""Gradient rules of the activations and logsumexp (runtime/ops/activations.py)."""
import math

from ..nn_ops import sigmoid
from ..registry import facet
from .support import broadcast_back, cast_like, rt, takes_gradient

_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)


def _rule(name, backward):
    """Register backward(g, x, out, **attrs), the cotangent of x, as op `name`'s rule. (Both
    branches of a `where` hold arrays: a pair of Python numbers would make a float64 array.)"""
    def vjp(g, inputs, outputs, **attrs):
        (x,) = inputs
        return (cast_like(backward(g, x, outputs, **attrs), x) if takes_gradient(x) else None,)
    vjp.__name__ = f"{name}_vjp"
    facet(name, "vjp")(vjp)


_rule("erf", lambda g, x, y: g * rt.exp(-x * x) * _TWO_OVER_SQRT_PI)
_rule("erfinv", lambda g, x, y: g * rt.exp(y * y) * (1 / _TWO_OVER_SQRT_PI))
_rule("softplus", lambda g, x, y, beta=1.0, threshold=20.0:
      rt.where(rt.greater(x * beta, threshold), g, g * sigmoid(x * beta)))
_rule("silu", lambda g, x, y: g * sigmoid(x) * (1.0 + x * (1.0 - sigmoid(x))))
_rule("leaky_relu", lambda g, x, y, negative_slope=0.01: rt.where(rt.greater_equal(x, 0), g, g * negative_slope))
_rule("elu", lambda g, x, y, alpha=1.0: rt.where(rt.greater(x, 0), g, g * (y + alpha)))


@facet("logsumexp", "vjp")
def _logsumexp_vjp(g, inputs, outputs, axis=None, keepdims=False):
    (x,) = inputs
    if not takes_gradient(x):
        return (None,)
    weights = rt.exp(x - broadcast_back(outputs, x, axis, keepdims))
    return (cast_like(broadcast_back(g, x, axis, keepdims) * weights, x),)
