"""Recording mode: while a block is current, ops on Variables append to it.

`trace(fn, specs)` is the entry point: it makes a Program with one input
Variable per spec, calls `fn` on them and records what it does. Eager Tensors
that traced code touches (layer weights, globals) become persistable inputs of
the Program, fed by reference on each run, never constants baked into it.
"""
import bisect
import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass

from . import pytree, rng
from .array_methods import ArrayMethods
from .autodiff.tape import enable_grad
from .dtypes import as_dtype
from .gc_pause import paused_gc
from .ir import Program
from .naming import UniqueNames, input_name
from .trace_context import _active, _active_lock, _state
from .trace_context import current_frame, frame, install, python_numbers  # noqa: F401 - tracing's face for the transpiler
from .tracer import Tracer, tracer_of, value_of  # noqa: F401 - tracing's face for the wrapping too
from .undefined import Undefined


class TraceState:
    """What recording one Program needs besides its graph; dropped when recording ends."""

    def __init__(self):
        self.captured = {}         # id(eager Tensor) -> its persistable Variable
        self.made = {}             # id(eager Tensor) -> a Tensor this trace made (rt.tensor of data, a Parameter):
                                   # a value of the run, never state (see `record`)
        self.constants = {}        # id(eager Tensor) -> the Tensors of `made` built from Python data (known.py)
        self.known = {}            # known.py's memo: id(Variable) -> (Variable, value or None)
        self.defs = ({}, {})       # known.py's index of defining ops
        self.written = {}          # cell identity -> (cell, value before): places left holding traced values
        self.keeps_writes = False  # a caller stores the places written after each run (to_static): item
                                   # assignment into a captured Tensor is then a write of it (runtime.writes)
        self.collectors = []       # one dict per tensor-dependent if/while being traced: the Tensors written
                                   # in place inside it (tensor_cell_key -> (Tensor, label)), see runtime.state
        self.input_names = None    # naming.UniqueNames of the inputs' names (lift_tensor's memo, made when first
                                   # needed, dropped when a rollback drops inputs)


def trace_state(program):
    """The state of program's recording (a fresh one, kept nowhere, when it is not being recorded)."""
    entry = _state.traces.get(id(program))
    return entry[1] if entry is not None and entry[0] is program else TraceState()


_RUNTIME_DIR = os.path.dirname(os.path.abspath(__file__))
_SKIP_DIRS = (_RUNTIME_DIR, os.path.join(os.path.dirname(_RUNTIME_DIR), "transpiler"))


def current_block():
    blocks = _state.blocks
    return blocks[-1] if blocks else None


def current_program():
    block = current_block()
    return block.program if block is not None else None


@contextmanager
def block_guard(block):
    blocks = _state.blocks
    if not blocks:
        with _active_lock:
            _active[0] += 1
    traces = _state.traces
    if id(block.program) not in traces:
        traces[id(block.program)] = (block.program, TraceState())
    blocks.append(block)
    try:
        yield block
    finally:
        blocks.pop()
        if not blocks:
            traces.clear()
            _state.tracers.clear()
            with _active_lock:
                _active[0] -= 1


@contextmanager
def parameter_names(named_tensors):
    """Give captured tensors readable Program names (e.g. a layer's "fc1.weight")."""
    named_tensors = list(named_tensors)
    _name_hints = _state.name_hints
    added = [id(t) for _, t in named_tensors if id(t) not in _name_hints]
    for name, t in named_tensors:
        _name_hints.setdefault(id(t), name)
    try:
        yield
    finally:
        for key in added:
            _name_hints.pop(key, None)


def converted(fn):
    """What library code (a Layer's __call__) should call while tracing: fn's converted form."""
    if _state.blocks and _state.call_converter is not None:
        return _state.call_converter(fn)
    return fn


def convert_callable(fn):
    """fn's converted form (the transpiler's service), whether or not this thread traces."""
    return _state.call_converter(fn)


def note_place_read(label, container, name, value):
    """Tell the transpiler (when it traces) that the trace read `container.get(name)`: guarded per call."""
    if _state.place_reader is not None:
        _state.place_reader(label, container, name, value)


def is_user_file(filename):
    """Whether code of this file is the user's (or a library's): not runtime/ or transpiler/."""
    return not filename.startswith(_SKIP_DIRS)


def user_origin():
    """"file:line" of the innermost frame outside runtime/ and transpiler/ (the user's code)."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        user = _USER_FILES.get(filename)
        if user is None:
            if len(_USER_FILES) >= 4096:
                _USER_FILES.clear()
            user = _USER_FILES[filename] = not filename.startswith(_SKIP_DIRS)
        if user:
            return f"{filename}:{line_of(frame)}"
        frame = frame.f_back
    return None


_USER_FILES = {}        # filename -> whether it is the user's (asked for ~6 frames of every op recorded)


_LINE_TABLES = {}      # id(code) -> (code, bytecode range starts, ends, lines); a few codes at a time
_MAX_LINE_TABLES = 64


def line_of(frame):
    """frame.f_lineno, looked up in the code's line table read once (`co_lines`) by bisection.

    CPython finds f_lineno by scanning the code's location table from its start: asked once per
    recorded op, in a function of thousands of lines (issue 27's chain written out), that scan made
    tracing quadratic in the function's length."""
    code, offset = frame.f_code, frame.f_lasti
    entry = _LINE_TABLES.get(id(code))
    if entry is None or entry[0] is not code:
        if not hasattr(code, "co_lines"):       # Python < 3.10
            return frame.f_lineno
        if len(_LINE_TABLES) >= _MAX_LINE_TABLES:
            _LINE_TABLES.clear()
        ranges = list(code.co_lines())
        entry = _LINE_TABLES[id(code)] = (code, [r[0] for r in ranges], [r[1] for r in ranges], [r[2] for r in ranges])
    _, starts, ends, lines = entry
    i = bisect.bisect_right(starts, offset) - 1
    if i >= 0 and offset < ends[i] and lines[i] is not None:
        return lines[i]
    return frame.f_lineno


@dataclass(frozen=True)
class InputSpec:
    """Shape (None or -1 = dynamic dim), dtype and name of one traced input."""

    shape: tuple
    dtype: object = "float32"
    name: str = None

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(-1 if d is None else int(d) for d in self.shape))
        object.__setattr__(self, "dtype", as_dtype(self.dtype))

    @classmethod
    def from_value(cls, value, name=None):
        return cls(tuple(value.shape), value.dtype, name)

    def __repr__(self):
        dims = ", ".join("None" if d == -1 else str(d) for d in self.shape)
        name = f", name={self.name!r}" if self.name else ""
        return f"InputSpec([{dims}], {self.dtype.name!r}{name})"


def note_made(tensor):
    """Record that the current trace made this eager Tensor (`rt.tensor` of data, a Parameter built in the
    call): a value of each run, which the Program reads from a private copy of its own (see `record`)."""
    block = current_block()
    if block is not None:
        trace_state(block.program).made[id(tensor)] = tensor     # held, so the id stays this tensor's


def tensor_cell_key(tensor):
    """The key of a Tensor's state cell (runtime.state.TensorCell) among the places a trace wrote."""
    return ("TensorCell", id(tensor), None)


def lift_tensor(tensor):
    """The traced value (a Tracer of a persistable input Variable) standing for an eager Tensor during this
    trace: the value written into it earlier in this trace, if any."""
    program = current_block().program
    state = trace_state(program)
    entry = state.written.get(tensor_cell_key(tensor))
    if entry is not None and entry[0].value is not None:      # a write earlier in this trace (runtime.state)
        return entry[0].value
    captured = state.captured
    var = captured.get(id(tensor))
    if var is None:
        if state.input_names is None:
            state.input_names = UniqueNames(v.name for v in program.inputs)
        hint = state.input_names.claim(_state.name_hints.get(id(tensor), "const"))   # parameters are found by it
        var = program.global_block.create_var(hint, tensor.shape, tensor.dtype, persistable=True)
        captured[id(tensor)] = var
        program.parameters[var.name] = tensor
        program.inputs.append(var)
    return tracer_of(var)


@dataclass(frozen=True)
class Checkpoint:
    """What a Program held before a trace attempt that may be discarded (see `rollback`)."""

    block: object
    n_ops: int
    n_blocks: int
    n_inputs: int
    written: dict


def checkpoint(block):
    program = block.program
    return Checkpoint(block, len(block.ops), program.block_mark(), len(program.inputs),
                      dict(trace_state(program).written))


def rollback(point):
    """Forget everything recorded since `point`: ops (their values go with them), sub-blocks, captured
    tensors and the places remembered as written (the caller puts back what those places held).

    A captured tensor is undone everywhere at once (input list, parameter table,
    capture map): the next capture of it makes a fresh Variable. Names need no undoing:
    a value's name is a hint, made unique when a Program is written.
    """
    block, program = point.block, point.block.program
    state = trace_state(program)
    dropped = program.inputs[point.n_inputs:]
    del program.inputs[point.n_inputs:]
    for var in dropped:
        program.parameters.pop(var.name, None)
    if dropped:
        dropped_ids = {id(v) for v in dropped}
        state.captured = {k: v for k, v in state.captured.items() if id(v) not in dropped_ids}
        state.input_names = None        # their names are free again
    del block.ops[point.n_ops:]
    program.discard_blocks(point.n_blocks)
    state.written.clear()
    state.written.update(point.written)


@dataclass(frozen=True)
class Recording:
    """A finished trace: the Program, and what the trace did outside it.

    `written` maps each place (runtime.state) the trace left holding traced
    values to (cell, value before). It belongs to the caller that makes those
    values outputs and writes them back (transpiler.effects), not to the
    Program, which stays the graph alone. `made` holds the eager Tensors the
    trace itself made (id -> Tensor): values of one run, never state.
    """

    program: Program
    inputs: list
    result: object
    written: dict
    made: dict


def trace(fn, specs, name=None):
    """Record `fn(*inputs)` into a new Program; returns (program, input_vars, outputs).

    `specs` are InputSpecs (or anything with .shape/.dtype) for the tensor
    arguments, in order. The returned Program's outputs are the flat Variables
    of what `fn` returned; `program.output_tree` rebuilds the nest.
    """
    recording = record(fn, specs, name)
    return recording.program, recording.inputs, recording.result


def record(fn, specs, name=None, keeps_writes=False, written=None):
    """`trace`, also handing back the places the trace wrote (a `Recording`); `keeps_writes`: the caller
    stores them after each run (so `t[i] = v` on a captured Tensor may be recorded as a write of it).

    A trace that fails (an exception, a KeyboardInterrupt) puts back what the places it wrote held before
    (`put_back`) and the random generator, then raises. `written`: the dict to note the places in (the
    caller's own, so that it can add and put back places it finds written another way, see transpiler.api).
    """
    program = Program(name or getattr(fn, "__name__", "main"))
    block = program.global_block
    for i, spec in enumerate(specs):
        spec = spec if isinstance(spec, InputSpec) else InputSpec.from_value(spec)
        program.inputs.append(block.create_var(input_name(program, spec.name or f"x{i}"), spec.shape, spec.dtype))
    # a Program is a function: whether a call goes on the tape is decided when it runs, so the caller's
    # no_grad does not reach the trace; a `with rt.no_grad():` inside fn marks the ops it records
    generator = rng.snapshot()
    with block_guard(block), enable_grad(), paused_gc():
        state = trace_state(program)
        state.keeps_writes = keeps_writes
        if written is not None:
            state.written = written
        inputs = [tracer_of(v) for v in program.inputs]
        try:
            result = fn(*inputs)
            finish_outputs(program, result)
        except BaseException:
            put_back(state.written)
            rng.restore(generator)
            raise
        written, made = state.written, state.made
    program.discard_blocks(0)   # sub-blocks of a branch or loop whose recording failed and was caught
    _own_made_tensors(program, made)
    return Recording(program, inputs, result, written, made)


def _own_made_tensors(program, made):
    """A Tensor the trace made is a value every run makes afresh (Python builds a new one per call): the
    Program reads it from a private Tensor holding the array it had when traced, never from the Tensor
    itself, which code outside may keep and change (or a write-back may store into) after the trace."""
    for var in program.inputs:
        tensor = program.parameters.get(var.name) if var.persistable else None
        if tensor is not None and made.get(id(tensor)) is tensor:
            own = type(tensor).__new__(type(tensor))
            own.array, own.backend, own._ag = tensor.array, tensor.backend, None
            own.requires_grad = tensor.requires_grad
            program.parameters[var.name] = own


def put_back(written):
    """Store in each written place (`TraceState.written`: cell identity -> (cell, value before)) the value it
    held before the trace (a value from earlier in this trace is left: the run stores the real one). Places
    are put back newest first, so the oldest value wins."""
    for cell, before in reversed(list(written.values())):
        if not any(isinstance(v, Tracer) for v in pytree.flatten(before)[0]):
            cell._store(before)


def finish_outputs(program, result):
    """Record what the traced function returned as the Program's outputs."""
    leaves, treedef = pytree.flatten(result)
    outputs, consts = [], {}
    for i, leaf in enumerate(leaves):
        if isinstance(leaf, Undefined):
            raise leaf.error()
        if isinstance(leaf, Tracer):
            outputs.append(leaf.value)
        elif isinstance(leaf, ArrayMethods):      # an eager Tensor (tensor.py is above this layer)
            outputs.append(lift_tensor(leaf).value)
        else:
            consts[i] = leaf
    program.outputs = outputs
    program.output_tree = treedef
    program.output_consts = consts


def rebuild_outputs(program, values):
    """Inverse of finish_outputs: the nest the traced function returned, from run results."""
    if not program.output_consts:
        return pytree.unflatten(program.output_tree, values)
    leaves, it = [], iter(values)
    for i in range(program.output_tree.num_leaves):
        leaves.append(program.output_consts[i] if i in program.output_consts else next(it))
    return pytree.unflatten(program.output_tree, leaves)
