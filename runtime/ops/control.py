"""Ops that act when the Program runs: print, assert, raise; and the control-flow op types.

`cond` and `while` have no kernel: they are region ops (`regions.py`), whose OpDef's
`region` says how every stage treats the blocks they hold; the plan inlines their blocks
in Python `if` and `while` statements.
"""
import builtins
import re
import string
import sys
import weakref

import numpy as np

from .. import tracing
from ..tensor import Tensor
from ..tracer import Tracer
from .dispatch import apply
from .registry import OpDef, register
from .regions import CondRegion, WhileRegion
from .rules import Spec


def _host(value):
    return value if isinstance(value, list) else np.asarray(value.get() if hasattr(value, "get") else value)


def _print_kernel(xp, *values, template):
    print(template.format(*(_host(v) for v in values)), file=sys.stdout)


# a field's format spec, bounded: a spec in a loaded file must not ask for gigabytes of padding
_SAFE_SPEC = re.compile(r"[<>=^]?[+\- ]?#?0?\d{0,2}[,_]?(\.\d{1,2})?[bcdeEfFgGnosxX%]?")


def safe_field(name, spec, conv):
    """Whether a template field (as string.Formatter parses it) may format a value when a Program runs."""
    return name == "" and conv in (None, "r", "s", "a") and _SAFE_SPEC.fullmatch(spec or "") is not None


def _print_infer(*values, template):
    """One `{}` field per value: a conversion (`!r`) and a format spec of at most two-digit widths
    (`{:>8.3f}`) are allowed, nothing a loaded file could make huge (a nested field, a long padding)."""
    fields = [(name, spec, conv) for _, name, spec, conv in string.Formatter().parse(template) if name is not None]
    if len(fields) != len(values) or not all(safe_field(*field) for field in fields):
        raise ValueError(f"print: template {template[:60]!r} must hold exactly one {{}} per value (a conversion "
                         "and a format spec of two-digit widths at most)")
    return []


_print = register(OpDef("print", _print_kernel, _print_infer, num_outputs=0, pure=False, copies=True))


class Text:
    """Text with tensors in it, formatted when the Program runs (what an f-string over traced
    tensors becomes): a template with one `{}` field per tensor (see `safe_field`), other braces doubled."""

    def __init__(self, template, values):
        self.template, self.values = template, tuple(values)

    def __str__(self):
        return self.template.format(*self.values)


def print_(*values, sep=" "):
    """Print when the Program runs (eagerly: now). Non-tensor values become part of the text."""
    parts, tensors = [], []
    for v in values:
        if isinstance(v, Text):
            parts.append(v.template)
            tensors.extend(v.values)
        elif isinstance(v, (Tracer, Tensor)):
            parts.append("{}")
            tensors.append(v)
        else:
            parts.append(str(v).replace("{", "{{").replace("}", "}}"))
    return apply(_print, tuple(tensors), {"template": sep.join(parts)})


def _assert_kernel(xp, cond, *values, message="", origin=None):
    if not bool(xp.all(cond)):
        if values:
            message = message.format(*(_host(v) for v in values))
        where = f" (at {origin})" if origin else ""
        raise AssertionError(f"{message}{where}" if message else f"assertion failed{where}")


def _assert_infer(cond, *values, message="", origin=None):
    """With values, the message is a print-style template (plain `{}` fields only)."""
    if values:
        _print_infer(*values, template=message)
    return []


_assert = register(OpDef("assert", _assert_kernel, _assert_infer, num_outputs=0, pure=False, copies=True))


def assert_(cond, message="", origin=None):
    """Check cond when the Program runs: AssertionError with the message and the user's line.
    A `Text` message (an f-string over tensors) is formatted then, with the tensors' values."""
    if origin is None and tracing.current_block() is not None:
        origin = tracing.user_origin()
    values = ()
    if isinstance(message, Text):
        message, values = message.template, message.values
    return apply(_assert, (cond, *values), {"message": str(message), "origin": origin})


def _builtin_exception(name):
    """The built-in exception class of that name: a Program names its exception by a string, and
    loading one must never reach user code, so only builtins qualify."""
    cls = getattr(builtins, name, None) if isinstance(name, str) else None
    if not (isinstance(cls, type) and issubclass(cls, Exception)):
        raise ValueError(f"raise: {str(name)[:60]!r} is not a built-in exception type")
    return cls


def _raise_kernel(xp, *values, exception, message):
    cls = _builtin_exception(exception)
    if message is None:
        raise cls()
    raise cls(message.format(*(_host(v) for v in values)))


def _raise_infer(*values, exception, message):
    _builtin_exception(exception)
    if message is None:
        if values:
            raise ValueError("raise: values need a message template")
        return []
    return _print_infer(*values, template=message)


_raise = register(OpDef("raise", _raise_kernel, _raise_infer, num_outputs=0, pure=False, user_error=True))
_RAISING = weakref.WeakSet()


def mark_raising(block):
    """`block` ends in a raise op: whatever it yields is never used (see control_flow.cond)."""
    _RAISING.add(block)


def block_raises(block):
    return block in _RAISING


def raise_(exception, message=None, *values):
    """Raise `exception` (a built-in exception class) when the Program runs this op, with `message`
    (plain `{}` fields filled with the values, formatted as print does); eagerly: now."""
    name = exception.__name__ if isinstance(exception, type) else exception
    if message is not None:
        message = str(message)
    block = tracing.current_block()
    if block is None:
        _raise_kernel(np, *(v.numpy() if isinstance(v, Tensor) else v for v in values), exception=name,
                      message=message)
    apply(_raise, values, {"exception": name, "message": message})
    mark_raising(block)


class UndefinedValue:
    """The run-time value of a name that a loop never bound (it ran zero times, or not down that path).

    Passing it along (loop state, branch results) is fine; computing with it
    raises UnboundLocalError naming the variable, as Python would at the read.
    """

    __array_priority__ = 10 ** 6

    def __init__(self, name, origin):
        self.name, self.origin = name, origin

    def error(self):
        where = f" (assigned only inside the loop at {self.origin})" if self.origin else ""
        return UnboundLocalError(f"local variable '{self.name}' is referenced before assignment: the loop "
                                 f"that assigns it ran zero times or never reached the assignment{where}")

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


def lowered_by_executor(xp, *args, **attrs):
    """The kernel of a region op: never called, the plan inlines its blocks."""
    raise RuntimeError("region ops are lowered by the executor, not called")


COND = register(OpDef("cond", lowered_by_executor, None, num_outputs=-1, region=CondRegion()))
WHILE = register(OpDef("while", lowered_by_executor, None, num_outputs=-1, region=WhileRegion()))
