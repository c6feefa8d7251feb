"""Ops that act when the Program runs: print, assert; and the control-flow op types.

`cond` and `while` have no kernel: the executor lowers them to Python `if` and
`while` around their inlined sub-blocks. They are registered so every op type a
Program may hold is known to the registry (serialization checks against it).
"""
import string
import sys

import numpy as np

from .. import tracing
from ..ir import Variable
from ..tensor import Tensor
from .dispatch import apply
from .registry import OpDef, register
from .rules import Spec


def _host(value):
    return value if isinstance(value, list) else np.asarray(value.get() if hasattr(value, "get") else value)


def _print_kernel(xp, *values, template):
    print(template.format(*(_host(v) for v in values)), file=sys.stdout)


def _no_output(*inputs, **attrs):
    return []


def _print_infer(*values, template):
    """Only plain `{}` fields: a format spec in a loaded file could ask for gigabytes of padding."""
    fields = [(name, spec, conv) for _, name, spec, conv in string.Formatter().parse(template) if name is not None]
    if len(fields) != len(values) or any(field != ("", "", None) for field in fields):
        raise ValueError(f"print: template {template[:60]!r} must hold exactly one plain {{}} per value")
    return []


_print = register(OpDef("print", _print_kernel, _print_infer, num_outputs=0, pure=False))


def print_(*values, sep=" "):
    """Print when the Program runs (eagerly: now). Non-tensor values become part of the text."""
    parts, tensors = [], []
    for v in values:
        if isinstance(v, (Variable, Tensor)):
            parts.append("{}")
            tensors.append(v)
        else:
            parts.append(str(v).replace("{", "{{").replace("}", "}}"))
    return apply(_print, tuple(tensors), {"template": sep.join(parts)})


CHECK_ERRORS = ("AssertionError", "ValueError")     # what a failed check may raise


def _assert_kernel(xp, cond, message="", origin=None, error="AssertionError"):
    if not bool(xp.all(cond)):
        where = f" (at {origin})" if origin else ""
        kind = ValueError if error == "ValueError" else AssertionError
        raise kind(f"{message}{where}" if message else f"assertion failed{where}")


_assert = register(OpDef("assert", _assert_kernel, _no_output, num_outputs=0, pure=False))


def assert_(cond, message="", origin=None, error="AssertionError"):
    """Check cond when the Program runs: AssertionError (or `error`, a name in CHECK_ERRORS) with the
    message and the user's line."""
    if origin is None and tracing.current_block() is not None:
        origin = tracing.user_origin()
    attrs = {"message": str(message), "origin": origin}
    if error != "AssertionError":
        if error not in CHECK_ERRORS:
            raise ValueError(f"assert_: error must be one of {CHECK_ERRORS}, not {error!r}")
        attrs["error"] = error
    return apply(_assert, (cond,), attrs)


class UndefinedValue:
    """The run-time value of a name that a loop which ran zero times never bound.

    Passing it along (loop state, branch results) is fine; computing with it
    raises UnboundLocalError naming the variable, as Python would at the read.
    """

    __array_priority__ = 10 ** 6

    def __init__(self, name, origin):
        self.name, self.origin = name, origin

    def error(self):
        where = f" (assigned only inside the loop at {self.origin})" if self.origin else ""
        return UnboundLocalError(f"local variable '{self.name}' is referenced before assignment: the loop "
                                 f"that assigns it ran zero times{where}")

    def _raise(self, *args, **kwargs):
        raise self.error()

    __array__ = __array_ufunc__ = __array_function__ = __bool__ = __float__ = __int__ = __index__ = _raise
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _raise
    __matmul__ = __rmatmul__ = __neg__ = __getitem__ = __len__ = __iter__ = _raise
    __lt__ = __le__ = __gt__ = __ge__ = _raise

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise self.error()


def _undefined_kernel(xp, name, shape, dtype, origin=None):
    return UndefinedValue(name, origin)


_undefined = register(OpDef("undefined", _undefined_kernel,
                            lambda name, shape, dtype, origin=None: Spec(tuple(shape), np.dtype(dtype))))


def undefined_value(name, shape, dtype, origin=None):
    """A placeholder Variable for a name first bound in a loop body (see UndefinedValue)."""
    return apply(_undefined, (), {"name": name, "shape": list(shape), "dtype": np.dtype(dtype).name,
                                  "origin": origin})


def _lowered_by_executor(xp, *args, **attrs):
    raise RuntimeError("control-flow ops are lowered by the executor, not called")


register(OpDef("cond", _lowered_by_executor, None, num_outputs=-1))
register(OpDef("while", _lowered_by_executor, None, num_outputs=-1))
