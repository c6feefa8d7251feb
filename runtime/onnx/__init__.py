"""ONNX export of a Program: `export_onnx(program, "out/model.onnx")`.

    builder.py    the graph builder each op's lowering writes into (no onnx import)
    exporter.py   blocks -> graphs, cond/while -> If/Loop subgraphs, feeds, initializers, protobuf

Each op's lowering lives beside the op (`OpDef.onnx`, attached from
`runtime/ops/onnx_lowerings/`); an op without one is an ExportError naming the op
and the user's line, never a model that computes something else.
"""
import os

from ..deploy import _atomic_write
from ..export import ExportError
from .exporter import DEFAULT_OPSET, MIN_OPSET, model_proto

__all__ = ["export_onnx", "model_proto", "ExportError", "DEFAULT_OPSET", "MIN_OPSET"]


def export_onnx(program, path, opset=None):
    """Write `program` as one ONNX model file (parameters inside, as initializers); returns its path.

    A path without a suffix gets ".onnx".
    """
    path = os.fspath(path)
    if not os.path.splitext(path)[1]:
        path += ".onnx"
    data = model_proto(program, opset).SerializeToString()
    _atomic_write(path, lambda f: f.write(data))
    return path
