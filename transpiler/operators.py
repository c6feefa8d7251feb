"""The functions converted code calls: Python semantics on Python values, graph ops on tensors.

Each operator reads like the Python it stands for: the Python path first
(exactly what the original statement did), the graph path second (when a
condition or iterable is a symbolic Variable). Converted code refers to this
module as `_jst`.
"""
import builtins
import functools
import operator
import re
import sys
import types

import numpy as np

import runtime as rt
from runtime import pytree, tracing
from runtime.control_flow import Undefined, as_predicate, as_variable
from runtime.tracer import Tracer
from runtime.undefined import AT_RUN_TIME
from runtime.errors import ControlFlowError, SymbolicBoolError
from runtime.ops.dispatch import record as record_op
from runtime.ops.known import known_value
from runtime.ops.control import WHILE, Text, safe_field
from runtime.ops.registry import get_op
from runtime.state import attr_cell, contents_cell, item_cell
from runtime.tensor import stands_for
from runtime.torch_methods import in_place_value

from .aliases import CONVERTED_CODES, array_item, write_through
from .choices import FunctionChoices, copy_containers
from .errors import ConversionError
from .scan_for import scanned_for


def _symbolic(value):
    return isinstance(value, Tracer)


def _tuple(result, n):
    """A branch/body function's return value as a tuple of its n outputs."""
    if n == 0:
        return ()
    return (result,) if n == 1 else tuple(result)


def _untuple(values, n):
    if n == 0:
        return None
    return values[0] if n == 1 else tuple(values)


def undefined(name):
    """The placeholder for a name that has no value yet (see runtime.undefined.Undefined)."""
    return Undefined(name, tracing.user_origin())


def outer_value(read, name):
    """A global/nonlocal passed into a branch or loop body: its value, or a placeholder while it has none."""
    try:
        return read()
    except NameError:
        return undefined(name)


def return_placeholder():
    """The return value before any `return` ran: filled with zeros where a graph needs a value."""
    return Undefined("return value", tracing.user_origin(), fill=True)


# --- if / ternary ----------------------------------------------------------------------

def _decided(pred):
    """pred's value when it is a Python value or known while tracing (it depends on no input and no
    captured tensor: runtime.ops.known); pred itself when only the Program can tell."""
    if _symbolic(pred):
        known = known_value(pred)
        if known is not None:
            return known
    return pred


def convert_ifelse(pred, true_fn, false_fn, args, names, state=None):
    """`false_fn` None: an `if` without `else` whose outputs are its arguments (they pass through).
    `state`: a function returning the cells (attributes, items) the branches write; see runtime.state."""
    n = len(names)
    if false_fn is None:
        false_fn = lambda *values: _untuple(values, n)   # noqa: E731
    pred = _decided(pred)
    if not _symbolic(pred):
        try:
            return true_fn(*args) if pred else false_fn(*args)
        except BaseException as e:
            _keep_partial_state(e, (true_fn, false_fn), names, sys._getframe(1))
            raise
    returned, changed = {}, {}
    choice = FunctionChoices(pred, names, convert_call)

    def branch(fn, side, extra):
        def run():
            copies = copy_containers(args)
            out = _branch_or_raise(lambda: _jumped_unbound(_tuple(fn(*copies), n), names), names)
            returned[side] = _returned_args(out, copies, args)
            changed[side] = {j for j, (c, a) in enumerate(zip(copies, args)) if _container_changed(c, a)}
            return choice.park(side, out) + tuple(copies[j] for j in extra)
        return run

    undo = _undo_point(state)
    watched, captured = _watch_objects(state, true_fn, false_fn), _cell_values(true_fn, false_fn)
    extra, called_writes = (), False
    while True:
        labels = tuple(_param_name(true_fn, j) for j in extra)
        try:
            with _graph_region("if"):
                outs = rt.cond(pred, branch(true_fn, 0, extra), branch(false_fn, 1, extra), names=names + labels,
                               state=state)
        except ControlFlowError:
            choice.explain()
            raise
        moved = [] if called_writes else list(_moved_attributes(watched))
        if moved:       # attributes a method called in a branch sets (`self.bump()`): carried, traced again
            undo()
            state, called_writes = _carrying_attributes(state, moved, watched), True
            undo = _undo_point(state)
            continue
        given = {j for side in returned.values() for j in side if j is not None}
        unseen = sorted((changed[0] | changed[1]) - given)
        if extra or not unseen:
            break
        # a container changed in a branch yet given to no name after the if (`y = x["a"]`, then
        # `y["b"] = v` in a branch): trace again with it as an output, so its merged value goes back
        undo()
        extra = tuple(unseen)
    _check_captured("if", captured, true_fn, false_fn)
    _check_objects("if", watched)
    for j, label, merged in zip(extra, labels, outs[n:]):
        _write_into(args[j], merged, label)
    outs = _write_back(choice.resolve(outs[:n]), args, names, returned[0], returned[1])
    _check_list_aliases("if", args, outs, names)
    return _untuple(outs, n)


def _branch_or_raise(trace_branch, names):
    """trace_branch() inside a tensor `if`'s branch; an error Python would raise only when the branch
    runs (`_deferrable`: a shape error in dead code, an empty list read there) makes the branch a `raise`
    op instead, whose values (None, one per name) are never used: the cond takes the other branch's
    values there (runtime.control_flow: a branch that raises), and where both raise nothing runs after it."""
    start = tracing.checkpoint(tracing.current_block())
    try:
        return trace_branch()
    except Exception as error:
        if not (isinstance(error, EmptyListRead) or _deferrable(error)):
            raise
        tracing.rollback(start)
        _raise_when_taken(error)
        return (None,) * len(names)


_NOT_DEFERRED = (RecursionError, MemoryError, StopIteration, StopAsyncIteration)


def _deferrable(error):
    """An error raised while tracing a branch of a tensor `if` that Python raises only when the branch
    runs: a built-in exception (the `raise` op's kind) raised by Python or a library in the user's code,
    or by an op refusing its inputs (a shape error in dead code); not a limit of tracing (a traced value
    asked for its Python value), a conversion error, or one an open `try` of converted code catches."""
    cls = type(error)
    if cls.__module__ != "builtins" or isinstance(error, _NOT_DEFERRED) or _caught(cls):
        return False
    frames = _traceback_frames(error)
    if frames and (tracing.is_user_file(frames[-1].f_code.co_filename) or
                   frames[-1].f_code is convert_assert.__code__):      # Python's `assert` on Python values
        return True
    return any(frame.f_code is _RECORD_CODE for frame in frames)


_RECORD_CODE = record_op.__code__        # dispatch.record: an op's rule checking its inputs while tracing


def _traceback_frames(error):
    frames, tb = [], error.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    return frames


def _raise_when_taken(error):
    """A `raise` op of error's type and message, at the user's line where it was raised."""
    message = _escape(str(error)) if error.args else None
    rt.raise_(next(c for c in type(error).__mro__ if c.__module__ == "builtins"), message)   # EmptyListRead: IndexError
    origin = next((f"{f.f_code.co_filename}:{f.f_lineno}" for f in reversed(_traceback_frames(error))
                   if tracing.is_user_file(f.f_code.co_filename)), None)
    if origin is not None:
        tracing.current_block().ops[-1].origin = origin


def _jumped_unbound(outs, names):
    """A branch that returns, breaks or continues (it sets a jump flag) leaves its unbound names to be
    filled by an `undefined` op: the code Python runs next on that path reads none of them (it is guarded by
    the flag), so the name is bound after the `if` wherever it is read (`complicated(x)`: `a` is bound on
    every path that reaches `return a + 1`); a read that does happen raises when the Program runs."""
    jumps = {_JUMP_FLAG.match(name).group(1) for name, value in zip(names, outs)
             if value is True and _JUMP_FLAG.match(name)}
    if not jumps:
        return outs
    # after a `return` nothing reads it: zeros, as for the return value (a gradient may read those)
    fill = True if any(jump.startswith("return") for jump in jumps) else AT_RUN_TIME
    return tuple(Undefined(v.name, v.origin, fill=fill, bound=v.bound)
                 if type(v) is Undefined and not v.fill and not _JUMP_FLAG.match(name) else v
                 for name, v in zip(names, outs))


_JUMP_FLAG = re.compile(r"__(return_flag(_\d+)?|break_\d+|continue_\d+)$")


def _container_changed(copy, original):
    """Did a branch change its copy of a list or dict (items, length, keys, or inside them)?"""
    if type(original) not in (list, dict):
        return False
    a, b = pytree.flatten(copy), pytree.flatten(original)
    return a[1] != b[1] or any(x is not y for x, y in zip(a[0], b[0]))


def _param_name(fn, j):
    code = getattr(fn, "__code__", None)
    return code.co_varnames[j] if code is not None and j < code.co_argcount else f"argument {j}"


def convert_ifexp(pred, true_thunk, false_thunk, name=None):
    """`a if pred else b`; `name`: the variable (or `__return_value`) it gives its value to, for errors."""
    pred = _decided(pred)
    if not _symbolic(pred):
        return true_thunk() if pred else false_thunk()
    choice = FunctionChoices(pred, ("the function chosen by a conditional expression",), convert_call)
    watched, captured = _watch_objects(None, true_thunk, false_thunk), _cell_values(true_thunk, false_thunk)
    state, undo = None, _undo_point()
    try:
        while True:
            out = rt.cond(pred, lambda: choice.park(0, _branch_or_raise(lambda: (true_thunk(),), (name,))),
                          lambda: choice.park(1, _branch_or_raise(lambda: (false_thunk(),), (name,))),
                          names=None if name is None else (name,), state=state)
            moved = [] if state is not None else _moved_attributes(watched)
            if not moved:
                break
            undo()          # attributes a method called in a branch sets: carried, traced again
            state = _carrying_attributes(state, moved, watched)
    except ControlFlowError:
        choice.explain()
        raise
    _check_captured("conditional expression", captured, true_thunk, false_thunk)
    _check_objects("conditional expression", watched)
    return choice.resolve(out)[0]


def _returned_args(outs, given, originals):
    """For each output: the index of the argument whose copy the code returned (mutated in place), or None."""
    return [next((j for j, (g, o) in enumerate(zip(given, originals)) if out is g and g is not o), None)
            for out in outs]


def _write_back(outs, args, names, *returned):
    """A container that every traced path mutated in place is the user's own object afterwards.

    The graph paths worked on copies; Python's `d["k"] = v` changes the object
    itself (which other names may share), so its merged contents go back into it.
    """
    outs = list(outs)
    for k, j in enumerate(returned[0]):
        if j is None or any(r[k] != j for r in returned[1:]):
            continue
        original, merged = args[j], outs[k]
        if merged is original or type(merged) is not type(original):
            continue
        outs[k] = _write_into(original, merged, names[k])
    return tuple(outs)


def _write_into(original, merged, label):
    """merged's contents into the container original, and so on into the lists and dicts inside it
    where merged has a container of their type (the paths mutated copies of those too): other names
    that share one see the change, as in Python. Returns what the place holds now."""
    if merged is original or type(merged) is not type(original) or type(original) not in (list, dict):
        return merged
    if type(original) is dict:
        new = {key: _write_into(original[key], value, f"{label}[{key!r}]") if key in original else value
               for key, value in merged.items()}
    elif len(merged) == len(original):
        new = [_write_into(o, m, f"{label}[{i}]") for i, (o, m) in enumerate(zip(original, merged))]
    else:
        new = merged
    contents_cell(original, label).set(new)   # a cell: a static function writes it after each run
    return original


# --- exceptions raised while tracing a graph region -----------------------------------------

_GRAPH_ORIGIN = "_dy2s_graph_origin"


class _graph_region:
    """Mark an exception raised while tracing a tensor-dependent region with where that region is."""

    def __init__(self, kind):
        self.kind = kind

    def __enter__(self):
        self.origin = tracing.user_origin()

    def __exit__(self, kind, error, tb):
        if isinstance(error, Exception) and getattr(error, _GRAPH_ORIGIN, None) is None:
            try:
                setattr(error, _GRAPH_ORIGIN, (self.kind, self.origin))
            except AttributeError:
                pass
        return False


def _cells(*fns):
    """(name, cell) of what the functions read from enclosing scopes."""
    for fn in fns:
        yield from zip(getattr(getattr(fn, "__code__", None), "co_freevars", ()), getattr(fn, "__closure__", None) or ())


def _cell_values(*fns):
    """id(cell) -> id(its value) before a construct: a cell the construct rebinds holds another object after."""
    held = {}
    for _, cell in _cells(*fns):
        try:
            held[id(cell)] = id(cell.cell_contents)
        except ValueError:
            continue
    return held


def _check_captured(kind, before, *fns):
    """After a graph if/while/for: no list or dict that its functions read from the enclosing scope
    (closure cells) may hold a value made inside it. Such a container was changed where the
    analysis cannot see it (passed to a function that appends to it): Python would have changed it
    on each path or iteration taken, a trace only once, so using it afterwards would be wrong. A cell
    the construct rebound (`ks = []` in a loop body, read by a generator there) holds a new container."""
    block = tracing.current_block()
    if block is None:
        return
    for fn in fns:
        for name, cell in _cells(fn):
            try:
                value = cell.cell_contents
            except ValueError:
                continue
            if type(value) not in (list, dict) or before.get(id(cell)) != id(value):
                continue
            for leaf in pytree.flatten(value)[0]:
                if isinstance(leaf, Tracer) and not (
                        leaf.block.program is block.program and leaf.block.is_ancestor_of(block)):
                    raise ControlFlowError(
                        f"'{name}' is changed inside this tensor-dependent `{kind}` where the conversion cannot "
                        "carry the change out (it was passed to a function that appended to it or set an item): "
                        f"a graph runs that code once, not once per path or iteration; change '{name}' in the "
                        f"`{kind}` itself (`{name}.append(v)`, `{name}[i] = v`) or return the new value")


def _closure_values(fns):
    """(name, value) of what the functions read from enclosing scopes: closure cells, then globals."""
    for fn in fns:
        code = getattr(fn, "__code__", None)
        for name, cell in zip(getattr(code, "co_freevars", ()), getattr(fn, "__closure__", None) or ()):
            try:
                yield name, cell.cell_contents
            except ValueError:
                continue
        module = getattr(fn, "__globals__", {})
        for name in getattr(code, "co_names", ()):
            if name in module:
                yield name, module[name]


_FUNCTIONS = (types.FunctionType, types.MethodType, types.BuiltinFunctionType, functools.partial)


def _watch_objects(state, *fns):
    """Before a graph if/while/for: the attributes of the user objects its functions capture, and of the
    user objects and sub-layers those hold (`self.sub.count`, two levels down), minus the places the
    construct itself carries (its state cells)."""
    carried = {(id(c.obj), c.key) for c in (state() if state is not None else ()) if type(c).__name__ == "AttrCell"}
    watched, seen = [], set()
    # an explicit stack, not a recursive closure: a closure that calls itself is a reference cycle, which
    # keeps the objects it saw alive until the garbage collector runs
    stack = [(name, value, 2) for name, value in reversed(list(_closure_values(fns)))]
    while stack:
        name, value, depth = stack.pop()
        if id(value) in seen or not _user_object(value):
            continue
        seen.add(id(value))
        attrs = dict(vars(value))
        watched.append((name, value, attrs, carried))
        if depth:
            held = {**attrs, **(attrs.get("_sublayers") if isinstance(value, rt.nn.Layer) else {})}
            stack += reversed([(f"{name}.{attr}", item, depth - 1) for attr, item in held.items()
                               if isinstance(attr, str) and not attr.startswith("__")])
    return watched


def _user_object(value):
    module = type(value).__module__.partition(".")[0]
    return not (module in ("runtime", "transpiler", "numpy", "builtins") or isinstance(value, (type, types.ModuleType))
                or isinstance(value, _FUNCTIONS) or not hasattr(value, "__dict__"))


def _made_op(block, start, opdef):
    return block is not None and any(op.type == opdef.name for op in block.ops[start:])


def _moved_attributes(watched):
    """(name, object, attribute) of the watched attributes that a function the construct called changed
    and that the construct does not carry; each put back as it was before the construct."""
    moved = []
    for name, obj, before, carried in watched:
        after = vars(obj)
        moved += [(name, obj, attr) for attr in [*before, *(a for a in after if a not in before)]
                  if (id(obj), attr) not in carried and before.get(attr, _MISSING) is not after.get(attr, _MISSING)]
    return moved


def _carrying_attributes(state, moved, watched):
    """`state` with a cell for each moved attribute, which the watched objects now count as carried."""
    cells = tuple(attr_cell(obj, attr, f"{name}.{attr}") for name, obj, attr in moved)
    for _, _, _, carried in watched:
        carried.update((id(obj), attr) for _, obj, attr in moved)
    for _, obj, before, _ in watched:
        for attr in [a for a in vars(obj) if a not in before]:
            delattr(obj, attr)
        for attr, value in before.items():
            if vars(obj).get(attr, _MISSING) is not value:
                setattr(obj, attr, value)
    return lambda: tuple(state() if state is not None else ()) + cells


def _check_objects(kind, watched):
    """After it: such an attribute set to a Python value by a function the construct calls (`a.step()`
    writing `self.count += 1`) was set once while tracing, on every path, so the object would be left
    wrong: put back, and an error. (A traced value left there is refused when the trace ends, naming
    the line that wrote it: `writeback.StateWrites`.)"""
    for name, obj, before, carried in watched:
        after = vars(obj)
        changed = [attr for attr in [*before, *(a for a in after if a not in before)]
                   if (id(obj), attr) not in carried and before.get(attr, _MISSING) is not after.get(attr, _MISSING)]
        python_valued = [attr for attr in changed
                         if not any(isinstance(v, Tracer) for v in pytree.flatten(after.get(attr))[0])]
        if not python_valued:
            continue
        for attr in changed:
            if attr in before:
                setattr(obj, attr, before[attr])
            else:
                delattr(obj, attr)
        raise ControlFlowError(
            f"'{name}.{python_valued[0]}' is changed inside this tensor-dependent `{kind}` by a function or "
            "method it calls: a graph runs that code once while tracing, not once per path or iteration; "
            f"change '{name}.{python_valued[0]}' in the `{kind}` itself, or return the new value from the call")


_MISSING = object()


def _check_list_aliases(kind, args, outs, names):
    """A Python list that a graph construct grew into a tensor array is a new value, bound to the
    construct's name only: another name or container of the user's code holding that same list would
    silently keep its old contents (Python appends to the one object), so that is an error naming both."""
    grown = [(names[k], a) for k, (a, o) in enumerate(zip(args, outs))
             if type(a) is list and _symbolic(o) and o.kind == "array"]
    frame = sys._getframe(2) if grown else None
    while frame is not None:       # the frames of the user's function: its branch and body functions, then it
        if frame.f_code in CONVERTED_CODES:
            for name, lst in grown:
                holder = _other_holder(frame.f_locals, lst, name)
                if holder is not None:
                    raise ControlFlowError(
                        f"the list '{name}' grows inside this tensor-dependent `{kind}`, so it becomes a tensor "
                        f"array bound to '{name}' alone, but '{holder}' holds the same list and would not see "
                        f"the change; use one name for the list: read it through '{name}' after the `{kind}`, or "
                        f"store it back where '{holder}' is read")
            name_of = frame.f_code.co_name          # generated ones are `__kind_n` (transpiler.naming)
            if not (name_of.startswith("__") and not name_of.endswith("__")):
                return     # a caller's names: it may rebind them from what the function returns
        frame = frame.f_back


def _other_holder(local_names, lst, name):
    """Where, other than the name `name`, the user's locals hold the list `lst` (one level deep)."""
    for local, value in local_names.items():
        if local == name or local.startswith("__"):
            continue
        if value is lst:
            return local
        if type(value) is dict:
            items = [(f"{local}[{key!r}]", v) for key, v in value.items()]
        elif type(value) in (list, tuple):
            items = [(f"{local}[{i}]", v) for i, v in enumerate(value)]
        elif hasattr(value, "__dict__") and not isinstance(value, (type, types.ModuleType, types.FunctionType)):
            items = [(f"{local}.{attr}", v) for attr, v in vars(value).items()]
        else:
            continue
        for place, item in items:
            if item is lst:
                return place
    return None


_PARTIAL = "__dy2static_partial__"     # on an exception: {id(frame): (names' values, frame)}


def _keep_partial_state(exc, fns, names, caller):
    """An exception leaves a branch or loop body run as Python: the values its names had when it raised.

    In Python those are the function's own locals, so an `except` of the function sees them; converted,
    they live in the branch or body function, which the exception ends. They are noted on the exception
    for the caller's frame (`partial_state` hands them to the `except` clause there), over what the
    constructs inside that body noted for it."""
    codes = {getattr(fn, "__code__", None) for fn in fns}
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code not in codes:
        tb = tb.tb_next
    if tb is None or not names:
        return
    partial = getattr(exc, _PARTIAL, None)
    if partial is None:
        try:
            setattr(exc, _PARTIAL, {})
        except AttributeError:      # an exception type without a __dict__: nothing to keep
            return
        partial = getattr(exc, _PARTIAL)
    body = tb.tb_frame
    local = body.f_locals
    values = {name: local[name] for name in names if name in local}
    values.update(partial.pop(id(body), ({}, None))[0])
    partial[id(caller)] = (values, caller)


def partial_state(exc):
    """In an `except` clause: {name: value} that branches and loop bodies of this frame had bound when exc
    left them (see `_keep_partial_state`); taken once, so an outer handler sees what this one leaves."""
    partial = getattr(exc, _PARTIAL, None)
    if not partial:
        return {}
    return partial.pop(id(sys._getframe(1)), ({}, None))[0]


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


# --- and / or / not ---------------------------------------------------------------------

def convert_logical_and(value, *thunks, name=None):
    for i, thunk in enumerate(thunks):
        truth = _decided(value)
        if _symbolic(truth):
            return _graph_logical(value, thunks[i:], is_and=True, name=name)
        if not truth:
            return value
        value = thunk()
    return value


def convert_logical_or(value, *thunks, name=None):
    for i, thunk in enumerate(thunks):
        truth = _decided(value)
        if _symbolic(truth):
            return _graph_logical(value, thunks[i:], is_and=False, name=name)
        if truth:
            return value
        value = thunk()
    return value


def _graph_logical(value, thunks, is_and, name=None):
    """`value and rest...` with a tensor `value`: a cond op, so `rest` runs only when needed.

    Its result is one of the operands, as in Python: they must merge like branch values
    (a Python number adopts the tensor's dtype); an error names the variable it is assigned to.
    """
    chain = convert_logical_and if is_and else convert_logical_or
    names = None if name is None else (name,)

    def rest():
        result = chain(thunks[0](), *thunks[1:])
        return result if name is None else (result,)

    def same():
        return value if name is None else (value,)

    picked = rt.cond(value, rest, same, names=names) if is_and else rt.cond(value, same, rest, names=names)
    return picked if name is None else picked[0]


def convert_test_and(value, *thunks):
    """`a and b ...` used only for its truth (a loop test): tensor operands of any rank of size one."""
    return _truth_chain(value, thunks, is_and=True)


def convert_test_or(value, *thunks):
    return _truth_chain(value, thunks, is_and=False)


def _truth_chain(value, thunks, is_and):
    for i, thunk in enumerate(thunks):
        known = _decided(value)
        if _symbolic(known):
            pred = _truth(value)
            rest = lambda: _truth(_truth_chain(thunks[i](), thunks[i + 1:], is_and))  # noqa: E731
            decided = lambda: pred  # noqa: E731  (False for `and`, True for `or`)
            return rt.cond(pred, rest, decided) if is_and else rt.cond(pred, decided, rest)
        if builtins.bool(known) != is_and:
            return value
        value = thunk()
    return value


def _truth(value):
    """Python's truth of value: a 0-d bool Variable for a tensor of size one, a bool otherwise."""
    if _symbolic(value):
        value = as_predicate(value)
        return rt.reshape(value, ()) if value.ndim else value
    return builtins.bool(value)


def convert_logical_not(value):
    truth = _decided(value)
    if not _symbolic(truth):
        return not truth
    return rt.logical_not(value) if value.dtype == rt.bool else rt.equal(value, 0)


# --- in / index -------------------------------------------------------------------------

def convert_in(value, container):
    """`value in container`: for a list, tuple or tensor, Python's walk (`item is value or item == value`,
    the truth of each); with tensors that truth is an `or` of graph predicates."""
    if not _walks_items(value, container):
        return value in container
    found = [i for i, _ in _matches(value, container, stop_at_true=True)]
    return _any_truth(found)


def convert_not_in(value, container):
    found = convert_in(value, container)
    return rt.logical_not(found) if _symbolic(found) else not found


def convert_index(receiver, *args):
    """`seq.index(value[, start[, stop]])`: for a list or tuple holding tensors (or asked for one), the
    first position whose item equals value, as a graph value when that depends on tensors."""
    if type(receiver) not in (list, tuple) or not args or not _walks_items(args[0], receiver):
        return convert_call(receiver.index)(*args)      # a user class's own `index` is converted code
    value, start, stop = args[0], args[1] if len(args) > 1 else None, args[2] if len(args) > 2 else None
    positions = builtins.range(len(receiver))[start:stop]
    matches = list(_matches(value, [receiver[i] for i in positions], stop_at_true=True))
    if not matches or matches[-1][0] is not True:
        found = _any_truth([truth for truth, _ in matches])
        missing = f"{type(receiver).__name__}.index(x): x not in {type(receiver).__name__}" \
            if type(receiver) is tuple else "list.index(x): x not in list"
        if not _symbolic(found):
            raise ValueError(missing)
        _raise_unless(found, missing)
    result = None
    for truth, k in reversed(matches):
        index = positions[k]
        result = index if result is None or truth is True else rt.where(truth, index, result)
    return result


def _walks_items(value, container):
    """Whether `in`/`index` must compare item by item here (a tensor is involved)."""
    if _tensorish(container):
        return True
    return type(container) in (list, tuple) and (_tensorish(value) or any(_tensorish(v) for v in container))


def _matches(value, items, stop_at_true):
    """(truth, position) per item compared as Python does; a truth is True or a 0-d bool Variable.
    Items whose truth is a Python False are left out; the walk stops at a Python True."""
    for k, item in enumerate(items):
        if item is value:
            truth = True
        else:
            equal = item == value
            known = _decided(equal)
            truth = _truth(equal) if _symbolic(known) else builtins.bool(known)
        if truth is False:
            continue
        yield truth, k
        if truth is True and stop_at_true:
            return


def _any_truth(truths):
    if any(t is True for t in truths):
        return True
    if not truths:
        return False
    out = truths[0]
    for t in truths[1:]:
        out = rt.logical_or(out, t)
    return out


def _raise_unless(found, message, error=ValueError):
    """`error` raised when the Program runs and found is False (Python raises it at the call)."""
    def missing():
        rt.raise_(error, message.replace("{", "{{").replace("}", "}}"))
    rt.cond(found, lambda: None, missing)


# --- loops ------------------------------------------------------------------------------

def convert_while(cond_fn, body_fn, args, names, state=None):
    try:
        return _convert_while(cond_fn, body_fn, args, names, state)
    except BaseException as e:
        _keep_partial_state(e, (cond_fn, body_fn), names, sys._getframe(1))
        raise


def _convert_while(cond_fn, body_fn, args, names, state):
    n = len(names)
    body, returned = _tracking_body(body_fn, n)
    block = tracing.current_block()
    start = len(block.ops) if block is not None else 0
    watched = _watch_objects(state, cond_fn, body_fn) if block is not None else []
    captured = _cell_values(cond_fn, body_fn)
    undo = _undo_point(state) if block is not None else None
    with _graph_region("while"):
        outs = rt.while_loop(cond_fn, body, tuple(args), names=names, state=state)
        moved = list(_moved_attributes(watched)) if _made_op(block, start, WHILE) else []
        if moved:       # attributes a method called in the body sets (`self.step()`): carried, traced again
            undo()
            state = _carrying_attributes(state, moved, watched)
            outs = rt.while_loop(cond_fn, body, tuple(args), names=names, state=state)
    if _made_op(block, start, WHILE):    # a graph loop
        _check_captured("while", captured, cond_fn, body_fn)
        _check_objects("while", watched)
    outs = _write_back(outs, args, names, returned)
    _check_list_aliases("while", args, _tuple(outs, n), names)
    return _untuple(outs, n)


def _tracking_body(body_fn, n, offset=0):
    """body_fn as `state -> state tuple`, noting which containers every call returned as it got them."""
    returned = [j for j in range(n)]

    def body(*state):
        given = state[offset:]
        out = _tuple(body_fn(*state), n)
        for k in range(n):
            if returned[k] is not None and not (out[k] is given[k] and type(given[k]) in (list, dict)):
                returned[k] = None
        return out
    return body, returned


def convert_for(iterable, body_fn, args, names, until=None, state=None):
    """`until`: the name (one of `names`) of a flag that ends the loop once true: a lowered `break`."""
    try:
        return _convert_for(iterable, body_fn, args, names, until, state)
    except BaseException as e:
        _keep_partial_state(e, (body_fn,), names, sys._getframe(1))
        raise


def _convert_for(iterable, body_fn, args, names, until, state):
    n = len(names)
    extra_test = None if until is None else _not_flag(names.index(until))
    if isinstance(iterable, SymbolicIterable) or _symbolic(iterable):
        it = _as_symbolic_iterable(iterable)
        length = it.length()
        if not _symbolic(length) and length == 0:      # runs no iteration: its body is never traced, as in Python
            return _python_for(it, body_fn, tuple(args), names, extra_test, state)
        grown = {}
        if _symbolic(length) or not _changes_structure(it, body_fn, tuple(args), n, state, grown):
            undo = None if _symbolic(length) else _undo_point(state)
            first_op = len(tracing.current_block().ops)
            try:
                outs = _graph_for(it, length, body_fn, tuple(args), names, extra_test, state)
                if grown and not _replayable(tracing.current_block().ops[first_op:]):
                    raise _Unroll()     # a list item set or popped in the body: the unrolled loop has gradients
                if extra_test is None:      # every iteration appended the same number of items: a known length
                    for j, (start, step) in grown.items():
                        out = _tuple(outs, n)[j]
                        if _is_array(out):
                            out.length = start + step * length
                _check_list_aliases("for", args, _tuple(outs, n), names)    # a static length then unrolls
                return outs
            except Exception as e:  # noqa: BLE001 - a static length: what one trace of the body cannot
                if undo is not None:    # carry (a dtype or rank that changes after the first iteration, an
                    undo()              # item read at an index earlier iterations fill) unrolls as Python does
                else:
                    if isinstance(e, ControlFlowError) and not isinstance(it, SymbolicRange) \
                            and "different structure" in str(e):
                        raise ControlFlowError(
                            f"{e}. The loop walks a tensor whose dimension 0 is dynamic, so it cannot unroll as "
                            "Python would: give that dimension a fixed size in the input_spec, or keep what the "
                            "loop carries one structure (append tensors to a list and rt.stack it)") from None
                    raise
        iterable = it       # a static length and a body that grows what it carries: unroll as Python does
    elif extra_test is None and state is None:     # a long range over a big body: a scan op after one iteration
        iterable, args = scanned_for(iterable, body_fn, tuple(args), n)
    return _python_for(iterable, body_fn, tuple(args), names, extra_test, state)


class _Unroll(Exception):
    """A static-length loop whose while op would lose what Python's unrolled walk keeps."""


def _replayable(ops):
    """Whether a gradient can replay the sub-blocks of these ops: none of their ops changes its input in place
    (a tensor array's item set or popped; an append is fine) or draws random numbers (runtime.autodiff.replay)."""
    for op in ops:
        for block in op.sub_blocks():
            if any(not get_op(inner.type).pure and not get_op(inner.type).grows_input and inner.outputs
                   for inner in block.ops) or not _replayable(block.ops):
                return False
    return True


def _not_flag(k):
    return lambda *state: convert_logical_not(state[k])


def _undo_point(cells=None):
    """A function that forgets what was recorded from now on and puts back what the state cells hold now."""
    block = tracing.current_block()
    point = tracing.checkpoint(block)
    cells = tuple(cells()) if cells is not None else ()
    held = [c.get() for c in cells]

    def undo():
        for cell, value in zip(cells, held):
            cell._store(value)
        tracing.rollback(point)
    return undo


def _changes_structure(it, body_fn, state, n, cells=None, grown=None):
    """Whether a while op cannot carry this loop but Python's unrolled walk can: its items cannot be
    indexed by a symbolic index (a list of strings zipped with a tensor), or one trace of the body
    changes the structure of the loop state (grows a tuple, adds a dict key; a list of tensors it appends
    to is a tensor array the while op carries: `grown` gets, per such list, its length and how many items
    one iteration appends). Nothing recorded here is kept."""
    block = tracing.current_block()
    point = tracing.checkpoint(block)
    cells = tuple(cells()) if cells is not None else ()      # places the body writes: put back after the probe
    held = [c.get() for c in cells]
    try:
        try:
            item = it.item(as_variable(0))
        except Exception:  # noqa: BLE001 - no symbolic item: only Python can walk it
            return True
        if not any(isinstance(v, (tuple, list, dict)) for v in state):
            return False        # only tensors and numbers: a new name's value fills in, nothing can grow
        leaves, treedef = pytree.flatten(state)
        try:
            out = _tuple(body_fn(item, *pytree.unflatten(treedef, leaves)), n)
        except Exception:  # noqa: BLE001 - the while op's own trace reports it
            return False
        if len(out) != len(state) or any(not _appended_to(before, after) and
                                         pytree.flatten(before)[1] != pytree.flatten(after)[1]
                                         for before, after in zip(state, out)):
            return True
        grown.update({j: (len(before), len(after) - len(before)) for j, (before, after) in enumerate(zip(state, out))
                      if type(before) is list and type(after) is list and len(after) > len(before)})
        return False
    finally:
        for cell, value in zip(cells, held):
            cell._store(value)
        tracing.rollback(point)


def _appended_to(before, after):
    """A list of tensors the body appended tensors to (under a tensor `if` too: then a tensor array
    already): a tensor array the while op carries."""
    if type(before) is not list or not all(_tensorish(v) for v in before):
        return False
    return _is_array(after) or type(after) is list and len(after) > len(before) and all(_tensorish(v) for v in after)


def _python_for(iterable, body_fn, values, names, extra_test, state=None):
    n = len(names)
    for item in iterable:
        go_on = True if extra_test is None else extra_test(*values)
        if _symbolic(go_on):
            # a tensor-dependent `break` in an unrolled loop: later iterations run under a cond
            values = _tuple(convert_ifelse(go_on, lambda *s, _item=item: body_fn(_item, *s),
                                           lambda *s: _untuple(s, n), values, names, state), n)
        elif not go_on:
            break
        else:
            values = _tuple(body_fn(item, *values), n)
    return _untuple(values, n)


def _graph_for(it, length, body_fn, values, names, extra_test, state=None):
    """`for` over a tensor or a tensor-bounded range: a while op over an index."""
    n = len(names)
    args = values

    def cond(i, *s):
        more = i < length       # symbolic (never decided while tracing): the index is the loop's state
        if extra_test is None:
            return more
        return _graph_logical(more, (lambda: extra_test(*s),), is_and=True)

    inner, returned = _tracking_body(lambda i, *s: body_fn(it.item(i), *s), n, offset=1)

    def body(i, *s):
        return (i + 1,) + inner(i, *s)

    undo = _undo_point(state)
    index = as_variable(0)      # a symbolic index: iterating a tensor is a while op even for a static length
    watched, captured = _watch_objects(state, body_fn), _cell_values(body_fn)
    with _graph_region("for"):
        outs = rt.while_loop(cond, body, (index,) + values, names=("for_index",) + tuple(names), state=state)
        moved = list(_moved_attributes(watched))
        if moved:       # attributes a method called in the body sets: carried, traced again
            undo()
            state = _carrying_attributes(state, moved, watched)
            index = as_variable(0)
            outs = rt.while_loop(cond, body, (index,) + values, names=("for_index",) + tuple(names), state=state)
    _check_captured("for", captured, body_fn)
    _check_objects("for", watched)
    return _untuple(_write_back(outs[1:], args, names, returned), n)


class SymbolicIterable:
    """Something a `for` can walk by index in a while op: a length and an item per index.

    Plain Python iteration (`list(enumerate(x))`, `dict(zip(x, names))`) walks it
    with Python int indices when its length is static in this trace, as Python would.
    """

    def length(self):
        raise NotImplementedError

    def item(self, i):
        raise NotImplementedError

    def __iter__(self):
        n = self.length()
        if _symbolic(n):
            raise TypeError(
                f"cannot iterate in plain Python over {self.what_is_dynamic()} (known only when the Program "
                "runs): use a `for` loop over it (it becomes a while op), or " + self.how_to_fix())
        return (self.item(i) for i in builtins.range(n))

    def what_is_dynamic(self):
        return "a tensor whose dimension 0 is dynamic"

    def how_to_fix(self):
        return "give that dimension a fixed size in the input_spec"


class _TensorRows(SymbolicIterable):
    def __init__(self, x):
        self.x = x

    def length(self):
        return convert_len(self.x)

    def item(self, i):
        return self.x[i]


class SymbolicRange(SymbolicIterable):
    def __init__(self, start, stop, step):
        self.start, self.stop, self.step = start, stop, step

    def length(self):
        if isinstance(self.step, int) and self.step == 0:
            raise ValueError("range() arg 3 must not be zero")
        with tracing.python_numbers():          # len(range(...)) is a Python int
            return self._length()

    def _length(self):
        if isinstance(self.step, int):
            span = self.stop - self.start if not (isinstance(self.start, int) and self.start == 0) else self.stop
            if self.step == 1:
                return rt.maximum(span, 0)
            pad = self.step - 1 if self.step > 0 else self.step + 1
            return rt.maximum((span + pad) // self.step, 0)
        _raise_if(self.step == 0, ValueError, "range() arg 3 must not be zero")
        span = self.stop - self.start
        return rt.maximum(rt.where(self.step > 0, span + self.step - 1, span + self.step + 1) // self.step, 0)

    def what_is_dynamic(self):
        return "a range() with a tensor bound, whose length is a tensor"

    def how_to_fix(self):
        return "give range() Python int bounds"

    def item(self, i):
        offset = i if isinstance(self.step, int) and self.step == 1 else i * self.step
        value = offset if isinstance(self.start, int) and self.start == 0 else self.start + offset
        if _symbolic(value) and not value.weak:     # range() yields Python ints, whatever its bounds' dtype
            value = rt.astype(value, np.int64)
            value.weak = True
        return value


class _Enumerate(SymbolicIterable):
    def __init__(self, inner, start):
        self.inner, self.start = inner, start

    def length(self):
        return self.inner.length()

    def item(self, i):
        return (i + self.start, self.inner.item(i))


class _Zip(SymbolicIterable):
    def __init__(self, parts):
        self.parts = parts

    def length(self):
        lengths = [p.length() for p in self.parts]
        out = lengths[0]
        with tracing.python_numbers():          # the shortest length, a Python int
            for other in lengths[1:]:
                out = rt.minimum(out, other) if _symbolic(out) or _symbolic(other) else builtins.min(out, other)
        return out

    def item(self, i):
        return tuple(p.item(i) for p in self.parts)


class _Sequence(SymbolicIterable):
    """A Python list/tuple walked by a symbolic index (inside a zip with a tensor)."""

    def __init__(self, seq):
        self.seq = seq

    def length(self):
        return len(self.seq)

    def item(self, i):
        if isinstance(i, int):
            return self.seq[i]
        odd = [v for v in self.seq if not (_tensorish(v) or isinstance(v, (bool, int, float)))]
        if odd:
            raise TypeError(
                f"a tensor-dependent loop (a tensor whose dimension 0 is dynamic) cannot walk a Python "
                f"{type(self.seq).__name__} holding {type(odd[0]).__name__} values alongside it: only tensors "
                "and numbers can be indexed by the loop's run-time index; give that dimension a fixed size in "
                "the input_spec (the loop then unrolls), or loop over range(len(...)) of the Python list")
        return rt.stack(list(self.seq))[i]


def _as_symbolic_iterable(value):
    if isinstance(value, SymbolicIterable):
        return value
    if _symbolic(value):
        if value.kind == "array":
            return _ArrayItems(value)
        if value.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return _TensorRows(value)
    if isinstance(value, (list, tuple)):
        return _Sequence(value)
    if type(value) is builtins.range:
        return _PythonRange(value)
    if isinstance(value, np.ndarray) and value.ndim > 0 and value.dtype.kind in "biufc":
        return _TensorRows(rt.asarray(value))       # its rows as constants of the graph
    raise TypeError(f"cannot iterate over {type(value).__name__} inside a tensor-dependent loop")


class _PythonRange(SymbolicIterable):
    """A Python range zipped with a tensor: Python ints, weak int64 at a symbolic index."""

    def __init__(self, numbers):
        self.numbers = numbers

    def length(self):
        return len(self.numbers)

    def item(self, i):
        if isinstance(i, int):
            return self.numbers[i]
        value = rt.astype(i * self.numbers.step + self.numbers.start, np.int64)
        value.weak = True
        return value


class _ArrayItems(SymbolicIterable):
    def __init__(self, arr):
        self.arr = arr

    def length(self):
        return rt.array_length(self.arr) if self.arr.length is None else self.arr.length

    def item(self, i):
        return array_item(rt.array_read(self.arr, i))


def convert_range(*args):
    if not any(_symbolic(a) for a in args):
        return builtins.range(*args)
    for a in args:
        _check_range_argument(a)
    start, stop, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) > 2 else 1)
    return SymbolicRange(start, stop, step)


def _check_range_argument(value):
    """range() takes integers only, as Python's does: a float tensor is a TypeError for every value (NaN, inf too).

    The dtype is known while tracing, so the error is raised then, at the user's line.
    """
    if not _symbolic(value):
        operator.index(value)
        return
    kind = np.dtype(value.dtype).kind
    if kind in "iu" or (kind == "b" and value.weak):
        return
    raise TypeError(f"'{np.dtype(value.dtype).name}' tensor cannot be interpreted as an integer: range() takes "
                    f"integer tensors (cast with .astype('int64') after rounding the way you mean)")


def convert_enumerate(iterable, start=0):
    if isinstance(iterable, SymbolicIterable) or _symbolic(iterable):
        return _Enumerate(_as_symbolic_iterable(iterable), start)
    return builtins.enumerate(iterable, start)


def convert_zip(*iterables, **kwargs):
    if any(isinstance(it, SymbolicIterable) or _symbolic(it) for it in iterables):
        return _Zip([_as_symbolic_iterable(it) for it in iterables])
    return builtins.zip(*iterables, **kwargs)


# --- builtins and statements ------------------------------------------------------------

_NO_DEFAULT = object()


def convert_max(*args, key=None, default=_NO_DEFAULT):
    """Python's max: the first item that no later item is greater than (`item > best`)."""
    return _extreme(builtins.max, "max", args, key, default, lambda a, b: a > b)


def convert_min(*args, key=None, default=_NO_DEFAULT):
    """Python's min: the first item that no later item is less than (`item < best`)."""
    return _extreme(builtins.min, "min", args, key, default, lambda a, b: a < b)


def _extreme(python_fn, name, args, key, default, better):
    """min/max walked as CPython does; a tensor comparison picks with a cond instead of Python's `if`."""
    items = list(args[0]) if len(args) == 1 else list(args)
    if key is None and not any(_tensorish(v) for v in items) or len(args) > 1 and default is not _NO_DEFAULT:
        kwargs = {} if default is _NO_DEFAULT else {"default": default}
        return python_fn(items, key=key, **kwargs) if len(args) == 1 else python_fn(*args, key=key, **kwargs)
    if not items:
        if default is _NO_DEFAULT:
            raise ValueError(f"{name}() iterable argument is empty")
        return default
    best = items[0]
    best_key = best if key is None else key(best)
    for item in items[1:]:
        item_key = item if key is None else key(item)
        take = better(item_key, best_key)
        if _symbolic(take):
            best, best_key = convert_ifexp(take, lambda: (item, item_key), lambda: (best, best_key))
        elif take:
            best, best_key = item, item_key
    return best


def _tensorish(value):
    return isinstance(value, (Tracer, rt.Tensor))


def convert_isinstance(obj, classinfo):
    """isinstance as it would answer eagerly: a traced value is what it stands for, an rt.Tensor
    (the Parameter itself for a captured one, a Python list for a tensor array; outside converted
    code Tensor's metaclass answers the same, except that a tensor array is no list there)."""
    if _symbolic(obj):
        # a class's own __instancecheck__ (a user metaclass asking isinstance(obj, rt.Tensor)) sees the value
        return builtins.issubclass(stands_for(obj), classinfo) or builtins.isinstance(obj, classinfo)
    if isinstance(obj, Undefined):
        raise obj.error()       # reading a name no path assigned, as eagerly
    return builtins.isinstance(obj, classinfo)


def convert_any(iterable):
    """Python's any: the truth of each item in turn; tensor truths are or-ed in the graph."""
    truths = []
    for value in iterable:
        known = _decided(value)
        if _symbolic(known):
            truths.append(_truth(value))
        elif known:
            return True
    return _any_truth(truths)


def convert_all(iterable):
    """Python's all: False at the first false item; tensor truths are and-ed in the graph."""
    truths = []
    for value in iterable:
        known = _decided(value)
        if _symbolic(known):
            truths.append(_truth(value))
        elif not known:
            return False
    out = True
    for truth in truths:
        out = truth if out is True else rt.logical_and(out, truth)
    return out


def convert_sum(iterable, /, start=0):
    """Python's sum, `start + item 0 + item 1 + ...` in order. Over a list grown in a tensor-dependent
    loop (a tensor array) or a tensor whose first dim is dynamic the same additions run in a while loop,
    from `start + 0` shaped as an item (an empty list sums to those zeros)."""
    dynamic_rows = _symbolic(iterable) and iterable.kind != "array" and iterable.ndim > 0 and \
        iterable.static_shape[0] == -1
    if not (_is_array(iterable) or dynamic_rows):
        return builtins.sum(iterable, start)
    item_shape = iterable.static_shape if _is_array(iterable) else iterable.static_shape[1:]
    if -1 in item_shape:
        raise TypeError(f"sum() of {iterable.describe()}: its items' shape {item_shape} is not static, so the "
                        "running total has no shape to start from; rt.stack the items and use rt.sum")
    items = _as_symbolic_iterable(iterable)
    n = items.length()
    total = start + rt.zeros(item_shape, dtype=iterable.dtype)
    _, total = rt.while_loop(lambda i, total: i < n, lambda i, total: (i + 1, total + items.item(i)), (0, total))
    return total


def convert_map(fn, *iterables):
    """map() calls fn as converted code would: a user function given to it is converted too."""
    return builtins.map(convert_call(fn), *iterables)


def _python_number(value, kind):
    """What int()/float()/bool() of a traced tensor with one element is: a weakly typed 0-d tensor (a
    Python number in the graph: `y * int(n)` keeps y's dtype), or the Python number when it is known."""
    known = known_value(value)
    if known is not None:
        return kind(known)
    dtype = np.dtype(value.dtype)
    # the shapes and dtypes NumPy converts (eager Tensors convert through NumPy): its error otherwise; a
    # dynamic dim is taken as 1 here, and a run where it is not fails in the reshape
    kind(np.ones([1 if d == -1 else d for d in value.static_shape], dtype))
    scalar = rt.reshape(value, ())
    if kind is bool:
        out = rt.not_equal(scalar, 0)
    else:
        if kind is int and dtype.kind == "f":
            _raise_if(rt.isnan(scalar), ValueError, "cannot convert float NaN to integer")
            _raise_if(rt.isinf(scalar), OverflowError, "cannot convert float infinity to integer")
        out = rt.astype(scalar, dtype if kind is int and dtype.kind in "iu" else np.int64 if kind is int else
                        np.float64)
    out.weak = True
    return out


def _raise_if(pred, exception, message):
    """Python raises where the Program would compute garbage: the same exception when the Program runs."""
    def fail():
        rt.raise_(exception, message)
    convert_ifelse(pred, fail, None, (), ())


def convert_int(value=0, *args):
    if _symbolic(value) and not args:
        return _python_number(value, int)
    return builtins.int(value, *args)


def convert_float(value=0.0):
    if _symbolic(value):
        return _python_number(value, float)
    return builtins.float(value)


def convert_bool(value=False):
    if _symbolic(value):
        return _python_number(value, bool)
    return builtins.bool(value)


def convert_len(value):
    if _symbolic(value):
        if value.kind == "array":
            return rt.array_length(value) if value.length is None else value.length
        if value.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        first = value.static_shape[0]
        return first if first != -1 else rt.dim(value, 0)
    return builtins.len(value)


def convert_stop_gradient(x, value):
    """`x.stop_gradient = value` (Paddle's flag) on a local name: a traced value is rebound to
    rt.stop_gradient(x) when value is True, so no gradient flows back through the uses that follow (what the
    flag does eagerly); anything else gets the attribute set."""
    if _symbolic(x):
        if _symbolic(value):
            raise TypeError("stop_gradient must be set to a Python bool, not a tensor")
        return rt.stop_gradient(x) if value else x
    x.stop_gradient = value
    return x


def convert_reversed(seq):
    """reversed(xs) of a list grown in a tensor-dependent loop: the array sliced [::-1] in the graph
    (its length is known only at run time); Python's reversed otherwise."""
    if _is_array(seq):
        return rt.array_slice(seq, None, None, -1)
    return builtins.reversed(seq)


def convert_print(*args, sep=" ", end="\n", file=None, flush=False):
    """While tracing, every print becomes a print op: it prints on each run, on the path taken."""
    if tracing.current_block() is not None and file is None:
        return rt.print_(*args, sep=sep)
    return builtins.print(*args, sep=sep, end=end, file=file, flush=flush)


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


def _in_branch():
    """Is tracing inside a branch or loop body (where a raise may or may not happen at run time)?"""
    block = tracing.current_block()
    return block is not None and block.parent_idx != -1


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


_CONVERSIONS = {-1: lambda v: v, ord("s"): builtins.str, ord("r"): builtins.repr, ord("a"): builtins.ascii}


def convert_fstring(literals, values, conversions, specs):
    """An f-string given in pieces: the text itself on Python values; a Text when a value
    is a tensor being traced (plain `{x}` fields only: what print can format)."""
    fields = [format(_CONVERSIONS[c](v), spec) if not _symbolic(v) else None
              for v, c, spec in zip(values, conversions, specs)]
    if None not in fields:
        return "".join(lit + field for lit, field in zip(literals, fields + [""]))
    template, tensors = [], []
    for lit, field, v, c, spec in zip(literals, fields, values, conversions, specs):
        template.append(_escape(lit))
        if field is not None:
            template.append(_escape(field))
        elif safe_field("", spec, None if c == -1 else chr(c)):     # formatted when the Program runs
            template.append("{" + ("" if c == -1 else "!" + chr(c)) + (":" + spec if spec else "") + "}")
            tensors.append(v)
        elif _in_branch():
            raise TypeError("a tensor in an f-string message under a tensor-dependent condition is formatted "
                            "when the Program runs: write it as {value}, {value!r} or with a short :spec "
                            "(widths and precisions of two digits at most)")
        else:       # raised while tracing, on every run: the Variable has no value to show
            template.append(_escape(repr(v)))
    template.append(_escape(literals[-1]))
    return Text("".join(template), tensors)


def _escape(text):
    return text.replace("{", "{{").replace("}", "}}")


def convert_list_comp(iterable, keep_fn, item_fn, unpack):
    """`[item for target in iterable if keep]`: Python's list while every `keep` is a Python truth; a tensor
    `keep` appends under a cond, as the loop `for ...: if keep: out.append(item)` does (a tensor array)."""
    def step(element, out):
        args = tuple(element) if unpack else (element,)
        keep = _decided(keep_fn(*args))
        if _symbolic(keep):
            return convert_ifelse(keep, lambda acc: convert_append(acc, item_fn(*args)), None, (out,),
                                  ("comprehension",))
        return convert_append(out, item_fn(*args)) if keep else out

    if _walks_in_python(iterable):
        out = []
        for element in iterable:
            out = step(element, out)
        return out
    return convert_for(iterable, step, ([],), ("comprehension",))     # rows known only when the Program runs


def _walks_in_python(iterable):
    """Whether Python can iterate this while tracing (a tensor or a tensor-bounded range of static length)."""
    if isinstance(iterable, SymbolicIterable):
        return not _symbolic(iterable.length())
    if _symbolic(iterable):
        if iterable.kind == "array":
            return iterable.length is not None
        return bool(iterable.static_shape) and iterable.static_shape[0] != -1
    return True


def convert_append(container, value):
    if _symbolic(container) and container.kind == "array":
        return rt.array_append(container, value)
    container.append(value)
    return container


def _is_array(value):
    return _symbolic(value) and value.kind == "array"


def convert_pop(container, *index):
    """`xs.pop(...)` as (xs after it, the removed item): a tensor array pops in the graph."""
    if _is_array(container):
        return rt.array_pop(container, *index)
    return container, container.pop(*index)


def convert_insert(container, index, value):
    if _is_array(container):
        return rt.array_insert(container, index, value)
    container.insert(index, value)
    return container


def convert_extend(container, values):
    if _is_array(container):
        return rt.array_extend(container, values)
    container.extend(values)
    return container


def convert_delitem(container, index):
    if _is_array(container):
        return rt.array_pop(container, index)[0]
    del container[index]
    return container


def _array_setitem(arr, index, value):
    """`xs[i] = v` on a tensor array: the item at i replaced in the graph (the item popped, v inserted there).
    A negative i counts from the end; one out of range stays out of range, so the pop raises IndexError."""
    length = rt.array_length(arr)
    if _symbolic(index):
        index = rt.where(index < 0, rt.where(index + length >= 0, index + length, length), index)
    elif index < 0:
        index = rt.where(index + length >= 0, index + length, length)
    arr = rt.array_pop(arr, index)[0]
    return rt.array_insert(arr, index, value)


class EmptyListRead(IndexError):
    """An empty Python list read at an index: Python's IndexError, wherever the read runs. Inside a
    tensor `if` the branch raises it when the Program runs (in a loop's first trace, before the list that
    grows there becomes a tensor array, the other branch gives the values: `hs[left[n]]` in a Tree-LSTM)."""


def convert_getitem(container, index):
    """`xs[i]`; a Python list of tensors read at a tensor index is read in the graph."""
    if type(container) is list and not container and (_symbolic(index) or type(index) is int):
        raise EmptyListRead("list index out of range")
    if type(container) is list and _symbolic(index) and container:
        if all(callable(item) and not isinstance(item, (Tracer, rt.Tensor)) for item in container):
            return _choose(container, index, "list")
        if _numbers_of_one_type(container):
            return _weak_items(rt.asarray(np.asarray(container)), index)   # Python numbers: a weak item
        _check_one_kind(container, "read")
        item = rt.stack(container)[index]
        item.weak = _all_weak(container)          # Python numbers that became tensors stay Python numbers
        return item
    if _is_array(container) and not isinstance(index, slice):
        return array_item(container[index])
    return container[index]


def _check_one_kind(items, what):
    """A list used at a tensor index goes through its stack: only what Python would give back unchanged,
    tensors of one shape and dtype; Python numbers among 0-d tensors whose dtype holds them as they are
    (`[1, 1]` grown by int32 items in a tensor loop)."""
    kinds = {(v.static_shape if isinstance(v, Tracer) else tuple(v.shape), np.dtype(v.dtype))
             if isinstance(v, (Tracer, rt.Tensor)) else None for v in items}
    numbers = {type(v) for v in items if not isinstance(v, (Tracer, rt.Tensor))}
    if numbers and numbers <= {bool, int, float} and len(kinds - {None}) == 1:
        (shape, dtype), = kinds - {None}
        holds = {bool: "b", int: "iuf", float: "f"}
        if shape == () and all(dtype.kind in holds[t] for t in numbers):
            kinds = {(shape, dtype)}
    if None in kinds or len(kinds) != 1:
        raise TypeError(f"a list {what} at a tensor index: its items must be tensors of one shape and dtype "
                        "(the graph reads them through their stack) or Python numbers of one type; index it "
                        "with a Python int, or keep the values in one tensor")


def convert_setitem(container, index, value):
    """`x[i] = v`: x after it. A traced tensor gets a new value, which also replaces it in the lists and
    dicts holding it (`c = caches[i]; c[:, p] = k` shows in caches[i], as eagerly)."""
    updated = _setitem(container, index, value)
    if _symbolic(container) and container.kind == "dense":
        write_through(container, updated)
    return updated


def convert_setitem_path(root, path, index, value):
    """`root[p0]...[pn][index] = value` (`cache[i][:, :, pos] = k`, `d["k"][...] = v`): root after it. The
    innermost item is set; where that gives a new value (a traced tensor's), it is stored back into the
    item's holder, level by level up to root, while the holder is a list, dict or tensor array. A traced
    tensor's item is a copy (as eagerly `x[0][1] = v` leaves x as it was), so storing stops there."""
    holders = [root]
    for key in path:
        holders.append(convert_getitem(holders[-1], key))
    item = _setitem(holders[-1], index, value)
    new = item
    for holder, key, old in reversed(list(zip(holders, path, holders[1:]))):
        if new is old or (_symbolic(holder) and holder.kind == "dense"):
            return root
        if isinstance(holder, tuple):    # a new tuple for the name it came from (other names keep the old one)
            items = list(holder)
            items[key] = new
            new = type(holder)(*items) if hasattr(holder, "_fields") else type(holder)(items)
            continue
        new = _setitem(holder, key, new)
    inner = holders[-1]
    if _symbolic(inner) and inner.kind == "dense" and inner.block is tracing.current_block():
        write_through(inner, item, replaced=holders[:-1])   # other lists and dicts holding it see the write
    return new


def _setitem(container, index, value):
    if _is_array(container) and not isinstance(index, (slice, tuple)):
        return _array_setitem(container, index, value)
    if _symbolic(container):
        return rt.setitem(container, index, value)
    if type(container) is list and _symbolic(index) and container:
        return _list_setitem(container, index, value)
    container[index] = value
    return container


def _list_setitem(items, index, value):
    """`xs[i] = v` on a Python list of tensors at a tensor index: the item i of their stack replaced in the
    graph, each item read back from it. Only where that is what Python leaves: tensors of one shape and dtype,
    or Python numbers of one type (each item then a weak 0-d tensor holding that number)."""
    if _numbers_of_one_type(items + [value]):
        stacked = rt.setitem(rt.asarray(np.asarray(items)), index, value)
        items[:] = [_weak_items(stacked, k) for k in range(len(items))]
        return items
    _check_one_kind(items + [value], "item set")
    stacked = rt.setitem(rt.stack(items), index, value)
    weak = _all_weak(items + [value])
    items[:] = [stacked[k] for k in range(len(items))]
    for item in items:
        item.weak = weak
    return items


def _all_weak(values):
    return all(type(v) in (bool, int, float) or _symbolic(v) and v.weak for v in values)


def _numbers_of_one_type(items):
    return all(type(item) in (bool, int, float) for item in items) and len({type(item) for item in items}) == 1


def _weak_items(values, index):
    item = values[index]
    item.weak = True
    return item


def convert_call_item(container, index):
    """`fs[i](...)`: a tensor i picks among the callables of a list, tuple or layer list by tensor
    conditions, each called in its branch (MindSpore's switch_layer); any other index: the item itself."""
    if _symbolic(index) and not _symbolic(container) and isinstance(container, (list, tuple, rt.nn.Layer)) and \
            hasattr(container, "__len__"):
        items = list(container)
        if items and all(callable(item) for item in items):
            return convert_call(_choose(items, index, type(container).__name__))
    return convert_call(container[index])


def _choose(items, index, kind):
    """items[index] for a tensor index: nested conditional expressions, so a function is chosen per branch
    (choices.FunctionChoices); an index out of range raises IndexError when the Program runs."""
    n = len(items)
    index = rt.where(index < 0, index + n, index)
    _raise_if(rt.logical_or(index < 0, index >= n), IndexError, f"{kind} index out of range")
    chosen = functools.partial(_item, items, n - 1)
    for k in reversed(range(n - 1)):
        chosen = functools.partial(convert_ifexp, index == k, functools.partial(_item, items, k), chosen)
    return chosen()


def _item(items, k):
    return items[k]


def _holds_traced(data):
    return isinstance(data, Tracer) or isinstance(data, (list, tuple)) and builtins.any(map(_holds_traced, data))


def _numpy_array_overload(numpy_fn):
    """`np.asarray(v)`, `np.array(v)` in converted code: of a traced value (or a list holding one) the
    value itself, cast by `dtype=` (what `.numpy()` is inside a trace: a NumPy array cannot hold a value
    that exists only when the Program runs); of anything else NumPy's own array."""
    def convert(data, dtype=None, *args, ndmin=0, **kwargs):
        if not _holds_traced(data):
            return numpy_fn(data, dtype, *args, **({"ndmin": ndmin} if ndmin else {}), **kwargs)
        out = rt.asarray(data, dtype)
        while out.ndim < ndmin:
            out = rt.expand_dims(out, 0)
        return out
    convert.__name__ = f"convert_{numpy_fn.__name__}"
    return convert


def convert_call(fn):
    """The converted form of fn when it is user code, our overload of a builtin reached through a
    variable (`fn = range; fn(n)`), fn itself otherwise."""
    if isinstance(fn, (types.BuiltinFunctionType, type)):
        return _OVERLOADS.get(fn, fn)
    return tracing.convert_callable(fn)       # api's converted_callable: api sits above this module


_OVERLOADS = {builtins.len: convert_len, builtins.print: convert_print, builtins.range: convert_range,
              builtins.enumerate: convert_enumerate, builtins.zip: convert_zip, builtins.min: convert_min,
              builtins.max: convert_max, builtins.map: convert_map, builtins.isinstance: convert_isinstance,
              builtins.any: convert_any, builtins.all: convert_all, builtins.reversed: convert_reversed,
              builtins.int: convert_int, builtins.float: convert_float, builtins.bool: convert_bool,
              builtins.sum: convert_sum,
              **{fn: _numpy_array_overload(fn) for fn in (np.asarray, np.array, np.asanyarray, np.ascontiguousarray)}}


__all__ = [name for name in dict(globals()) if name.startswith("convert_")] + ["partial_state",
    "undefined", "return_placeholder", "attr_cell", "item_cell", "contents_cell", "check_caught", "outer_value"]


def convert_in_place(x, method, *args, **kwargs):
    """PyTorch's in-place method on a local name (`x.add_(y)`, `x.masked_fill_(m, v)`, `x.zero_()`): a traced
    value, which has no place to write to, is rebound to the value the method would leave in it (its dtype
    and shape); anything else runs the method itself (an eager Tensor is written in place) and stays bound."""
    if _symbolic(x):
        return in_place_value(x, method, args, kwargs)
    getattr(x, method)(*args, **kwargs)
    return x
