"""Gradient rules of the elementwise ops (runtime/ops/elementwise.py): d out / d x times g,
summed back over broadcast dims by `unbroadcast`."""
import math

from ..registry import facet
from .support import cast_like, is_array, nondifferentiable, rt, takes_gradient, unbroadcast

nondifferentiable(
    "sign", "floor", "ceil", "trunc", "round", "isnan", "isinf", "isfinite", "logical_not", "bitwise_invert",
    "signbit", "floor_divide", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
    "bitwise_left_shift", "bitwise_right_shift", "nextafter")


def _unary(name, derivative):
    """Register the rule g * derivative(x, out) for a one-input op."""
    def vjp(g, inputs, outputs):
        (x,) = inputs
        if not takes_gradient(x):
            return (None,)
        return (cast_like(g * derivative(x, outputs), x),)
    vjp.__name__ = f"{name}_vjp"
    facet(name, "vjp")(vjp)


_unary("negative", lambda x, y: -1.0)
_unary("positive", lambda x, y: 1.0)
_unary("abs", lambda x, y: rt.sign(x))
_unary("exp", lambda x, y: y)
_unary("expm1", lambda x, y: y + 1.0)
_unary("log", lambda x, y: rt.reciprocal(x))
_unary("log1p", lambda x, y: rt.reciprocal(x + 1.0))
_unary("log2", lambda x, y: rt.reciprocal(x * math.log(2.0)))
_unary("log10", lambda x, y: rt.reciprocal(x * math.log(10.0)))
_unary("sqrt", lambda x, y: 0.5 / y)
_unary("square", lambda x, y: 2.0 * x)
_unary("reciprocal", lambda x, y: -(y * y))
_unary("sin", lambda x, y: rt.cos(x))
_unary("cos", lambda x, y: -rt.sin(x))
_unary("tan", lambda x, y: 1.0 + y * y)
_unary("asin", lambda x, y: rt.reciprocal(rt.sqrt(1.0 - x * x)))
_unary("acos", lambda x, y: -rt.reciprocal(rt.sqrt(1.0 - x * x)))
_unary("atan", lambda x, y: rt.reciprocal(1.0 + x * x))
_unary("sinh", lambda x, y: rt.cosh(x))
_unary("cosh", lambda x, y: rt.sinh(x))
_unary("tanh", lambda x, y: 1.0 - y * y)
_unary("asinh", lambda x, y: rt.reciprocal(rt.sqrt(x * x + 1.0)))
_unary("acosh", lambda x, y: rt.reciprocal(rt.sqrt(x * x - 1.0)))
_unary("atanh", lambda x, y: rt.reciprocal(1.0 - x * x))


@facet("conj", "vjp")
def _conj_vjp(g, inputs, outputs):
    return (cast_like(rt.conj(g), inputs[0]),)


@facet("real", "vjp")
def _real_vjp(g, inputs, outputs):
    return (cast_like(g, inputs[0]),)


@facet("imag", "vjp")
def _imag_vjp(g, inputs, outputs):
    (x,) = inputs
    if not takes_gradient(x) or x.dtype.kind != "c":
        return (None,)                       # the imaginary part of a real array is the constant 0
    return (rt.astype(g, x.dtype) * 1j,)


def _binary(name, dx, dy):
    """Register the rule (g * dx(x, y, out), g * dy(x, y, out)), each summed to its input's shape."""
    def vjp(g, inputs, outputs):
        x, y = inputs
        gx = unbroadcast(g * dx(x, y, outputs), x) if takes_gradient(x) else None
        gy = unbroadcast(g * dy(x, y, outputs), y) if takes_gradient(y) else None
        return gx, gy
    vjp.__name__ = f"{name}_vjp"
    facet(name, "vjp")(vjp)


def _share(g, winner, x, y):
    """g where `winner` holds, g/2 on ties (as JAX), else 0: one side's part of a max/min's cotangent."""
    return rt.where(winner, g, rt.where(rt.equal(x, y), g * 0.5, 0))


def _extremum(name, wins):
    def vjp(g, inputs, outputs):
        x, y = inputs
        gx = unbroadcast(_share(g, wins(x, y), x, y), x) if takes_gradient(x) else None
        gy = unbroadcast(_share(g, wins(y, x), x, y), y) if takes_gradient(y) else None
        return gx, gy
    vjp.__name__ = f"{name}_vjp"
    facet(name, "vjp")(vjp)


_extremum("maximum", rt.greater)
_extremum("minimum", rt.less)


def _pow_dy(x, y, out):
    """out * log(x), taken as 0 where x is 0 (there x**y is flat in y for y > 0)."""
    if not is_array(x):                      # a Python number: its log is one too (an array would be float64)
        return out * (math.log(x) if x > 0 else 0.0 if x == 0 else math.nan)
    safe = rt.where(rt.equal(x, 0), 1.0, x)
    return rt.where(rt.equal(x, 0), 0.0, out * rt.log(safe))


def _add_vjp(g, inputs, outputs):
    return unbroadcast(g, inputs[0]), unbroadcast(g, inputs[1])


facet("add", "vjp")(_add_vjp)


@facet("subtract", "vjp")
def _subtract_vjp(g, inputs, outputs):
    x, y = inputs
    return unbroadcast(g, x), (unbroadcast(-g, y) if takes_gradient(y) else None)


_binary("multiply", lambda x, y, out: y, lambda x, y, out: x)
_binary("divide", lambda x, y, out: rt.divide(1.0, y) if not isinstance(y, (int, float)) else 1.0 / y,
        lambda x, y, out: -out / y)      # 1 / y, never reciprocal: an integer y's reciprocal is integer
_binary("remainder", lambda x, y, out: 1.0, lambda x, y, out: -rt.floor_divide(x, y))
_binary("pow", lambda x, y, out: y * rt.pow(x, y - 1), _pow_dy)
_binary("atan2", lambda y, x, out: x / (x * x + y * y), lambda y, x, out: -y / (x * x + y * y))
_binary("hypot", lambda x, y, out: x / out, lambda x, y, out: y / out)


@facet("copysign", "vjp")
def _copysign_vjp(g, inputs, outputs):
    x, y = inputs
    if not takes_gradient(x):
        return None, None
    flipped = rt.not_equal(rt.signbit(x), rt.signbit(outputs))
    return unbroadcast(rt.where(flipped, -g, g), x), None


_binary("logaddexp", lambda x, y, out: rt.exp(x - out), lambda x, y, out: rt.exp(y - out))


@facet("where", "vjp")
def _where_vjp(g, inputs, outputs):
    condition, x, y = inputs
    zero = rt.zeros_like(g)
    gx = unbroadcast(rt.where(condition, g, zero), x) if takes_gradient(x) else None
    gy = unbroadcast(rt.where(condition, zero, g), y) if takes_gradient(y) else None
    return None, gx, gy


@facet("clip", "vjp")
def _clip_vjp(g, inputs, outputs):
    x, lo, hi = inputs
    zero = rt.zeros_like(g)
    inside = rt.ones_like(g, dtype="bool")
    if lo is not None:
        inside = rt.logical_and(inside, rt.greater_equal(x, lo))
    if hi is not None:
        inside = rt.logical_and(inside, rt.less_equal(x, hi))
    gx = unbroadcast(rt.where(inside, g, zero), x) if takes_gradient(x) else None
    glo = unbroadcast(rt.where(rt.less(x, lo), g, zero), lo) if takes_gradient(lo) else None
    ghi = unbroadcast(rt.where(rt.greater(x, hi), g, zero), hi) if takes_gradient(hi) else None
    return gx, glo, ghi


@facet("astype", "vjp")
def _astype_vjp(g, inputs, outputs, dtype):
    (x,) = inputs
    if not takes_gradient(x) or outputs.dtype.kind not in "fc":
        return (None,)                       # a cast to integers or bools cuts the gradient
    return (cast_like(g, x),)
