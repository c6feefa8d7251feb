"""Guards on what a trace read from outside the function: globals, closure cells, attributes.

A Program bakes in every Python value its trace read (`self.tol`, a module flag)
and feeds every eager tensor it captured. Python reads those places again on
every call, so before a function runs under tracing we note what each place its
code names holds (`Reads.function`), and every later call checks them
(`Guard.resolve`, or the lines `Guard.code` adds to the fast call):

- a Python value (number, string, None, NumPy scalar, a small tuple/list/dict of
  those) is guarded by value: when it changes the next call retraces, and the
  retrace reason names the place and both values;
- an eager Tensor the Program captured is re-read on every call, so rebinding the
  name to another tensor of the same shape, dtype and device is seen without a
  retrace (a different shape or dtype retraces); a tensor the Program did not
  capture, or one reached from two places, is guarded by identity (a small
  uncaptured one by its values too: the trace may have read it as a Python value);
- functions, classes, user objects and user modules are guarded by identity; the
  attributes of user objects, user modules and Layers that the code names are
  noted the same way, a few levels deep (every parameter of a Layer).

Places are found from the code: the names a code object (and the functions
nested in it) mentions. A place the code names but this trace never read is
guarded too: at worst that costs a retrace, never a stale Program. Lists and
dicts are watched item by item (and by length) up to 64 items, bigger ones by
identity and length only; what unconverted code (`@not_to_static`, libraries)
reads is not watched.
"""
import struct
import types

import numpy as np

import runtime as rt
from runtime.shape_text import shape_text
from runtime import tracing
from runtime.tensor import EagerTensor as Tensor   # an eager Tensor: a traced value left in a place is no guard

from .effects.outer_names import defaults
from .transforms.calls import is_library_module

MISS = object()
_MAX_DEPTH = 3                 # attribute levels followed from a global, a closure cell or self
_MAX_ITEMS = 64                # containers compared by value up to this many items
_MAX_ARRAY = 1024              # NumPy arrays (baked in as constants) compared by value up to this size
_CHAIN = 64                    # watches checked by one `or` chain of the fast call


# --- values compared exactly ---------------------------------------------------------------

def freeze(value):
    """An exact, hashable stand-in for a plain Python value (None when the value is not plain).

    Floats compare by their bits, so 0.0 and -0.0 differ and NaN equals NaN;
    NumPy scalars by type and bytes; containers item by item.
    """
    t = type(value)
    if t is float:
        return (float, struct.pack("<d", value))
    if t is int or t is bool or t is str or value is None or t is bytes:
        return (t, value)
    if t is complex:
        return (complex, struct.pack("<dd", value.real, value.imag))
    if isinstance(value, np.generic) and value.dtype.kind != "O":
        return (t, value.dtype.str, value.tobytes())
    if t is np.dtype or isinstance(value, np.dtype):
        return (np.dtype, value.str)
    if t is np.ndarray and value.dtype.kind != "O" and value.size <= _MAX_ARRAY:
        return (np.ndarray, value.dtype.str, value.shape, value.tobytes())
    if (t is tuple or t is list) and len(value) <= _MAX_ITEMS:
        items = tuple(freeze(v) for v in value)
        return None if None in items else (t, items)
    if t is dict and len(value) <= _MAX_ITEMS:
        items = tuple((freeze(k), freeze(v)) for k, v in value.items())
        return None if any(None in kv for kv in items) else (t, items)
    return None


def show_frozen(frozen):
    """A frozen value as the user wrote it (for retrace reasons)."""
    kind = frozen[0]
    if kind == "id":
        return f"<{frozen[2]} object>"
    if kind is float:
        return repr(struct.unpack("<d", frozen[1])[0])
    if kind is complex:
        return repr(complex(*struct.unpack("<dd", frozen[1])))
    if isinstance(kind, type) and issubclass(kind, np.generic):
        return repr(np.frombuffer(frozen[2], dtype=frozen[1])[0])
    if kind is np.dtype:
        return f"dtype({np.dtype(frozen[1]).name!r})"
    if kind is np.ndarray:
        text = repr(np.frombuffer(frozen[3], dtype=frozen[1]).reshape(frozen[2]))
        return text if len(text) <= 60 else text[:57] + "..."
    if kind in (tuple, list):
        inner = ", ".join(show_frozen(f) for f in frozen[1])
        return f"({inner}{',' if len(frozen[1]) == 1 else ''})" if kind is tuple else f"[{inner}]"
    if kind is dict:
        return "{" + ", ".join(f"{show_frozen(k)}: {show_frozen(v)}" for k, v in frozen[1]) + "}"
    return repr(frozen[1])


def _is_mutable(value):
    t = type(value)
    return t in (list, dict, np.ndarray) or (t is tuple and any(_is_mutable(v) for v in value))


# --- where a value is read from -------------------------------------------------------------

class Watch:
    """One place the trace may have read (`label` says where, in the user's words) and what it held.

    `source` says how to read it: "dict" (`container.get(name)`: globals, an object's or a
    class's `__dict__`, a Layer's registry, a dict's item), "cell" (a closure cell), "item"
    (`container[name]` of a list or tuple) or "len" (`len(container)`).
    """

    __slots__ = ("label", "source", "container", "name", "shadow", "kind", "expected", "frozen")

    def __init__(self, label, source, container, name, value, kind, shadow=None):
        self.label, self.source, self.container, self.name, self.shadow = label, source, container, name, shadow
        self.kind, self.expected = kind, value
        self.frozen = freeze(value) if kind == "value" else (_tensor_meta(value) if kind == "tensor" else None)

    def read(self):
        source, container = self.source, self.container
        if source == "dict":
            if self.shadow is not None and self.name in self.shadow:
                return MISS
            return container.get(self.name, MISS)
        if source == "cell":
            try:
                return container.cell_contents
            except ValueError:
                return MISS
        if source == "item":
            return container[self.name] if len(container) > self.name else MISS
        return len(container)

    def mismatch(self, value):
        """None when `value` may stand where the trace saw `expected`; else why not, in words."""
        old, kind = self.expected, self.kind
        if value is old and (kind == "identity" or kind == "tensor" or (kind == "value" and not _is_mutable(old))):
            return None
        if value is MISS:
            return f"{self.label}: {show_frozen(self.frozen) if self.kind == 'value' else _show(old)} -> (gone)"
        if self.kind == "value":
            if freeze(value) == self.frozen:
                return None
            return f"{self.label}: {show_frozen(self.frozen)} -> {_show(value)}"
        if kind == "contents" and isinstance(value, Tensor):
            now = _tensor_contents(value)
            if now == self.frozen:
                return None
            if now[0] != self.frozen[0]:
                return f"{self.label}: now another tensor ({_show(old)} -> {_show(value)})"
            return f"{self.label}: its values changed (they were read while tracing)"
        if self.kind == "tensor" and isinstance(value, Tensor):
            meta = _tensor_meta(value)
            if meta == self.frozen:
                return None
            what = [f"{k} {key_part(k, a)} -> {key_part(k, b)}"
                    for k, a, b in zip(("type", "device", "shape", "dtype"), self.frozen, meta) if a != b]
            return f"{self.label}: " + ", ".join(what)
        return f"{self.label}: now another object ({_show(old)} -> {_show(value)})"

    def test(self, i, ns):
        """An expression of the fast call that is true when this place no longer fits (see `Guard.code`).

        A captured tensor's place is read into `w{i}` (the tensor to feed). A place that is gone raises
        KeyError, IndexError or ValueError (an empty cell), which the fast call takes as a miss. An exact
        dict (globals, `__dict__`s, Layer registries) is read by subscript, the cheapest read Python has.
        """
        ns[f"W{i}"], ns[f"E{i}"], ns[f"C{i}"], ns[f"K{i}"] = self, self.expected, self.container, self.name
        key = repr(self.name) if type(self.name) in (str, int) else f"K{i}"
        if self.source == "len":
            return f"len(C{i}) != E{i}"          # an int: equal is the same value
        if self.source == "dict":
            read = f"C{i}[{key}]" if type(self.container) is dict else f"C{i}.get({key}, MISS)"
        elif self.source == "cell":
            read = f"C{i}.cell_contents"
        else:
            read = f"C{i}[{key}]"
        if self.shadow is not None:
            ns[f"S{i}"] = self.shadow
        shadowed = f"{key} in S{i} or " if self.shadow is not None else ""
        if (self.kind == "value" and _is_mutable(self.expected)) or self.kind == "contents":
            return f"{shadowed}W{i}.mismatch({read}) is not None"
        if self.kind == "identity":
            return f"{shadowed}{read} is not E{i}"
        return f"{shadowed}((w{i} := {read}) is not E{i} and W{i}.mismatch(w{i}) is not None)"


def _tensor_contents(t):
    return _tensor_meta(t), t.backend.to_numpy(t.array).tobytes()


def _tensor_meta(t):
    return (type(t).__name__, t.backend.name, tuple(t.array.shape), np.dtype(t.array.dtype).str)


def key_part(kind, value):
    """One part of a tensor's key, as a retrace reason shows it."""
    return shape_text(value) if kind == "shape" else value


def _show(value):
    if isinstance(value, Tensor):
        return f"tensor({value.dtype.name}{shape_text(value.shape)})"
    if value is MISS:
        return "(gone)"
    text = repr(value) if freeze(value) is not None else f"<{type(value).__name__} object>"
    return text if len(text) <= 60 else text[:57] + "..."


# --- noting what a trace may read -------------------------------------------------------------

_NAMES = {}      # code object -> (names it mentions, code objects nested in it)


def code_names(code):
    """Every name a code object and the code nested in it mention (globals and attribute names alike)."""
    found = _NAMES.get(code)
    if found is None:
        names, nested, todo = set(), set(), [code]
        while todo:
            c = todo.pop()
            names.update(c.co_names)
            for const in c.co_consts:
                if isinstance(const, types.CodeType):
                    nested.add(const)
                    todo.append(const)
        found = _NAMES[code] = (frozenset(names), frozenset(nested))
    return found


class Reads:
    """The places one trace may read, in discovery order (a parent before what is read through it)."""

    def __init__(self):
        self.watches = []
        self._places = set()
        self._codes = set()            # code of the noted functions and of the functions nested in them
        self._objects = set()          # (id, names) of objects whose attributes were noted
        self._arguments = []           # (object, label): arguments keyed by identity, read like globals
        self.functions = []            # the functions noted: their globals, closures and defaults existed before

    def argument(self, obj, label):
        """An argument object (keyed by identity): the attributes of it that noted code names are guarded too."""
        if _is_user_object(obj):
            self._arguments.append((obj, label))

    def function(self, fn, instance=None):
        """Note what fn (about to run under tracing, bound to `instance` if a method) may read."""
        code = fn.__code__
        if code in self._codes and instance is None:
            return                     # already noted, or nested in a noted function (its cells are the trace's own)
        names, nested = code_names(code)
        self.functions.append(fn)
        self._codes.add(code)
        self._codes.update(nested)
        g = fn.__globals__
        for name in sorted(names):
            if name in g:
                self._place(f"global '{name}'", g, name, g[name], names, 0)
        for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
            try:
                value = cell.cell_contents
            except ValueError:
                continue
            self._place(f"closure variable '{name}'", cell, None, value, names, 0, source="cell")
        self._defaults(fn, names)
        if instance is not None:
            self._attributes(instance, "self", names, 0)
        for obj, label in self._arguments:
            self._attributes(obj, label, names, 0)

    def _defaults(self, fn, names):
        """A mutable default (`acc=[]`, a config object) lives across calls as a global does: what the
        trace read of it is guarded, so a call after one that changed it traces again."""
        for param, container, key, value in defaults(fn):
            if type(value) in (list, dict) or _is_user_object(value):
                source = "dict" if type(container) is dict else "item"
                self._place(f"default of parameter '{param}'", container, key, value, names, 0, source=source)

    def place(self, label, container, name, value):
        """A place library code read while tracing (e.g. a tensor's `.grad`): `container.get(name)`."""
        self._place(label, container, name, value, frozenset(), 0)

    def _place(self, label, container, name, value, names, depth, shadow=None, source="dict"):
        key = (id(container), name)
        if key in self._places:
            if depth < _MAX_DEPTH and _is_user_object(value):
                self._attributes(value, label.split(" ")[-1].strip("'"), names, depth + 1)
            return
        self._places.add(key)
        if isinstance(value, Tensor):
            self.watches.append(Watch(label, source, container, name, value, "tensor", shadow))
            return
        if type(value) not in (list, dict) and freeze(value) is not None:
            self.watches.append(Watch(label, source, container, name, value, "value", shadow))
            return
        if isinstance(value, types.ModuleType) and is_library_module(value.__name__):
            return                     # `np`, `rt`, `math`: their contents are not the user's state
        self.watches.append(Watch(label, source, container, name, value, "identity", shadow))
        if depth >= _MAX_DEPTH:
            return
        short = label.split(" ")[-1].strip("'")
        if _is_user_object(value):
            self._attributes(value, short, names, depth + 1)
        elif type(value) in (list, tuple, dict) and len(value) <= _MAX_ITEMS:
            self._items(value, short, names, depth + 1)
        elif type(value) in (list, dict):          # too big to check item by item each call: its length only
            self.watches.append(Watch(f"len({short})", "len", value, None, len(value), "value"))

    def _items(self, container, label, names, depth):
        """A list or dict (or a tuple holding tensors or objects): its length and every item are watched,
        each the way a place is (a changed item is found by identity first: no copy compared per call)."""
        if type(container) is not tuple:
            self.watches.append(Watch(f"len({label})", "len", container, None, len(container), "value"))
        if type(container) is dict:
            for key, value in list(container.items()):
                self._place(f"{label}[{key!r}]", container, key, value, names, depth)
        else:
            for index, value in enumerate(container):
                self._place(f"{label}[{index}]", container, index, value, names, depth, source="item")

    def _attributes(self, obj, label, names, depth):
        if (id(obj), names) in self._objects:
            return
        self._objects.add((id(obj), names))
        d = getattr(obj, "__dict__", None)
        if d is None:
            return
        if isinstance(obj, rt.nn.Layer):
            for registry in ("_parameters", "_sublayers"):
                for name, value in list(d.get(registry, {}).items()):
                    if value is not None:
                        self._place(f"{label}.{name}", d[registry], name, value, names, depth)
            if "training" in d:        # read by library forwards (BatchNorm's): train()/eval() retrace
                self._place(f"{label}.training", d, "training", d["training"], names, depth)
            if "_hook_version" in d:   # forward hooks registered or removed: retrace
                self._place(f"{label}._hook_version", d, "_hook_version", d["_hook_version"], names, depth)
        owners = [] if isinstance(obj, (type, types.ModuleType)) else type(obj).__mro__[:-1]
        for name in sorted(names):
            if name in d:
                self._place(f"{label}.{name}", d, name, d[name], names, depth)
                continue
            for owner in owners:       # a class attribute, until the instance shadows it
                value = owner.__dict__.get(name, MISS)
                if value is MISS:
                    continue
                if isinstance(value, Tensor) or freeze(value) is not None:
                    self._place(f"{label}.{name}", owner.__dict__, name, value, names, depth, shadow=d)
                break


def _is_user_object(value):
    if isinstance(value, rt.nn.Layer):
        return True
    if isinstance(value, types.ModuleType):
        return not is_library_module(value.__name__)
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, types.MethodType)):
        return False
    if type(value) is types.SimpleNamespace:
        return True
    cls = value if isinstance(value, type) else type(value)
    return not is_library_module(getattr(cls, "__module__", None)) and hasattr(value, "__dict__")


def current():
    """The Reads of the trace this thread is running, or None."""
    return tracing.current_frame().reads


def _note_place(label, container, name, value):
    reads = current()
    if reads is not None:
        reads.place(label, container, name, value)


tracing.install(place_reader=_note_place)


class recording:
    """`with recording() as reads:` notes what functions converted during the block may read (this thread)."""

    def __enter__(self):     # the trace context's frame holds the Reads (this thread's)
        self.reads = Reads()
        self.scope = tracing.frame(reads=self.reads)
        self.scope.__enter__()
        return self.reads

    def __exit__(self, *exc):
        self.scope.__exit__(*exc)


# --- the guard of one traced Program ---------------------------------------------------------

class Guard:
    """What a traced Program assumes about the world outside its arguments, and where its captured tensors are read.

    `feeds[j]` is the Watch to read captured tensor j from on each call (None:
    the tensor the trace captured, fed by reference as before).
    """

    __slots__ = ("watches", "feeds")

    def __init__(self, watches, captured):
        by_tensor = {}
        for w in watches:
            if w.kind == "tensor":
                by_tensor.setdefault(id(w.expected), []).append(w)
        captured_ids = {id(t) for t in captured}
        self.feeds = []
        for t in captured:
            found = by_tensor.get(id(t), [])
            self.feeds.append(found[0] if len(found) == 1 else None)
        for w in watches:              # uncaptured or aliased tensors: any change of them retraces
            if w.kind == "tensor" and (id(w.expected) not in captured_ids or len(by_tensor[id(w.expected)]) > 1):
                w.kind = "identity"
                if id(w.expected) not in captured_ids and w.expected.array.size <= _MAX_ARRAY:
                    w.kind = "contents"    # perhaps read as a Python value (`if flag:`, `float(t)`): baked in
                    w.frozen = _tensor_contents(w.expected)
        self.watches = watches

    def resolve(self, captured):
        """(None, tensors to feed) when every watched place still fits; else (the first reason, None)."""
        current = {}
        for w in self.watches:
            value = w.read()
            reason = w.mismatch(value)
            if reason is not None:
                return reason, None
            current[id(w)] = value
        return None, [t if w is None else current[id(w)] for t, w in zip(captured, self.feeds)]

    def code(self, ns):
        """(lines checking every watch, the expression feeding captured tensor j) for the fast call.

        The checks are one `or` chain per 64 watches (no statement per watch: a Sequential of four
        layers has 28), inside one `try` that takes a place gone (KeyError, IndexError, an empty cell's
        ValueError) as a miss."""
        tests, index = [], {}
        for i, w in enumerate(self.watches):
            tests.append(w.test(i, ns))
            index[id(w)] = i
        feeds = [None if w is None else f"w{index[id(w)]}" for w in self.feeds]
        if not tests:
            return [], feeds
        lines = ["try:"]
        for start in range(0, len(tests), _CHAIN):
            chain = " or\n            ".join(tests[start:start + _CHAIN])
            lines += [f"    if ({chain}):", "        return MISS"]
        lines += ["except (LookupError, ValueError):", "    return MISS"]
        return lines, feeds

