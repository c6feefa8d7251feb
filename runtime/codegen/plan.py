"""A compiled Program: one generated Python function, run with errors mapped to ops.

`compile_plan` generates the source (`fast.PlanCodegen`) and compiles it under a
file name of its own; when the function raises, `located` finds the plan line
that failed, and the op it came from names the user's file and line.
"""
import itertools

from ..errors import ProgramRunError
from ..ops.control import UndefinedValue
from ..ops.registry import get_op
from ..tensor import Tensor
from .fast import PlanCodegen
from .feeds import prepare_feed


class Plan:
    """A compiled Program: call it with backend arrays in `program.inputs` order."""

    def __init__(self, program, backend, fn, source, line_ops):
        self.program = program
        self.backend = backend
        self.fn = fn
        self.source = source
        self.line_ops = line_ops
        self.inputs = list(program.inputs)

    def __call__(self, *arrays):
        try:
            return self.fn(*arrays)
        except Exception as e:
            raise located(e, self) from None

    def run(self, feed=None):
        """Run on a feed dict (name -> Tensor/array); returns Tensors in `program.outputs` order."""
        arrays = prepare_feed(self.program, self.backend, feed or {})
        outs = self(*arrays)
        return [wrap_output(o, self.backend) for o in outs]


def wrap_output(value, backend):
    if type(value) is UndefinedValue:
        raise value.error()
    if isinstance(value, list):
        return [Tensor(v, backend) for v in value]
    return Tensor(value, backend)


def generate_source(program, backend, max_iterations=None):
    gen = PlanCodegen(program, backend, max_iterations)
    gen.function("plan")
    return "\n".join(gen.lines) + "\n", gen.line_ops, gen.namespace


_plan_numbers = itertools.count(1)   # next() is atomic: plans compiled in two threads never share a name


def compile_plan(program, backend, max_iterations=None):
    source, line_ops, namespace = generate_source(program, backend, max_iterations)
    filename = f"<dy2static plan {next(_plan_numbers)}: {program.name}>"
    exec(compile(source, filename, "exec"), namespace)
    plan = Plan(program, backend, namespace["plan"], source, line_ops)
    plan.filename = filename
    return plan


def located(error, plan):
    """The same kind of error, its message naming the failing op and the user's line."""
    tb = error.__traceback__
    op = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == plan.filename:
            op = plan.line_ops.get(tb.tb_lineno, op)
        tb = tb.tb_next
    if op is None or isinstance(error, AssertionError):
        return error
    if get_op(op.type).user_error:      # the user's own exception: its message stays theirs, the line is a note
        if op.origin and hasattr(error, "add_note"):      # Python 3.11+
            error.add_note(f"raised at {op.origin}")
        return error
    where = f" at {op.origin}" if op.origin else ""
    message = f"{error} [while running op '{op.type}'{where}]"
    new = _same_kind(error, message)
    new.op = op
    new.__cause__ = error
    return new


def _same_kind(error, message):
    """An error of error's type whose message is `message`, so `except MemoryError` still catches it.

    A type whose constructor takes the message (ValueError, MemoryError, ...) is called with it; one that
    takes other arguments (NumPy's `_ArrayMemoryError(shape, dtype)`) is subclassed together with
    ProgramRunError, the message set as its only argument. Only a type that cannot be subclassed so gives
    a ProgramRunError, with the original as its cause."""
    cls = type(error)
    try:
        new = cls(message)
        if str(new) == message:
            return new
    except Exception:       # noqa: BLE001 - any constructor may refuse a lone message
        pass
    located_cls = _located_type(cls)
    if located_cls is None:
        return ProgramRunError(message)
    new = located_cls.__new__(located_cls)
    new.args = (message,)
    return new


_LOCATED_TYPES = {}


def _located_type(cls):
    """`cls` and ProgramRunError in one type whose str() is its message (made once per type), or None."""
    if cls not in _LOCATED_TYPES:
        try:
            made = type(cls.__name__, (cls, ProgramRunError), {
                "__str__": BaseException.__str__, "__init__": BaseException.__init__,
                "__reduce__": lambda self: (_rebuild_located, (cls, str(self))),     # pickles (Dask workers)
                "__module__": cls.__module__, "__qualname__": cls.__qualname__,
                "__doc__": f"{cls.__name__} raised while a Program ran; also a ProgramRunError"})
        except TypeError:       # a layout conflict, or a final type
            made = None
        _LOCATED_TYPES[cls] = made
    return _LOCATED_TYPES[cls]


def _rebuild_located(cls, message):
    """Unpickles an error `_same_kind` made: the same located type, in this process."""
    return _same_kind(cls.__new__(cls), message)
