"""After each run, the values a static function's Program computed for the places its trace wrote.

`StateWrites` turns each written place (`runtime.state` cells, collected by
`collector.Effects`) into extra outputs of the Program it runs (a copy: the
function's Program keeps its own outputs) and puts the old value back; after
every run of the Program it stores the new values: eager Tensors, or a Python
number where the place held one before (a float counter stays a float). A
Tensor written in place (`runtime.writes`: a Parameter, a buffer, optimizer
state) is a `TensorCell`: each run stores the new array into the same Tensor.
Places of objects the call made (`lifetimes`) are values of the run: a LOCAL
one is dropped, an ESCAPED one is stored but never read back.

What the Program read of those places is checked before each run:
- a Python number was baked into the Program: if the object now holds
  another value (the last run wrote one), the function is traced again;
- a Tensor was fed as an input: the run feeds what the place holds now (the
  Tensor the last run wrote), and traces again if its shape or dtype changed.
"""
import numbers
import weakref

from runtime import pytree
from runtime.control_flow import Undefined
from runtime.errors import ControlFlowError
from runtime.tracer import Tracer, value_of
from runtime.tensor import Tensor
from runtime.tracing import put_back

from .lifetimes import BEFORE, LOCAL


# A Tensor a write-back took off an object -> the Tensor put there instead (weakly). Another
# Program that captured the old one reads the new one (`current`), as Python would.
_successors = {}
GENERATION = [0]     # bumped on every replacement: generated fast call paths check it


def _replaced(old, new):
    if isinstance(old, Tensor) and old is not new and isinstance(new, Tensor):
        for key, (was, now) in list(_successors.items()):
            if now() is old:       # point straight at the newest: `old` itself may soon be gone
                _successors[key] = (was, weakref.ref(new))
        _successors[id(old)] = (weakref.ref(old), weakref.ref(new))
        weakref.finalize(old, _successors.pop, id(old), None)
        GENERATION[0] += 1


def current(tensors):
    """The tensors to feed for these captured ones: each followed to the Tensor a write-back put in its place."""
    if not _successors:
        return tensors
    out = list(tensors)
    for i, t in enumerate(out):
        while id(t) in _successors:
            old, new = _successors[id(t)]
            new = new()
            if old() is not t or new is None or new.shape != t.shape or new.dtype != t.dtype:
                break
            t = new
        out[i] = t
    return out


class StateWrites:
    __slots__ = ("entries", "feeds", "checks", "outputs", "in_place")

    def __init__(self, program, written, param_tensors, lifetimes=None):
        self.in_place = []      # (Tensor, output index, shape, dtype): tensors written in place (TensorCell)
        self.entries = []       # (cell, treedef, [output index, ("const", value) or ("made", Tensor, array) per
                                #  leaf], [type or None], whether a replaced Tensor is linked to the new one)
        self.outputs = []       # the Variables to add to the Program's outputs for the run
        self.feeds = {}         # index into param_tensors -> (cell, leaf index, tensor it held at trace time)
        self.checks = []        # (cell, treedef before, [(leaf index, Python value baked into the Program)])
        params = {id(t): i for i, t in enumerate(param_tensors)}
        places, written = written, [(cell, before, cell.get()) for cell, before in written.values()]
        put_back(places)        # the objects as the call found them: what lifetimes.sort walks
        kinds = lifetimes.sort([(cell, now) for cell, _, now in written], program.output_consts.values()) \
            if lifetimes is not None else {}
        made = lifetimes.is_made if lifetimes is not None else _never
        for cell, before, now in written:
            kind = kinds.get(cell.identity(), BEFORE)
            if kind == LOCAL:
                continue        # made by this call and left nowhere outside it: a value of the run alone
            if cell.in_place:
                tensor = cell.obj
                self.in_place.append((tensor, len(program.outputs) + len(self.outputs), tensor.shape, tensor.dtype))
                self.outputs.append(now)
                continue
            leaves, treedef = pytree.flatten(now)
            ended = [v for v in leaves if isinstance(v, Tracer) and v.block is not program.global_block]
            if ended:
                raise ControlFlowError(
                    f"'{cell.label}' is given a value computed inside a tensor-dependent if/while "
                    f"({_origin(program, ended[0])}) in a function called from there, so it cannot be carried "
                    f"out of the graph op; assign it in the function that has the if/while, or return the value")
            old, old_def = pytree.flatten(before)
            if old_def == treedef and all(a is b and not isinstance(a, (Tracer, Tensor, Undefined)) and
                                          not _is_number(a) for a, b in zip(leaves, old)):
                continue    # left as it was (`p.grad` None again after zero_grad): nothing to store or check
            slots, numbers_ = [], []
            for k, leaf in enumerate(leaves):
                if isinstance(leaf, Tracer):
                    slots.append(len(program.outputs) + len(self.outputs))
                    self.outputs.append(leaf)
                elif made(leaf):
                    slots.append(("made", leaf, leaf.array))     # a new Tensor each run, as each call makes one
                else:
                    slots.append(("const", leaf))
                was = old[k] if old_def == treedef else None
                keep_number = isinstance(leaf, Tracer) and leaf.weak and leaf.static_shape == () and _is_number(was)
                numbers_.append(type(was) if keep_number else None)
            self.entries.append((cell, treedef, slots, numbers_, kind == BEFORE))
            if kind != BEFORE:
                continue    # made by this call: each run makes its values afresh, so none is read back from it
            baked = [(k, v) for k, v in enumerate(old) if _is_number(v) or isinstance(v, Undefined)]
            self.checks.append((cell, old_def, baked))
            for k, v in enumerate(old):
                if isinstance(v, Tensor) and id(v) in params:
                    self.feeds[params[id(v)]] = (cell, k, v)

    def __bool__(self):
        return bool(self.entries or self.in_place)

    def runnable(self, program):
        """What to compile: the Program as traced, or a copy also returning the values to write back.

        The Program itself (`get_program`, save, export) stays the function's
        own: its outputs are what the function returns.
        """
        if not self.outputs:
            return program
        copy = program.clone()
        copy_of = dict(zip(map(id, program.all_vars()), copy.all_vars()))    # one walk, one order
        copy.outputs = copy.outputs + [copy_of[id(value_of(v))] for v in self.outputs]
        return copy

    def stale(self):
        """Why the Program no longer fits what the objects hold (a reason for the retrace), or None."""
        for tensor, _, shape, dtype in self.in_place:
            if tensor.array.shape != shape or tensor.array.dtype != dtype:
                return f"a written tensor: {_brief(tensor)}, traced as {dtype.name}{list(shape)}"
        for cell, old_def, baked in self.checks:
            now, now_def = pytree.flatten(cell.get())
            if now_def != old_def:
                return f"{cell.label}: structure {old_def} -> {now_def}"
            for k, value in baked:
                if type(now[k]) is not type(value) or not isinstance(value, Undefined) and now[k] != value:
                    path = pytree.leaf_paths(old_def)[k]
                    return f"{cell.label}{path}: {_brief(value)} -> {_brief(now[k])}"
        for cell, k, then in self.feeds.values():
            now = pytree.flatten(cell.get())[0][k]
            if not isinstance(now, Tensor) or now.shape != then.shape or now.dtype != then.dtype:
                return f"{cell.label}: {_brief(then)} -> {_brief(now)}"
        return None

    def param_tensors(self, tensors):
        """The tensors to feed this run: what the written places hold now."""
        if not self.feeds:
            return tensors
        tensors = list(tensors)
        for i, (cell, k, _) in self.feeds.items():
            tensors[i] = pytree.flatten(cell.get())[0][k]
        return tensors

    def store(self, outputs):
        """Write one run's values (wrapped outputs) to the objects."""
        written = set()
        for tensor, k, _, _ in self.in_place:
            tensor.array = outputs[k].array
            written.add(id(tensor))
        for cell, treedef, slots, numbers_, links in self.entries:
            leaves = [outputs[s] if isinstance(s, int) else _fresh(s, written) if s[0] == "made" else s[1]
                      for s in slots]
            leaves = [t(v.numpy().item()) if t is not None else v for t, v in zip(numbers_, leaves)]
            previous, previous_def = pytree.flatten(cell.get())
            if links and previous_def == treedef:
                for old, new in zip(previous, leaves):
                    _replaced(old, new)
            cell._store(pytree.unflatten(treedef, leaves))


def _fresh(slot, written):
    """A Tensor the trace made, stored on an object: a new one each run (with what the run wrote into it)."""
    _, tensor, array = slot
    array = tensor.array if id(tensor) in written else array
    return type(tensor)(tensor.backend.xp.array(array, copy=True), tensor.backend)


def _never(value):
    return False


def _origin(program, var):
    var = value_of(var)
    for op in program.ops():
        if any(out is var for out in op.outputs):
            return f"at {op.origin}" if op.origin else "in a branch"
    return "in a branch"


def _is_number(value):
    return isinstance(value, numbers.Number) and not isinstance(value, Tensor)


def _brief(value):
    if isinstance(value, Undefined):
        return "no value"
    if isinstance(value, Tensor):
        return f"tensor {value.dtype.name}{list(value.shape)}"
    return repr(value)
