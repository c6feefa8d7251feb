"""The user-facing jit API: to_static, StaticFunction, not_to_static, to_source.

The parts live in their own modules: `conversion` (the conversion cache),
`static_function` (StaticFunction: per-signature tracing and its cache, keyed as
`signatures` says) and `fast_call` (the generated steady-state call).
"""
import types

import runtime as rt

from .conversion import convert_function, converted_source, not_to_static
from .static_function import DEFAULT_MAX_SIGNATURES, StaticFunction, converted_callable

__all__ = ["to_static", "to_source", "not_to_static", "StaticFunction", "convert_function", "converted_callable",
           "DEFAULT_MAX_SIGNATURES"]


def to_source(fn):
    """The converted source of a function, method or StaticFunction."""
    if isinstance(fn, StaticFunction):
        return fn.code
    fn = getattr(fn, "__func__", fn)
    return converted_source(fn)



def to_static(fn=None, *, input_spec=None, full_graph=True, passes=None, max_signatures=None):
    """Convert fn (a function or method) into a StaticFunction; usable bare or with arguments.

    On a Layer (as `paddle.jit.to_static(net)`) it gives the layer a static `forward` and returns
    the same layer: `net(x)` then runs the Program, parameters stay the layer's own.

    `max_signatures` bounds the traced Programs kept (default DEFAULT_MAX_SIGNATURES): past
    it the least recently used one is dropped (and retraced if it is needed again).
    """
    def wrap(f):
        if isinstance(f, StaticFunction):
            if input_spec is None and passes is None and full_graph and max_signatures is None:
                return f
            return StaticFunction(f._fn, input_spec if input_spec is not None else f._spec_tree, full_graph,
                                  passes if passes is not None else f._passes, f._instance,
                                  max_signatures or f._max_signatures)
        limit = DEFAULT_MAX_SIGNATURES if max_signatures is None else max_signatures
        if isinstance(f, rt.nn.Layer):
            f.forward = wrap(f.forward)          # an instance attribute: shadows the class's forward
            return f
        if isinstance(f, types.MethodType):
            static = StaticFunction(f.__func__, input_spec, full_graph, passes, max_signatures=limit)
            return static.__get__(f.__self__, type(f.__self__))
        if not isinstance(f, types.FunctionType):
            raise TypeError(f"to_static expects a function, a method or a Layer, got {type(f).__name__}")
        return StaticFunction(f, input_spec, full_graph, passes, max_signatures=limit)
    return wrap if fn is None else wrap(fn)
