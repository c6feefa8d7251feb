"""Around a tensor-dependent if/while/for (a graph region), what Python would see and one trace
would not: the region's origin for an exception raised inside it; the attributes of captured objects
and the closure cells a called function changes behind the converter's back (carried, or an error);
a grown list another name still holds; the values its names had when an exception left it."""
import functools
import sys
import types

import runtime as rt
from runtime import pytree, tracing
from runtime.errors import ControlFlowError
from runtime.tracer import Tracer
from runtime.state import TensorValueCell, attr_cell
from runtime.tensor import EagerTensor

from ..effects.aliases import CONVERTED_CODES
from .base import _symbolic


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


def tensor_cell(read, label):
    """In a construct's `state=`: the local name `label` is written into there (`buf[i] = v`); when it holds
    an eager Tensor, that store writes the Tensor in place, so the construct carries it from its first
    trace (a one-cell tuple). Anything else, or no value yet: nothing to carry (an empty tuple)."""
    try:
        value = read()
    except (NameError, AttributeError):     # no value yet
        return ()
    return (TensorValueCell(value, f"'{label}'"),) if isinstance(value, EagerTensor) else ()


def _check_objects(kind, watched):
    """After it: such an attribute set to a Python value by a function the construct calls (`a.step()`
    writing `self.count += 1`) was set once while tracing, on every path, so the object would be left
    wrong: put back, and an error. (A traced value left there is refused when the trace ends, naming
    the line that wrote it: `effects.StateWrites`.)"""
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
