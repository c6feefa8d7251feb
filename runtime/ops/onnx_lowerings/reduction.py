"""ONNX lowerings of reductions, arg-reductions, cumsum and matmul, in NumPy's result dtypes."""
import numpy as np

from ..registry import facet

_REDUCE = {"sum": "ReduceSum", "prod": "ReduceProd", "mean": "ReduceMean", "max": "ReduceMax", "min": "ReduceMin"}


def reduce(g, onnx_op, x, axis, keepdims):
    """`onnx_op` over `axis` (an int, a tuple, or None: all axes) of the value x."""
    if axis is None:
        return g.node(onnx_op, [x], keepdims=int(bool(keepdims)))
    axes = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    return g.node(onnx_op, [x, g.ints(axes)], keepdims=int(bool(keepdims)), noop_with_empty_axes=int(not axes))


def _reduction(onnx_op):
    def lower(g, op):
        (x,) = op.inputs
        dtype = op.outputs[0].dtype
        if dtype.kind == "c":
            g.fail("complex numbers have no ONNX kernels in onnxruntime")
        if dtype.kind == "b":          # max/min of booleans: ONNX reduces numbers
            value = reduce(g, onnx_op, g.value(x, np.uint8), op.attrs.get("axis"), op.attrs.get("keepdims"))
            return g.cast(value, np.bool_)
        return reduce(g, onnx_op, g.value(x, dtype), op.attrs.get("axis"), op.attrs.get("keepdims"))
    return lower


for _name, _onnx in _REDUCE.items():
    facet(_name, "onnx")(_reduction(_onnx))


@facet("any", "onnx")
@facet("all", "onnx")
def _any_all(g, op):
    """any: some element true; all: no element false (so all() of nothing is true, any() false)."""
    (x,) = op.inputs
    flags = g.value(x, np.bool_)
    if op.type == "all":
        flags = g.node("Not", [flags])
    count = reduce(g, "ReduceSum", g.cast(flags, np.int64), op.attrs.get("axis"), op.attrs.get("keepdims"))
    found = g.node("Greater", [count, g.const(0, np.int64)])
    return found if op.type == "any" else g.node("Not", [found])


@facet("var", "onnx")
@facet("std", "onnx")
def _var_std(g, op):
    (x,) = op.inputs
    dtype = op.outputs[0].dtype
    if dtype.kind != "f":
        g.fail(f"{op.type} of {dtype.name} has no ONNX form")
    axis, keepdims = op.attrs.get("axis"), op.attrs.get("keepdims")
    value = g.value(x, dtype)
    centered = g.node("Sub", [value, reduce(g, "ReduceMean", value, axis, True)])
    squares = reduce(g, "ReduceSum", g.node("Mul", [centered, centered]), axis, keepdims)
    count = g.node("Div", [g.node("Size", [value]), g.node("Size", [squares])])
    count = g.node("Sub", [g.cast(count, dtype), g.const(op.attrs.get("correction", 0.0), dtype)])
    out = g.node("Div", [squares, count])
    return g.node("Sqrt", [out]) if op.type == "std" else out


@facet("argmax", "onnx")
@facet("argmin", "onnx")
def _arg(g, op):
    (x,) = op.inputs
    value = g.value(x, np.int32 if g.dtype(x).kind == "b" else None)
    axis, keepdims = op.attrs.get("axis"), bool(op.attrs.get("keepdims"))
    onnx_op = "ArgMax" if op.type == "argmax" else "ArgMin"
    if axis is not None:
        return g.node(onnx_op, [value], axis=int(axis), keepdims=int(keepdims))
    flat = g.node(onnx_op, [g.node("Reshape", [value, g.ints([-1])])], axis=0, keepdims=0)
    return g.node("Reshape", [flat, g.ints([1] * g.rank(x))]) if keepdims else flat


@facet("cumsum", "onnx")
def _cumsum(g, op):
    (x,) = op.inputs
    value = g.value(x, op.outputs[0].dtype)
    axis = op.attrs.get("axis")
    if axis is None:
        value, axis = g.node("Reshape", [value, g.ints([-1])]), 0
    return g.node("CumSum", [value, g.const(axis, np.int64)])


@facet("matmul", "onnx")
def _matmul(g, op):
    dtype = op.outputs[0].dtype
    if dtype.kind not in "fiu":
        g.fail(f"matmul of {dtype.name} has no ONNX kernel in onnxruntime")
    return g.node("MatMul", [g.value(x, dtype) for x in op.inputs])
