"""save / load / export_python for static functions and layers.

    transpiler.save(model, "out/model", input_spec=[InputSpec([None, 784], "float32", "x")])
    m = transpiler.load("out/model")          # no import of the user's code
    transpiler.export_python(model, "out/model_np", input_spec=[...])   # one .py + .npz, NumPy only
    transpiler.export_python(transpiler.load("out/model"), "out/model_np")  # from a saved Program
    transpiler.export_onnx(model, "out/model.onnx", input_spec=[...])       # needs the `onnx` extra

A thin layer over `runtime.deploy`, `runtime.export` and `runtime.onnx`: what it adds is
getting the Program of a Layer, method, function or StaticFunction for the
given input spec, or of a LoadedProgram (whose inputs are fixed by the file).
"""
import os
import types

import runtime as rt
from runtime import deploy as _deploy
from runtime import export as _export

from .api import StaticFunction, to_static
from runtime import onnx as _onnx


def program_for(obj, input_spec=None):
    """The traced Program of obj (a Layer, StaticFunction, function or method) for input_spec.

    A LoadedProgram is its own Program: its input specs come from the saved file,
    so an input_spec that differs from them is refused rather than ignored.
    """
    if isinstance(obj, _deploy.LoadedProgram):
        return _loaded_program(obj, input_spec)
    static = _static_function(obj, input_spec)
    program = static.deployed_program(input_spec)
    _refuse_writes(static, program)
    return program


def _refuse_writes(static, program):
    """A Program that writes objects (a training step) would lose those writes in a file: refuse it."""
    for traced in list(static._cache.values()):
        if traced.program is program and traced.state:
            raise ValueError(f"{static!r} writes tensors or attributes after each run (a training step, "
                             "BatchNorm in training mode); a saved Program keeps only what it returns: save the "
                             "inference function, or the model after .eval()")


def _loaded_program(loaded, input_spec):
    if input_spec is not None:
        given = [s if isinstance(s, rt.InputSpec) else rt.InputSpec.from_value(s) for s in input_spec]
        own = loaded.input_specs
        if len(given) != len(own) or any(list(g.shape) != list(o.shape) or g.dtype != o.dtype
                                         for g, o in zip(given, own)):
            raise ValueError(f"{loaded!r} was saved for inputs {own}; it cannot be re-traced for {given} "
                             "(leave out input_spec)")
    return loaded.program


def _static_function(obj, input_spec):
    if isinstance(obj, rt.nn.Layer):
        obj = obj.forward
    if isinstance(obj, StaticFunction):
        return obj
    if isinstance(obj, (types.FunctionType, types.MethodType)):
        return to_static(obj, input_spec=input_spec)
    raise TypeError(f"cannot save {type(obj).__name__}: expected a Layer, a function, a StaticFunction "
                    "or a LoadedProgram")


def save(obj, path, input_spec=None, origins=True):
    """Write `path.program.json` (versioned IR) and `path.params.npz`; returns both paths.

    Each op records the user's line it came from ("pkg/mod.py:12": the file relative to its
    package, a script's bare name; never an absolute path); `origins=False` records none.
    """
    program = program_for(obj, input_spec)
    _make_parent(path)
    return _deploy.save_program(program, path, origins=origins)


def load(path, device="cpu", max_bytes=None, max_iterations=None, max_ops=None):
    """A callable LoadedProgram running the saved Program (no Python source needed).

    `max_bytes` raises the limit on the parameters' size (default: 16x the .npz file's
    size + 64 MiB); `max_iterations` bounds the `while` loop iterations of each call, all loops
    together (opt-in; nested loops multiply). `max_ops` raises the limit on the Program's ops
    (default 200,000, `runtime.serialization.MAX_OPS`).
    """
    return _deploy.load_program(path, device=device, max_bytes=max_bytes, max_iterations=max_iterations,
                                max_ops=max_ops)


def export_python(obj, path, input_spec=None, device="cpu"):
    """Write one self-contained `.py` (NumPy or CuPy only) and its `.npz`; returns both paths."""
    program = program_for(obj, input_spec)
    _make_parent(path)
    return _export.export_python(program, path, device=device)


def export_onnx(obj, path, input_spec=None, opset=None):
    """Write one ONNX model (parameters as initializers) that onnxruntime runs; returns its path.

    `opset` defaults to runtime.onnx.DEFAULT_OPSET. An op with no ONNX lowering is an
    ExportError naming the op and the line of the user's code that made it.
    """
    program = program_for(obj, input_spec)
    _make_parent(path)
    return _onnx.export_onnx(program, path, opset=opset)


def _make_parent(path):
    parent = os.path.dirname(os.fspath(path))
    if parent:
        os.makedirs(parent, exist_ok=True)
