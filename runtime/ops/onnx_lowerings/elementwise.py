"""ONNX lowerings of the elementwise ops, with NumPy's dtype and sign rules.

ONNX operators take one dtype for all inputs; NumPy promotes. Each lowering
casts its operands to the dtype NumPy computes in (the op's result dtype for
arithmetic, the promoted operand dtype for comparisons) before the node.
"""
import math

import numpy as np

from ...dtypes import result_type
from ..registry import facet
from ..rules import promote_operand

_DIRECT_UNARY = {
    "negative": "Neg", "abs": "Abs", "sign": "Sign", "exp": "Exp", "log": "Log", "sqrt": "Sqrt",
    "sin": "Sin", "cos": "Cos", "tan": "Tan", "asin": "Asin", "acos": "Acos", "atan": "Atan",
    "sinh": "Sinh", "cosh": "Cosh", "tanh": "Tanh", "asinh": "Asinh", "acosh": "Acosh", "atanh": "Atanh",
    "floor": "Floor", "ceil": "Ceil", "round": "Round", "reciprocal": "Reciprocal",
}
_DIRECT_BINARY = {"add": "Add", "subtract": "Sub", "multiply": "Mul", "divide": "Div", "pow": "Pow",
                  "maximum": "Max", "minimum": "Min"}
# onnxruntime's CPU kernels for these take float32 only
_NO_FLOAT64 = {"Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Erf"}
_FLOAT_ONLY = {"Exp", "Log", "Sqrt", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Tanh",
               "Asinh", "Acosh", "Atanh", "Floor", "Ceil", "Round", "Reciprocal"}
_COMPARISONS = {"equal": "Equal", "less": "Less", "less_equal": "LessOrEqual", "greater": "Greater",
                "greater_equal": "GreaterOrEqual"}
_LOGICAL = {"logical_and": "And", "logical_or": "Or", "logical_xor": "Xor"}
_BITWISE = {"bitwise_and": ("And", "BitwiseAnd"), "bitwise_or": ("Or", "BitwiseOr"),
            "bitwise_xor": ("Xor", "BitwiseXor")}


def operands(g, op, dtype=None):
    """The op's inputs as ONNX values of one dtype (default: the op's result dtype)."""
    dtype = op.outputs[0].dtype if dtype is None else dtype
    if dtype.kind == "c":
        g.fail("complex numbers have no ONNX kernels in onnxruntime")
    return [g.value(x, dtype) for x in op.inputs]


def common_dtype(op):
    """The dtype NumPy compares or combines the op's inputs in."""
    return result_type(*(promote_operand(x) for x in op.inputs if x is not None))


def refuse_float64(g, op, onnx_op):
    if op.outputs[0].dtype == np.float64 and onnx_op in _NO_FLOAT64:
        g.fail(f"onnxruntime has no float64 kernel for {onnx_op}; cast the input to float32 first")


def _unary(onnx_op):
    def lower(g, op):
        (x,) = operands(g, op)
        if op.outputs[0].dtype.kind == "b" and onnx_op == "Abs":
            return g.node("Identity", [x])
        if onnx_op in _FLOAT_ONLY and op.outputs[0].dtype.kind != "f":
            g.fail(f"{op.type} of {op.outputs[0].dtype.name} has no ONNX form")
        refuse_float64(g, op, onnx_op)
        if onnx_op == "Tan" and op.outputs[0].dtype == np.float64:     # no float64 Tan kernel
            return g.node("Div", [g.node("Sin", [x]), g.node("Cos", [x])])
        return g.node(onnx_op, [x])
    return lower


# on booleans NumPy's + and maximum are `or`, * and minimum are `and`
_ON_BOOLS = {"Add": "Or", "Max": "Or", "Mul": "And", "Min": "And"}


def _binary(onnx_op):
    def lower(g, op):
        if op.outputs[0].dtype.kind == "b":
            if onnx_op not in _ON_BOOLS:
                g.fail(f"{op.type} of booleans has no ONNX form")
            return g.node(_ON_BOOLS[onnx_op], operands(g, op))
        return g.node(onnx_op, operands(g, op))
    return lower


for _name, _onnx in _DIRECT_UNARY.items():
    facet(_name, "onnx")(_unary(_onnx))
for _name, _onnx in _DIRECT_BINARY.items():
    facet(_name, "onnx")(_binary(_onnx))


@facet("positive", "onnx")
@facet("conj", "onnx")
def _identity(g, op):
    (x,) = operands(g, op)
    return g.node("Identity", [x])


@facet("square", "onnx")
def _square(g, op):
    (x,) = operands(g, op)
    return g.node("Mul", [x, x])


@facet("trunc", "onnx")
def _trunc(g, op):
    (x,) = operands(g, op)
    if op.outputs[0].dtype.kind != "f":
        return g.node("Identity", [x])
    negative = g.node("Less", [x, g.const(0, op.outputs[0].dtype)])
    return g.node("Where", [negative, g.node("Ceil", [x]), g.node("Floor", [x])])


@facet("log2", "onnx")
@facet("log10", "onnx")
def _log_base(g, op):
    (x,) = operands(g, op)
    base = 2.0 if op.type == "log2" else 10.0
    return g.node("Div", [g.node("Log", [x]), g.const(math.log(base), op.outputs[0].dtype)])


@facet("log1p", "onnx")
def _log1p(g, op):
    """log(1 + x) accurate for tiny x (Kahan): log(u) * x / (u - 1), with u = 1 + x, or x where u == 1."""
    (x,) = operands(g, op)
    dtype = op.outputs[0].dtype
    u = g.node("Add", [x, g.const(1, dtype)])
    u_minus_1 = g.node("Sub", [u, g.const(1, dtype)])
    exact = g.node("Equal", [u, g.const(1, dtype)])
    safe = g.node("Where", [exact, g.const(1, dtype), u_minus_1])
    scaled = g.node("Div", [g.node("Mul", [g.node("Log", [u]), x]), safe])
    return g.node("Where", [exact, x, scaled])


@facet("expm1", "onnx")
def _expm1(g, op):
    (x,) = operands(g, op)
    return expm1(g, x, op.outputs[0].dtype)


def expm1(g, x, dtype):
    """exp(x) - 1 accurate for tiny x (Kahan): (u - 1) * x / log(u), with u = exp(x)."""
    u = g.node("Exp", [x])
    u_minus_1 = g.node("Sub", [u, g.const(1, dtype)])
    log_u = g.node("Log", [u])
    exact = g.node("Equal", [u, g.const(1, dtype)])
    large = g.node("Equal", [u_minus_1, g.const(-1, dtype)])
    plain = g.node("Or", [large, g.node("IsInf", [u])])
    safe_log = g.node("Where", [exact, g.const(1, dtype), log_u])
    scaled = g.node("Div", [g.node("Mul", [u_minus_1, x]), safe_log])
    return g.node("Where", [exact, x, g.node("Where", [plain, u_minus_1, scaled])])


@facet("isnan", "onnx")
@facet("isinf", "onnx")
@facet("isfinite", "onnx")
def _float_class(g, op):
    (x,) = op.inputs
    if g.dtype(x).kind != "f":       # integers and booleans are always finite numbers
        shape = g.node("Shape", [g.value(x)])
        return g.node("ConstantOfShape", [shape], value=np.asarray([op.type == "isfinite"]))
    x = g.value(x)
    if op.type == "isnan":
        return g.node("IsNaN", [x])
    if op.type == "isinf":
        return g.node("IsInf", [x])
    return g.node("Not", [g.node("Or", [g.node("IsNaN", [x]), g.node("IsInf", [x])])])


@facet("logical_not", "onnx")
def _logical_not(g, op):
    return g.node("Not", [g.value(op.inputs[0], np.bool_)])


@facet("bitwise_invert", "onnx")
def _bitwise_invert(g, op):
    (x,) = operands(g, op)
    return g.node("Not" if op.outputs[0].dtype.kind == "b" else "BitwiseNot", [x])


for _name, _onnx in _COMPARISONS.items():
    def _compare(g, op, _onnx=_onnx):
        dtype = common_dtype(op)
        a, b = operands(g, op, dtype)
        if dtype.kind == "b" and _onnx != "Equal":      # ONNX orders numbers only
            a, b = g.cast(a, np.int8), g.cast(b, np.int8)
        return g.node(_onnx, [a, b])
    facet(_name, "onnx")(_compare)


@facet("not_equal", "onnx")
def _not_equal(g, op):
    return g.node("Not", [g.node("Equal", operands(g, op, common_dtype(op)))])


for _name, _onnx in _LOGICAL.items():
    facet(_name, "onnx")(lambda g, op, _onnx=_onnx: g.node(_onnx, operands(g, op, np.dtype(np.bool_))))


for _name, (_logical, _bitwise) in _BITWISE.items():
    def _bits(g, op, _logical=_logical, _bitwise=_bitwise):
        return g.node(_logical if op.outputs[0].dtype.kind == "b" else _bitwise, operands(g, op))
    facet(_name, "onnx")(_bits)


@facet("floor_divide", "onnx")
def _floor_divide(g, op):
    """NumPy rounds the quotient down (ONNX's integer Div truncates toward zero); x // 0 is 0 for integers."""
    a, b = operands(g, op)
    dtype = op.outputs[0].dtype
    if dtype.kind == "f":
        return _float_floor_divide(g, a, b, dtype)
    if dtype.kind == "b":
        g.fail("floor_divide of booleans has no ONNX form")
    zero = g.const(0, dtype)
    by_zero, b = _safe_divisor(g, b, dtype)
    quotient = g.node("Div", [a, b])
    remainder = g.node("Mod", [a, b], fmod=1)
    inexact = g.node("Not", [g.node("Equal", [remainder, zero])])
    signs_differ = g.node("Xor", [g.node("Less", [a, zero]), g.node("Less", [b, zero])])
    adjust = g.node("Cast", [g.node("And", [inexact, signs_differ])], to=dtype)
    return g.node("Where", [by_zero, zero, g.node("Sub", [quotient, adjust])])


def _safe_divisor(g, b, dtype):
    """(b == 0, b with its zeros replaced by 1): integer division by zero must not reach onnxruntime."""
    by_zero = g.node("Equal", [b, g.const(0, dtype)])
    return by_zero, g.node("Where", [by_zero, g.const(1, dtype), b])


def _float_floor_divide(g, a, b, dtype):
    """NumPy's npy_divmod: (a - fmod(a, b)) / b, moved down when fmod's sign is not b's, rounded to the nearest
    integer (so 1 // 0.1 is 9, not floor(1 / 0.1) = 10); a / b where b == 0."""
    zero, one = g.const(0, dtype), g.const(1, dtype)
    mod = g.node("Mod", [a, b], fmod=1)
    div = g.node("Div", [g.node("Sub", [a, mod]), b])
    moved = g.node("And", [g.node("Not", [g.node("Equal", [mod, zero])]),
                           g.node("Xor", [g.node("Less", [b, zero]), g.node("Less", [mod, zero])])])
    div = g.node("Where", [moved, g.node("Sub", [div, one]), div])
    floor = g.node("Floor", [div])
    floor = g.node("Where", [g.node("Greater", [g.node("Sub", [div, floor]), g.const(0.5, dtype)]),
                             g.node("Add", [floor, one]), floor])
    quotient = g.node("Div", [a, b])
    signed_zero = g.node("Mul", [zero, quotient])
    floor = g.node("Where", [g.node("Equal", [div, zero]), signed_zero, floor])
    return g.node("Where", [g.node("Equal", [b, zero]), quotient, floor])


@facet("remainder", "onnx")
def _remainder(g, op):
    """NumPy's remainder takes the divisor's sign (ONNX Mod fmod=0 for integers; fixed up for floats);
    x % 0 is 0 for integers."""
    a, b = operands(g, op)
    dtype = op.outputs[0].dtype
    if dtype.kind == "b":
        g.fail("remainder of booleans has no ONNX form")
    zero = g.const(0, dtype)
    if dtype.kind != "f":
        by_zero, b = _safe_divisor(g, b, dtype)
        return g.node("Where", [by_zero, zero, g.node("Mod", [a, b], fmod=0)])
    rem = g.node("Mod", [a, b], fmod=1)
    nonzero = g.node("Not", [g.node("Equal", [rem, zero])])
    signs_differ = g.node("Xor", [g.node("Less", [rem, zero]), g.node("Less", [b, zero])])
    fix = g.node("And", [nonzero, signs_differ])
    return g.node("Where", [fix, g.node("Add", [rem, b]), rem])


@facet("hypot", "onnx")
def _hypot(g, op):
    a, b = operands(g, op)
    return g.node("Sqrt", [g.node("Add", [g.node("Mul", [a, a]), g.node("Mul", [b, b])])])


@facet("logaddexp", "onnx")
def _logaddexp(g, op):
    """max(a, b) + log(1 + exp(-|a - b|)): never overflows."""
    a, b = operands(g, op)
    dtype = op.outputs[0].dtype
    top = g.node("Max", [a, b])
    gap = g.node("Neg", [g.node("Abs", [g.node("Sub", [a, b])])])
    same = g.node("Equal", [a, b])                  # equal infinities: no NaN from inf - inf
    gap = g.node("Where", [same, g.const(0, dtype), gap])
    return g.node("Add", [top, g.node("Log", [g.node("Add", [g.const(1, dtype), g.node("Exp", [gap])])])])


@facet("where", "onnx")
def _where(g, op):
    condition, x, y = op.inputs
    dtype = op.outputs[0].dtype
    return g.node("Where", [g.value(condition, np.bool_), g.value(x, dtype), g.value(y, dtype)])


@facet("clip", "onnx")
def _clip(g, op):
    """NumPy's clip is minimum(maximum(x, lo), hi), bounds broadcast like operands."""
    x, lo, hi = op.inputs
    dtype = op.outputs[0].dtype
    out = g.node("Identity", [g.value(x, dtype)])
    if lo is not None:
        out = g.node("Max", [out, g.value(lo, dtype)])
    if hi is not None:
        out = g.node("Min", [out, g.value(hi, dtype)])
    return out


@facet("astype", "onnx")
def _astype(g, op):
    (x,) = op.inputs
    dtype = op.outputs[0].dtype
    if dtype.kind == "c" or g.dtype(x).kind == "c":
        g.fail("complex numbers have no ONNX kernels in onnxruntime")
    return g.node("Cast", [g.value(x)], to=dtype)
