"""Each op's ONNX lowering, attached to its OpDef as the `onnx` facet (by op family).

A lowering is `lower(g, op) -> value name(s)`; `g` is runtime.onnx.builder.GraphBuilder.
These modules never import onnx: the exporter (runtime/onnx/) does, when asked to export.
An op left out here has no ONNX form, and exporting a Program that uses it is an
ExportError naming the op and the user's line.
"""
from . import control, elementwise, indexing, nn, rearrange, reduction, scan, shape, tensor_array  # noqa: F401
