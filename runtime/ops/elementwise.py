"""Elementwise ops: one NumPy ufunc each, so NumPy's own dtype rules apply.

The tables below are the whole definition: array-API name -> NumPy/CuPy ufunc
name. Each entry becomes a registered op and a public function.
"""
import numpy as np

from ..dtypes import as_dtype, result_type
from ..ir import Variable
from ..tensor import EagerTensor, Tensor
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


# --- where NumPy's ufunc departs from the standard's special cases ------------------------------------
# For these dtype kinds the kernel is the ufunc with those values put right; for the others the op stays
# that one ufunc (a fusable step, computed in place, inline in a plan): `as_ufunc` says which.

def _floor_divide_standard(xp, x, y):
    """Float floor division by or of an infinity is floor(x / y) (NumPy: inf // 2 is nan, 1 // -inf is -1)."""
    out = xp.floor_divide(x, y)
    if out.dtype.kind != "f":
        return out
    return xp.where(xp.isinf(x) | xp.isinf(y), xp.floor(xp.divide(x, y)), out).astype(out.dtype, copy=False)


def _expm1_standard(xp, z):
    """Complex expm1 at the standard's special values: +-0 + 0j is +0 + 0j, a zero imaginary part stays
    (NaN + 0j), and an infinite real part with a non-finite imaginary one gives -1 + 0j or inf + NaN j."""
    out = xp.expm1(z)
    if out.dtype.kind != "c":
        return out
    x, y = xp.real(z), xp.imag(z)
    flat = y == 0
    edge = xp.isinf(x) & ~xp.isfinite(y)
    fixed = xp.empty(out.shape, out.dtype)
    fixed.real = xp.where(edge, xp.where(x > 0, xp.inf, -1.0), xp.where(flat, xp.expm1(x) + 0.0, xp.real(out)))
    fixed.imag = xp.where(edge, xp.where(x > 0, xp.nan, 0.0), xp.where(flat, y, xp.imag(out)))
    return fixed


def _tanh_standard(xp, z):
    """Complex tanh of an infinite real part and a finite imaginary one is +-1 with y's signed zero
    (NumPy's complex64 gives 1 - 0j for inf + 3j)."""
    out = xp.tanh(z)
    if out.dtype.kind != "c":
        return out
    x, y = xp.real(z), xp.imag(z)
    edge = xp.isinf(x) & xp.isfinite(y)
    fixed = xp.array(out, copy=True)
    fixed.real = xp.where(edge, xp.copysign(1.0, x), xp.real(out))
    fixed.imag = xp.where(edge, xp.copysign(0.0, y), xp.imag(out))
    return fixed


STANDARD_VALUES = {"floor_divide": ("f", _floor_divide_standard), "expm1": ("c", _expm1_standard),
                   "tanh": ("c", _tanh_standard)}


def _ufunc_unless(ufunc_name, kinds):
    def as_ufunc(inputs):
        if result_type(*map(promote_operand, inputs)).kind in kinds:
            return None
        return ufunc_name, list(inputs)
    return as_ufunc


def _define(table, make_kernel, arity):
    public = {}
    for name, ufunc_name in table.items():
        template = f"xp.{ufunc_name}(" + ", ".join(f"{{{i}}}" for i in range(arity)) + ")"
        kernel, as_ufunc = make_kernel(ufunc_name), None
        if name in STANDARD_VALUES:
            kinds, kernel = STANDARD_VALUES[name]
            template, as_ufunc = None, _ufunc_unless(ufunc_name, kinds)
        opdef = register(OpDef(name, kernel, elementwise(ufunc_name), elementwise=True,
                               promote=arity > 1, template=template, ufunc=ufunc_name, as_ufunc=as_ufunc,
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
        if copy and isinstance(x, EagerTensor):
            if x.requires_grad:           # a recorded copy, so that gradients flow through it
                return apply(get_op("positive"), (x,), {}) if device is None else x.to(device)
            x = Tensor(x.array, x.backend)
        return x if device is None else x.to(device)
    out = apply(_astype, (x,), {"dtype": dtype.name})
    return out if device is None else out.to(device)


del np
