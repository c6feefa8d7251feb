"""Globals and closure variables a static function rebinds (`global n` / `nonlocal n`).

Converted code keeps them the enclosing scope's names, carried through branches
and loops like locals, so Python-valued control flow rebinds them as Python
does. Rebound under a tensor-dependent condition, such a name holds a traced
value after the trace: `register` makes it one of the places the trace wrote
(`runtime.state`), so, like an attribute, it gets its old value back now and
the Program's value after every run (see `store.StateWrites`).

A global or closure list/dict the function names and changes in place
(`CACHE["w"] = x`, `log.append(x)` outside tensor control flow) goes through
no cell: its contents are compared with a copy taken before the trace, and a
changed one becomes a written place too (its contents, as for an attribute's list).
"""
import types

from runtime.control_flow import Undefined
from runtime.tracer import Tracer
from runtime.nn import Layer
from runtime.state import ClosureCell, ContentsCell, ItemCell

from .objects import contents_changed, is_user_object

_MISSING = object()


def snapshot(fn):
    """What fn's globals and closure cells hold before a trace, and copies of the lists/dicts it names there."""
    cells = [(name, cell, _contents(cell)) for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ())]
    names = _names(fn.__code__)
    held = [(name, fn.__globals__.get(name)) for name in names] + [(name, _contents(c)) for name, c, _ in cells]
    held += mutable_defaults(fn)
    containers = [(name, value, type(value)(value)) for name, value in held if type(value) in (list, dict)]
    return dict(fn.__globals__), cells, containers


def user_objects(fn):
    """{name: object} for the instances of user classes and the Layers (a model: `nn.Sequential(...)`) fn names
    as globals or closure variables: a trace may set their attributes (`G.n = ...`, `helper(G, x)`,
    `model.last = loss`), so the collector compares them (objects.snapshot)."""
    held = [(name, fn.__globals__.get(name)) for name in _names(fn.__code__)]
    held += [(name, _contents(cell)) for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ())]
    return {name: value for name, value in held if is_user_object(value) or isinstance(value, Layer)}


def defaults(fn):
    """[(parameter name, container, key, value)] of fn's default values (`__defaults__` by index,
    `__kwdefaults__` by name): a mutable one (`acc=[]`) lives across calls as a global does."""
    code, positional = fn.__code__, fn.__defaults__ or ()
    first = code.co_argcount - len(positional)
    found = [(code.co_varnames[first + i], positional, i, value) for i, value in enumerate(positional)]
    keywords = fn.__kwdefaults__ or {}
    return found + [(name, keywords, name, value) for name, value in keywords.items()]


def mutable_defaults(fn):
    """[(parameter name, value)] of fn's list and dict defaults: what a trace writes into them is a
    written place of the Program, as for a global list."""
    return [(name, value) for name, _, _, value in defaults(fn) if type(value) in (list, dict)]


def _names(code):
    """The global names a code object and the functions defined in it load."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return names


def register(fn, before, written, traced_only=True):
    """Each global or closure variable the trace left holding a traced value, and each global or closure
    list/dict whose contents it changed: a written place of the Program. `traced_only=False` (a trace that
    failed: every place it wrote is put back) also takes those it rebound to, or deleted from, anything else."""
    old_globals, cells, containers = before
    for name, obj, old in containers:
        place = ContentsCell(obj, name)
        if place.identity() not in written and (contents_changed(old, obj) or _traced(obj)):
            written[place.identity()] = (place, old)
    # Identity first: a global or cell the trace did not rebind is never walked (a module's 1M-item
    # list costs nothing unless the function names it, as a container above).
    names = list(fn.__globals__) + ([] if traced_only else [n for n in old_globals if n not in fn.__globals__])
    for name in names:
        value, old = fn.__globals__.get(name, _MISSING), old_globals.get(name, _MISSING)
        if old is not value and (_traced(value) or not traced_only):
            place = ItemCell(fn.__globals__, name, name)
            written.setdefault(place.identity(), (place, Undefined(name) if old is _MISSING else old))
    for name, cell, old in cells:
        value = _contents(cell)
        if value is not old and (_traced(value) or not traced_only):
            place = ClosureCell(cell, None, name)
            written.setdefault(place.identity(), (place, Undefined(name) if old is _MISSING else old))


def _contents(cell):
    try:
        return cell.cell_contents
    except ValueError:
        return _MISSING


_CONTAINERS = (list, tuple, dict)


def _traced(value):
    """Whether value is a traced value or a list/tuple/dict holding one at any depth: a search that
    stops at the first one and builds nothing (a global the function names may hold 1M items)."""
    if not isinstance(value, _CONTAINERS):
        return isinstance(value, Tracer)
    stack, seen = [value], {id(value)}
    while stack:
        container = stack.pop()
        for item in container.values() if isinstance(container, dict) else container:
            if isinstance(item, _CONTAINERS):
                if id(item) not in seen:
                    seen.add(id(item))
                    stack.append(item)
            elif isinstance(item, Tracer):
                return True
    return False
