"""ONNX lowerings of tensor arrays: ONNX sequences (loop-carried through Loop like any value).

A tensor array op returns the array after it, and ONNX sequence ops are
functional the same way, so `array_append(a, x)` is `SequenceInsert(a, x)`.
"""
import numpy as np

from ..registry import facet


@facet("array_new", "onnx")
def _new(g, op):
    return g.node("SequenceEmpty", [], dtype=op.outputs[0].dtype)


@facet("array_from_list", "onnx")
def _from_list(g, op):
    dtype = op.outputs[0].dtype
    return g.node("SequenceConstruct", [g.value(x, dtype) for x in op.inputs])


@facet("array_append", "onnx")
def _append(g, op):
    arr, x = op.inputs
    return g.node("SequenceInsert", [g.value(arr), g.value(x, arr.dtype)])


@facet("array_length", "onnx")
def _length(g, op):
    return g.node("SequenceLength", [g.value(op.inputs[0])])


@facet("array_read", "onnx")
def _read(g, op):
    arr, index = op.inputs
    return g.node("SequenceAt", [g.value(arr), g.scalar_int(index)])


@facet("array_pop", "onnx")
def _pop(g, op):
    arr, index = op.inputs
    seq, i = g.value(arr), g.scalar_int(index)
    value = g.node("SequenceAt", [seq, i])
    return [g.node("SequenceErase", [seq, i]), value]


@facet("array_insert", "onnx")
def _insert(g, op):
    """Python's list.insert: a negative index counts from the end, and any index is clamped into range."""
    arr, index, x = op.inputs
    seq, i = g.value(arr), g.scalar_int(index)
    n = g.node("SequenceLength", [seq])
    zero = g.const(0, np.int64)
    i = g.node("Where", [g.node("Less", [i, zero]), g.node("Add", [i, n]), i])
    i = g.node("Min", [g.node("Max", [i, zero]), n])
    return g.node("SequenceInsert", [seq, g.value(x, arr.dtype), i])


@facet("array_stack", "onnx")
@facet("array_concat", "onnx")
def _join(g, op):
    return g.node("ConcatFromSequence", [g.value(op.inputs[0])], axis=int(op.attrs.get("axis", 0)),
                  new_axis=int(op.type == "array_stack"))
