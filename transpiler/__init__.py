"""dy2static's transpiler: Python control flow on tensors → static graph Programs.

    from transpiler import to_static, to_source, InputSpec
"""
from runtime.tracing import InputSpec
from .api import StaticFunction, not_to_static, to_source, to_static
from .errors import ConversionError, ConversionWarning
from .deploy import export_onnx, export_python, load, save
from .cluster import map_batches

__all__ = ["to_static", "to_source", "InputSpec", "not_to_static", "ConversionError", "ConversionWarning",
           "StaticFunction", "save", "load", "export_python", "export_onnx", "map_batches"]
