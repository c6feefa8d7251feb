"""raise and assert under a tensor-dependent condition (a `raise` op), the `try` bodies of converted
code (a raise they catch stays a Python raise) and the first statement of an `except` clause."""
import types

import runtime as rt
from runtime import tracing
from runtime.control_flow import as_predicate
from runtime.errors import SymbolicBoolError
from runtime.ops.control import Text

from ..errors import ConversionError
from .base import _decided, _in_branch, _symbolic
from .strings import _escape
from .regions import _GRAPH_ORIGIN


def check_caught(exc):
    """First statement of an `except` clause: a graph cannot catch at run time what tracing raised.
    A ConversionError or `bool()` of a traced value goes on up as it is: eager code never raises them."""
    if isinstance(exc, (SymbolicBoolError, ConversionError)):
        raise exc
    kind, origin = getattr(exc, _GRAPH_ORIGIN, None) or (None, None)
    if origin is None:
        return
    filename, _, line = tracing.user_origin().rpartition(":")
    error = ConversionError(
        f"{type(exc).__name__} raised while tracing the tensor-dependent `{kind}` at {origin} reaches this "
        f"`except` clause; the graph cannot catch it when the Program runs ({exc})", filename, int(line),
        "catch it inside the branch or loop body, keep the failing code out of the tensor-dependent region, "
        "or use to_static(..., full_graph=False) to run the function eagerly")
    setattr(error, _GRAPH_ORIGIN, (kind, origin))
    raise error from exc


def convert_assert(test, message_thunk):
    test = _decided(test)
    if _symbolic(test):
        test = as_predicate(test)       # a tensor of several elements has no truth value: ValueError, as eagerly
        message = message_thunk()
        rt.assert_(test, message=message if isinstance(message, Text) else str(message), origin=tracing.user_origin())
        return
    if not test:
        message = message_thunk()
        message = str(message) if isinstance(message, Text) else message
        raise AssertionError(message) if message != "" else AssertionError()


def convert_raise(exc, *cause):
    """`raise exc [from cause]`: Python's raise, unless tracing is inside a branch or loop body —
    then a `raise` op, so the Program raises the same built-in exception with the same message
    when, and only when, it takes this path."""
    if not _in_branch() or _caught(exc if isinstance(exc, type) else type(exc)):
        exc = _with_text(exc)
        if cause:
            raise exc from cause[0]
        raise exc
    cls = exc if isinstance(exc, type) else type(exc)
    if not (cls.__module__ == "builtins" and issubclass(cls, Exception)):
        raise TypeError(
            f"cannot raise {cls.__name__} under a tensor-dependent condition: a Program raises only built-in "
            "exception types (a saved Program must load without running your code); raise a built-in type "
            "such as ValueError or RuntimeError there")
    if isinstance(exc, type):
        rt.raise_(cls)
        return
    message, values = _message(exc)
    rt.raise_(cls, message, *values)


class catching:
    """A `try` body of converted code: a raise its handlers catch stays a Python raise, even in a
    function it calls, since a `raise` op could not be caught when the Program runs."""

    def __init__(self, types):
        self.types = types          # a thunk: the handlers' type expressions, read only on a raise

    def __enter__(self):     # the trace context's frame holds the open bodies' handlers (this thread's)
        self.scope = tracing.frame(catching=tracing.current_frame().catching + (self.types,))
        self.scope.__enter__()

    def __exit__(self, *exc_info):
        self.scope.__exit__(*exc_info)
        return False


def _caught(cls):
    """Would an open `try` of converted code catch an exception of type cls?"""
    for handled in reversed(tracing.current_frame().catching):
        flat = []
        for t in handled():
            flat.extend(t if isinstance(t, tuple) else (BaseException if t is None else t,))
        if any(isinstance(t, type) and issubclass(cls, t) for t in flat):
            return True
    return False


def _message(exc):
    """(template, tensor values) that make str(exc) when the Program runs."""
    args = exc.args
    if len(args) == 1 and isinstance(args[0], Text):
        return args[0].template, args[0].values
    if len(args) == 1 and _symbolic(args[0]):
        return "{}", (args[0],)
    if any(isinstance(a, Text) or _symbolic(a) for a in args):
        raise TypeError(f"{type(exc).__name__}(...) under a tensor-dependent condition: give it one message "
                        "(an f-string may hold tensors), not several arguments")
    if not args:
        return None, ()
    return _escape(args[0] if len(args) == 1 and isinstance(args[0], str) else str(exc)), ()


def _with_text(exc):
    """The exception with any run-time message made text now (it is raised while tracing)."""
    if isinstance(exc, BaseException) and any(isinstance(a, Text) for a in exc.args):
        exc.args = tuple(str(a) if isinstance(a, Text) else a for a in exc.args)
    return exc


class EmptyListRead(IndexError):
    """An empty Python list read at an index: Python's IndexError, wherever the read runs. Inside a
    tensor `if` the branch raises it when the Program runs (in a loop's first trace, before the list that
    grows there becomes a tensor array, the other branch gives the values: `hs[left[n]]` in a Tree-LSTM)."""
