"""Elementwise ops: one NumPy ufunc each, so NumPy's own dtype rules apply.

The tables below are the whole definition: array-API name -> NumPy/CuPy ufunc
name. Each entry becomes a registered op and a public function.
"""
import numpy as np

from ..dtypes import as_dtype, result_type
from ..ir import Variable
from ..tensor import Tensor
from .dispatch import apply
from .registry import PREVIOUS, OpDef, get_op, register
from .rules import Spec, broadcast_shapes, dtype_of, elementwise, is_weak, promote_operand, shape_of

UNARY = {
    "negative": "negative", "positive": "positive", "abs": "absolute", "sign": "sign",
    "exp": "exp", "expm1": "expm1", "log": "log", "log1p": "log1p", "log2": "log2", "log10": "log10",
    "sqrt": "sqrt", "square": "square", "reciprocal": "reciprocal",
    "sin": "sin", "cos": "cos", "tan": "tan", "asin": "arcsin", "acos": "arccos", "atan": "arctan",
    "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "asinh": "arcsinh", "acosh": "arccosh", "atanh": "arctanh",
    "floor": "floor", "ceil": "ceil", "trunc": "trunc", "round": "rint",
    "isnan": "isnan", "isinf": "isinf", "isfinite": "isfinite",
    "logical_not": "logical_not", "bitwise_invert": "invert",
    "signbit": "signbit", "conj": "conjugate",
}

BINARY = {
    "add": "add", "subtract": "subtract", "multiply": "multiply", "divide": "divide",
    "floor_divide": "floor_divide", "remainder": "remainder", "pow": "power",
    "maximum": "maximum", "minimum": "minimum", "atan2": "arctan2", "hypot": "hypot",
    "equal": "equal", "not_equal": "not_equal", "less": "less", "less_equal": "less_equal",
    "greater": "greater", "greater_equal": "greater_equal",
    "logical_and": "logical_and", "logical_or": "logical_or", "logical_xor": "logical_xor",
    "bitwise_and": "bitwise_and", "bitwise_or": "bitwise_or", "bitwise_xor": "bitwise_xor",
    "bitwise_left_shift": "left_shift", "bitwise_right_shift": "right_shift",
    "copysign": "copysign", "logaddexp": "logaddexp", "nextafter": "nextafter",
}


# 0-d arithmetic in a plan is Python's operator on NumPy scalars (~20x cheaper than a ufunc call)
OPERATORS = {
    "add": "+", "subtract": "-", "multiply": "*", "divide": "/", "floor_divide": "//", "remainder": "%",
    "pow": "**", "less": "<", "less_equal": "<=", "greater": ">", "greater_equal": ">=", "equal": "==",
    "not_equal": "!=", "negative": "-", "bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^",
}


def _power_as_products(op, producer):
    """`x ** n` for n in {2, 3, 4} as squares and products (NumPy's `power` calls the C library's `pow`
    per element, ~30x a multiply for float32): what PyTorch does. Exact for integers; for floats a
    correctly rounded product may differ from `pow` in the last bit. Only where the result keeps x's
    dtype and shape (`int ** 3.0` is float64 in NumPy: left alone)."""
    x, n = op.inputs
    if isinstance(n, bool) or not isinstance(n, (int, float)) or n not in (2, 3, 4):
        return None
    out = op.outputs[0]
    if (not isinstance(x, Variable) or x.kind != "dense" or x.dtype != out.dtype or x.dtype.kind not in "iuf"
            or x.static_shape != out.static_shape):
        return None
    square, multiply = get_op("square"), get_op("multiply")
    return {2: [(square, [x])],
            3: [(square, [x]), (multiply, [PREVIOUS, x])],
            4: [(square, [x]), (square, [PREVIOUS])]}[int(n)]


_CHEAPER = {"pow": _power_as_products}


def _unary_kernel(ufunc_name):
    def kernel(xp, x):
        return getattr(xp, ufunc_name)(x)
    kernel.__name__ = ufunc_name
    return kernel


def _binary_kernel(ufunc_name):
    def kernel(xp, x, y):
        return getattr(xp, ufunc_name)(x, y)
    kernel.__name__ = ufunc_name
    return kernel


def _define(table, make_kernel, arity):
    public = {}
    for name, ufunc_name in table.items():
        template = f"xp.{ufunc_name}(" + ", ".join(f"{{{i}}}" for i in range(arity)) + ")"
        opdef = register(OpDef(name, make_kernel(ufunc_name), elementwise(ufunc_name), elementwise=True,
                               promote=arity > 1, template=template, ufunc=ufunc_name,
                               operator=OPERATORS.get(name), cheaper=_CHEAPER.get(name)))

        def fn(*args, _op=opdef):
            return apply(_op, args, {})
        fn.__name__ = fn.__qualname__ = name
        fn.__doc__ = f"Elementwise `{ufunc_name}` (NumPy semantics)."
        public[name] = fn
    return public


UNARY_FUNCTIONS = _define(UNARY, _unary_kernel, 1)
_rint = UNARY_FUNCTIONS["round"]


def _round(x, decimals=0):
    """Round to the nearest integer (or to `decimals` places, as NumPy's round: scale by a power of ten,
    round halves to even, scale back); integers and booleans are already round (same dtype)."""
    integral = dtype_of(x).kind in "iub"
    if decimals == 0 or integral and decimals > 0:
        return x if integral else _rint(x)
    multiply, divide = BINARY_FUNCTIONS["multiply"], BINARY_FUNCTIONS["divide"]
    scale = 10.0 ** abs(decimals)
    if decimals > 0:
        return divide(_rint(multiply(x, scale)), scale)
    rounded = multiply(_rint(divide(x, scale)), scale)
    return astype(rounded, dtype_of(x)) if integral else rounded


_round.__name__ = _round.__qualname__ = "round"
UNARY_FUNCTIONS["round"] = _round
BINARY_FUNCTIONS = _define(BINARY, _binary_kernel, 2)
ADD = get_op("add")      # the OpDef passes that rewrite sums ask for (fold_gather_addend)




def _part_infer(x):
    dtype = dtype_of(x)
    return Spec(shape_of(x), as_dtype({"complex64": "float32", "complex128": "float64"}.get(dtype.name, dtype)))


_real = register(OpDef("real", lambda xp, x: xp.real(x).copy(), _part_infer, elementwise=True))
_imag = register(OpDef("imag", lambda xp, x: xp.imag(x).copy(), _part_infer, elementwise=True))


def real(x):
    """The real part (a real array stays as it is)."""
    return apply(_real, (x,), {})


def imag(x):
    """The imaginary part (zeros for a real array)."""
    return apply(_imag, (x,), {})


def _where_infer(condition, x, y):
    shape = broadcast_shapes(shape_of(condition), shape_of(x), shape_of(y))
    return Spec(shape, result_type(promote_operand(x), promote_operand(y)), is_weak(x) and is_weak(y))


_where = register(OpDef("where", lambda xp, c, x, y: xp.where(c, x, y), _where_infer, elementwise=True,
                         copies=True, safe_when_static=True, template="xp.where({0}, {1}, {2})"))


def where(condition, x, y):
    """Pick from x where condition holds, else y (NumPy broadcasting and promotion)."""
    return apply(_where, (condition, x, y), {})


def _clip_infer(x, lo, hi):
    shape = broadcast_shapes(shape_of(x), shape_of(lo), shape_of(hi))
    return Spec(shape, result_type(*(promote_operand(v) for v in (x, lo, hi) if v is not None)), is_weak(x))


def _clip_as_ufunc(inputs):
    """A float clip with one bound a number is that bound's maximum or minimum (what NumPy's clip
    calls then): a step `fuse_elementwise` can chain."""
    x, lo, hi = inputs
    if not isinstance(x, Variable) or x.kind != "dense" or x.dtype.kind != "f":
        return None
    number = (int, float)
    if hi is None and isinstance(lo, number) and not isinstance(lo, bool):
        return "maximum", [x, lo]
    if lo is None and isinstance(hi, number) and not isinstance(hi, bool):
        return "minimum", [x, hi]
    return None


_clip = register(OpDef("clip", lambda xp, x, lo, hi: xp.clip(x, lo, hi), _clip_infer, elementwise=True,
                        copies=True, safe_when_static=True, as_ufunc=_clip_as_ufunc))


def clip(x, min=None, max=None):
    return apply(_clip, (x, min, max), {})


def _astype_kernel(xp, x, dtype):
    return xp.asarray(x).astype(dtype, copy=False)


_astype = register(OpDef("astype", _astype_kernel, lambda x, dtype: Spec(shape_of(x), as_dtype(dtype)),
                         elementwise=True, safe_when_static=True))


def astype(x, dtype, /, *, copy=True, device=None):
    """Cast to dtype. With copy=False an array of that dtype is returned as it is; otherwise the result
    is a new array object (its data is shared until one of them is assigned into: arrays are values)."""
    dtype = as_dtype(dtype)
    if getattr(x, "dtype", None) == dtype and not getattr(x, "weak", False):
        if copy and isinstance(x, Tensor):
            x = Tensor(x.data, x.backend)
        return x if device is None else x.to(device)
    out = apply(_astype, (x,), {"dtype": dtype.name})
    return out if device is None else out.to(device)


del np
