"""Places outside the graph: the one notion of a place a trace reads or writes that is no value of it.

A place is a `Cell`: an attribute (`AttrCell`), a constant-key item (`ItemCell`;
a global is an item of its module's dict), a list/dict's contents
(`ContentsCell`), a closure variable (`ClosureCell`), or a Tensor's contents
(`TensorCell`, `TensorValueCell`: written in place, `runtime.writes`). Each
has read (`get`), write (`set`: while tracing at the top level, noted in the
trace's journal with the value before) and store (`_store`: what a rollback
puts back and what a run stores after it).

Converted code writes `self.n = ...` or `self.cache["k"] = ...` inside a
tensor-dependent `if`/`while`. Such a place is state, exactly like a local
name: `cond` and `while_loop` read it before the construct (`get`), let each
traced branch or body start from that value (`set`), take what each one left
there as an extra output, and store the op's result back (`set`).

A place with no value (a missing attribute or key) reads as `Undefined`;
storing `Undefined` removes it again.

While a Program is traced, every cell that is left holding traced values is
remembered (`tracing.TraceState.written`, handed out as `Recording.written`):
the caller makes those values extra outputs of the Program and writes them
back to the object after each run (see `transpiler.effects`), so the object
holds eager Tensors, never Variables.
"""
from contextlib import contextmanager

from . import pytree, tracing
from .tracing import tensor_cell_key
from .errors import ControlFlowError
from .tracer import Tracer
from .undefined import Undefined


class Cell:
    """One place in a Python object; `label` is how the user's code writes it (`self.n`)."""

    __slots__ = ("obj", "key", "label")
    in_place = False      # True: a run writes into the Tensor the place is (it keeps its identity)

    def __init__(self, obj, key, label):
        self.obj, self.key, self.label = obj, key, label

    def identity(self):
        return (type(self).__name__, id(self.obj), self.key)

    def get(self):
        raise NotImplementedError

    def set(self, value, always=False):
        """Store a value; while tracing at the top level, remember the place (and its value before)
        if it now holds traced values, or `always` (`p.grad = None` by zero_grad: each run stores it too)."""
        program = tracing.current_program()
        if program is not None and tracing.current_block() is program.global_block and \
                (always or any(isinstance(v, Tracer) for v in pytree.flatten(value)[0])):
            key = self.identity()     # (a set inside a branch/body is carried out by the enclosing op)
            written = tracing.trace_state(program).written
            if key not in written:
                written[key] = (self, self.get())
        self._store(value)

    def _store(self, value):
        raise NotImplementedError


def _undefined(label):
    return Undefined(label, tracing.user_origin())


def _is_undefined(value):
    return isinstance(value, Undefined)


class AttrCell(Cell):
    """`obj.name`."""

    __slots__ = ()

    def get(self):
        try:
            return getattr(self.obj, self.key)
        except AttributeError:
            return _undefined(self.label)

    def _store(self, value):
        if _is_undefined(value):
            if hasattr(self.obj, self.key):
                delattr(self.obj, self.key)
        else:
            setattr(self.obj, self.key, value)


class ItemCell(Cell):
    """`container[key]` for a constant key."""

    __slots__ = ()

    def identity(self):
        return ("ItemCell", id(self.obj), type(self.key), self.key)

    def get(self):
        try:
            return self.obj[self.key]
        except (KeyError, IndexError):
            return _undefined(self.label)

    def _store(self, value):
        if _is_undefined(value):
            if isinstance(self.obj, dict):
                self.obj.pop(self.key, None)
            return
        self.obj[self.key] = value


class ContentsCell(Cell):
    """Everything in a list or dict (`self.items.append(v)`, `self.log[i] = v`): a copy of it is the value."""

    __slots__ = ()

    def __init__(self, obj, label):
        super().__init__(obj, None, label)

    def get(self):
        if isinstance(self.obj, (list, dict)):
            return type(self.obj)(self.obj)
        return self.obj

    def _store(self, value):
        if value is self.obj or not isinstance(self.obj, (list, dict)):
            return
        if isinstance(value, Tracer):
            raise ControlFlowError(
                f"'{self.label}' changes length inside tensor-dependent control flow; a list stored on an "
                "object must keep its length there (use a local list, which becomes a tensor array)")
        if isinstance(self.obj, list):
            self.obj[:] = value
        else:
            self.obj.clear()
            self.obj.update(value)


class TensorCell(Cell):
    """A Tensor's value (`p.set_value(v)`, an optimizer step, `self.running_mean = ...` on a buffer).

    Written in place: after a run the same Tensor object holds the new array, so it keeps
    its identity (a Layer's registries, an optimizer's list, other Programs that
    captured it all see the new value). While tracing, `value` is the Variable
    written last, which later reads of the Tensor in the same trace get.
    """

    __slots__ = ("value",)
    in_place = True

    def __init__(self, tensor, label, value=None):
        super().__init__(tensor, None, label)
        self.value = value

    def identity(self):
        return tensor_cell_key(self.obj)

    def get(self):
        return self.obj if self.value is None else self.value

    def _store(self, value):
        """Only the trace's end stores here (the Tensor itself): later reads see the Tensor again. A run's
        value goes straight into `obj.array` (transpiler.effects.store)."""
        self.value = None


class ClosureCell(Cell):
    """A closure variable (`nonlocal n`): a cell object shared with the enclosing function."""

    __slots__ = ()

    def get(self):
        value = _cell_contents(self.obj)
        return Undefined(self.label) if value is _MISSING else value

    def _store(self, value):
        if isinstance(value, Undefined):
            if _cell_contents(self.obj) is not _MISSING:
                del self.obj.cell_contents
        else:
            self.obj.cell_contents = value


_MISSING = object()


def _cell_contents(cell):
    try:
        return cell.cell_contents
    except ValueError:
        return _MISSING


def write_tensor(tensor, value, label=None):
    """Record, while tracing, that the Program writes `value` (a Variable of the tensor's dtype) into
    `tensor`; later reads of it in this trace see `value`, and each run stores the result in place.

    Inside a tensor-dependent if/while the write is noted for every construct being traced
    (`TraceState.collectors`): one that does not carry the tensor yet traces again with it as
    state (a `TensorValueCell`), so its value flows through the `cond`/`while` op like a name."""
    program = tracing.current_program()
    state = tracing.trace_state(program)
    key = tensor_cell_key(tensor)
    written = state.written
    entry = written.get(key)
    label = entry[0].label if entry is not None else label or f"tensor{list(tensor.shape)}"
    if tracing.current_block() is not program.global_block:
        if not (state.collectors and state.keeps_writes) or tensor.requires_grad:
            why = ("a tensor that requires grad is written in place only outside such constructs"
                   if tensor.requires_grad else "a Program writes tensors in place only outside such constructs")
            raise ControlFlowError(
                f"{label} is written inside a tensor-dependent if/while: {why}; compute the new value there "
                "(rt.where(cond, new, old)) and write it after the if/while")
        _note_write(state, key, tensor, label)
    # a new cell per write: a rollback (tracing.rollback) puts back the entry, and with it the older value
    written[key] = (TensorCell(tensor, label, value), tensor)


def _note_write(state, key, tensor, label):
    for found in state.collectors:
        found.setdefault(key, (tensor, label))


class TensorValueCell(Cell):
    """A Tensor written in place inside a tensor-dependent if/while, carried by the op as state.

    Its value is what later reads of the Tensor in this trace get: the Variable of the
    last write (the trace's `TensorCell` entry), else the Tensor's own captured input.
    Storing a value makes it the last write; storing the captured input (or the Tensor)
    forgets the write, so a branch that writes nothing passes the value through. At
    the top level, a store is a write like `set_value`'s, stored after each run.
    """

    __slots__ = ()

    def __init__(self, tensor, label):
        super().__init__(tensor, None, label)

    def identity(self):
        return tensor_cell_key(self.obj)

    def get(self):
        entry = tracing.trace_state(tracing.current_program()).written.get(self.identity())
        if entry is not None and entry[0].value is not None:
            return entry[0].value
        return tracing.lift_tensor(self.obj)

    def set(self, value):
        program = tracing.current_program()
        if program is not None and tracing.current_block() is not program.global_block:
            state = tracing.trace_state(program)
            _note_write(state, self.identity(), self.obj, self.label)
        self._store(value)

    def _store(self, value):
        state = tracing.trace_state(tracing.current_program())
        key = self.identity()
        if value is self.obj or value is state.captured.get(id(self.obj)):
            state.written.pop(key, None)
        else:
            state.written[key] = (TensorCell(self.obj, self.label, value), self.obj)


@contextmanager
def collecting_writes():
    """While a tensor-dependent if/while is traced: the Tensors written in place inside it (see write_tensor)."""
    program = tracing.current_program()
    collectors = tracing.trace_state(program).collectors
    found = {}
    collectors.append(found)
    try:
        yield found
    finally:
        del collectors[next(i for i in range(len(collectors) - 1, -1, -1) if collectors[i] is found)]


def attr_cell(obj, name, label):
    return AttrCell(obj, name, label)


def item_cell(container, key, label):
    return ItemCell(container, key, label)


def contents_cell(container, label):
    return ContentsCell(container, label)
