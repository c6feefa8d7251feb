"""Which places a static function writes outlive its call, and which of them a call reads back.

Python builds every object a call creates afresh on every call. So only state
that existed before the call — what its arguments, `self`, its globals, its
closure cells and default values reach — carries a value from one call to the
next; everything the call itself makes (an object `Net()`, a local list or
dict, a Tensor from `rt.asarray(data)`) is a value of that run. After a trace,
each place it wrote (`runtime.state` cells) is sorted by the object it lives in
(`Lifetimes.sort`):

- BEFORE: the object was reachable before the call. A full state place: each
  run stores the new value there, and the next run reads what it holds.
- ESCAPED: the call made the object and left it where code outside can reach
  it (a pre-existing attribute now holds it, or the function returns it). Each
  run stores the new value there so the caller sees Python's result, but no
  run ever reads it back: the Program makes the object's values itself.
- LOCAL: made by the call and reachable from nowhere after it: a value of the
  run alone, never stored.

Reachability is computed after the trace has put every written place back
(`store.StateWrites`), so the objects reachable from the roots are what the
call found. The walk follows containers, object attributes, user classes and
modules, and functions' closures, defaults and globals; it stops after `LIMIT` objects,
and whatever it has not reached by then counts as BEFORE (what every place was
before this rule: never a lost write).
"""
import types

import numpy as np

from runtime.tracer import Tracer
from runtime.tensor import Tensor

from ..transforms.calls import is_library_module

BEFORE, ESCAPED, LOCAL = "before", "escaped", "local"
LIMIT = 200_000       # objects visited per walk

_ATOMS = (str, bytes, int, float, complex, bool, type(None), np.ndarray, np.generic, Tracer, range, slice)


class Lifetimes:
    """The objects a static function's call could reach before it ran, and the Tensors its trace made."""

    def __init__(self, roots, made):
        self.roots = list(roots)
        self.made = made                     # id -> Tensor made by the trace (tracing.Recording.made)

    def sort(self, cells, escapes):
        """{cell identity: BEFORE | ESCAPED | LOCAL} for `cells` (cell, value now) pairs; `escapes` are
        the other values the caller keeps after a run (the function's returned Python objects)."""
        places = {id(c.obj): c.obj for c, _ in cells if _is_place_object(c.obj)}
        before = _reachable(self.roots, places)
        kinds = {c.identity(): LOCAL if self.is_made(c.obj) or id(c.obj) in places and id(c.obj) not in before
                 else BEFORE for c, _ in cells}
        made = {id(c.obj): c.obj for c, _ in cells if kinds[c.identity()] == LOCAL}
        if made:
            kept = [now for c, now in cells if kinds[c.identity()] == BEFORE] + list(escapes)
            escaped = _reachable(kept, made)
            for c, _ in cells:
                if kinds[c.identity()] == LOCAL and id(c.obj) in escaped:
                    kinds[c.identity()] = ESCAPED
        return kinds

    def is_made(self, value):
        """Whether value is a Tensor the trace made (a value of the run, not a place)."""
        return isinstance(value, Tensor) and self.made.get(id(value)) is value


def _is_place_object(obj):
    """A list, dict or object whose attributes a cell writes (a Tensor is decided by `Lifetimes.made`)."""
    return isinstance(obj, (list, dict)) or hasattr(obj, "__dict__") and not isinstance(
        obj, (Tensor, type, types.ModuleType, types.FunctionType, types.MethodType, types.CellType))


def _reachable(roots, targets):
    """The ids of `targets` (id -> object) reachable from `roots`."""
    if not targets:
        return set()
    found, seen, stack = set(), set(), list(roots)
    while stack and len(found) < len(targets):
        obj = stack.pop()
        if isinstance(obj, _ATOMS):
            continue
        key = id(obj)
        if key in seen:
            continue
        if len(seen) >= LIMIT:
            return set(targets)               # too much to walk: every place keeps its state (as before this rule)
        seen.add(key)
        if key in targets and targets[key] is obj:
            found.add(key)
        stack.extend(_referents(obj))
    return found


def _referents(obj):
    if isinstance(obj, dict):
        return [v for k, v in obj.items() if not _is_dunder(k)] + [k for k in obj if not isinstance(k, _ATOMS)]
    if isinstance(obj, (list, tuple, set, frozenset)):
        return list(obj)
    if isinstance(obj, Tensor):
        return []
    if isinstance(obj, types.CellType):
        try:
            return [obj.cell_contents]
        except ValueError:
            return []
    if isinstance(obj, types.MethodType):
        return [obj.__self__, obj.__func__]
    if isinstance(obj, types.FunctionType):
        if is_library_module(obj.__module__):
            return []
        return list(obj.__closure__ or ()) + list(obj.__defaults__ or ()) + \
            list((obj.__kwdefaults__ or {}).values()) + [obj.__globals__]
    if isinstance(obj, (type, types.ModuleType)):
        name = obj.__module__ if isinstance(obj, type) else obj.__name__
        return [] if is_library_module(name) else [v for k, v in vars(obj).items() if not _is_dunder(k)]
    attrs = getattr(obj, "__dict__", None)
    out = list(attrs.values()) if isinstance(attrs, dict) else []
    if not is_library_module(type(obj).__module__):
        out.append(type(obj))                 # class attributes (`self.registry` on the class) are reached so
    for name in getattr(type(obj), "__slots__", ()):
        if isinstance(name, str) and not name.startswith("__"):
            out.append(getattr(obj, name, None))
    return out


def _is_dunder(key):
    """A namespace's own machinery (`__loader__`, `__spec__`, `__builtins__`): never a user's state, and
    under a test runner or an IDE it reaches the whole session."""
    return type(key) is str and key.startswith("__") and key.endswith("__")
