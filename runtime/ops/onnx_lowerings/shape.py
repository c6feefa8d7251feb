"""ONNX lowerings of array creation and shape manipulation."""
import numpy as np

from ...ir import Variable
from ..registry import facet
from ..rules import norm_axes


@facet("constant", "onnx")
def _constant(g, op):
    value = np.asarray(op.attrs["value"], dtype=op.attrs["dtype"]).reshape(op.attrs["shape"])
    if value.dtype.kind == "c":
        g.fail("complex numbers have no ONNX kernels in onnxruntime")
    return g.node("Identity", [g.const(value)])


def filled(g, value, dims, dtype):
    """An array of shape `dims` (ints and scalar Variables) filled with `value` (a literal or 0-d Variable)."""
    shape = g.shape_vector(dims)
    if isinstance(value, Variable):
        return g.node("Expand", [g.value(value, dtype), shape])
    return g.node("ConstantOfShape", [shape], value=np.asarray([value], dtype=dtype))


@facet("zeros", "onnx")
@facet("ones", "onnx")
def _zeros_ones(g, op):
    return filled(g, 0 if op.type == "zeros" else 1, op.inputs, op.outputs[0].dtype)


@facet("full", "onnx")
def _full(g, op):
    value, *dims = op.inputs
    return filled(g, value, dims, op.outputs[0].dtype)


@facet("full_like", "onnx")
def _full_like(g, op):
    x, value = op.inputs
    shape = g.node("Shape", [g.value(x)])
    dtype = op.outputs[0].dtype
    if isinstance(value, Variable):
        return g.node("Expand", [g.value(value, dtype), shape])
    return g.node("ConstantOfShape", [shape], value=np.asarray([value], dtype=dtype))


@facet("arange", "onnx")
def _arange(g, op):
    dtype = op.outputs[0].dtype
    return g.node("Range", [g.value(v, dtype) for v in op.inputs])


@facet("eye", "onnx")
def _eye(g, op):
    n, m, k = op.inputs
    if not all(isinstance(v, int) for v in (n, m, k)):
        g.fail("eye with sizes known only at run time has no ONNX form here")
    return g.node("Identity", [g.const(np.eye(n, m, k, dtype=op.outputs[0].dtype))])


@facet("reshape", "onnx")
def _reshape(g, op):
    x, *dims = op.inputs
    # allowzero: a 0 in the shape is NumPy's zero-size dim, not ONNX's "copy the input's dim"
    return g.node("Reshape", [g.value(x), g.shape_vector(dims)], allowzero=1)


@facet("permute_dims", "onnx")
def _permute_dims(g, op):
    (x,) = op.inputs
    rank = g.rank(x)
    axes = op.attrs.get("axes")
    perm = list(reversed(range(rank))) if axes is None else [a % rank for a in axes]
    return g.node("Transpose", [g.value(x)], perm=perm)


@facet("expand_dims", "onnx")
def _expand_dims(g, op):
    (x,) = op.inputs
    axis = op.attrs["axis"]
    axes = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    return g.node("Unsqueeze", [g.value(x), g.ints(axes)])


@facet("squeeze", "onnx")
def _squeeze(g, op):
    (x,) = op.inputs
    axis = op.attrs.get("axis")
    if axis is None:
        if -1 in g.shape(x):
            g.fail("squeeze() without axis needs every dim known while tracing (a dynamic dim may be 1)")
        axes = [a for a, d in enumerate(g.shape(x)) if d == 1]
    else:
        axes = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    return g.node("Squeeze", [g.value(x), g.ints(axes)])


@facet("concat", "onnx")
def _concat(g, op):
    dtype = op.outputs[0].dtype
    axis = op.attrs.get("axis", 0)
    values = [g.value(x, dtype) for x in op.inputs]
    if axis is None:
        values, axis = [g.node("Reshape", [v, g.ints([-1])]) for v in values], 0
    return g.node("Concat", values, axis=int(axis))


@facet("stack", "onnx")
def _stack(g, op):
    dtype = op.outputs[0].dtype
    axis = op.attrs.get("axis", 0)
    return g.node("Concat", [g.node("Unsqueeze", [g.value(x, dtype), g.ints([axis])]) for x in op.inputs],
                  axis=int(axis))


@facet("broadcast_to", "onnx")
def _broadcast_to(g, op):
    x, *dims = op.inputs
    return g.node("Expand", [g.value(x), g.shape_vector(dims)])


@facet("flip", "onnx")
def _flip(g, op):
    (x,) = op.inputs
    axes = norm_axes(op.attrs.get("axis"), g.rank(x))
    big = np.iinfo(np.int64)
    return g.node("Slice", [g.value(x), g.ints([big.max] * len(axes)), g.ints([big.min] * len(axes)),
                            g.ints(axes), g.ints([-1] * len(axes))])


@facet("dim", "onnx")
def _dim(g, op):
    (x,) = op.inputs
    axis = op.attrs["axis"] % max(g.rank(x), 1)
    size = g.node("Shape", [g.value(x)], start=axis, end=axis + 1)
    return g.node("Squeeze", [size, g.ints([0])])


@facet("split", "onnx")
def _split(g, op):
    (x,) = op.inputs
    sections, axis = op.attrs["sections"], op.attrs.get("axis", 0)
    value = g.value(x)
    if isinstance(sections, int):
        outs = g.node("Split", [value], outputs=sections, axis=int(axis), num_outputs=sections)
        return [outs] if sections == 1 else outs
    bounds = [0] + list(sections) + [np.iinfo(np.int64).max]
    return [g.node("Slice", [value, g.ints([lo]), g.ints([hi]), g.ints([axis])])
            for lo, hi in zip(bounds[:-1], bounds[1:])]
