"""Places a trace writes through Python objects without a cell: found by comparing before and after.

Converted code writes through a cell (`runtime.state`) only under tensor control
flow. Other writes (`self.total = self.total + x`, a sub-layer's `self.n = ...`,
`d[k] = v` on a dict argument) go through no cell: the objects the trace may
write — the function's `self` and arguments, instances of user classes it names
as globals, the object of every method it calls, and the user objects each of
those holds in an attribute — are snapshotted first (`snapshot`) and compared
after (`register_writes`); list/dict arguments, which the trace sees as copies,
are compared with those copies (`ArgumentWrites`).
"""
import inspect
import numbers
import types

import numpy as np

from runtime import pytree
from runtime.control_flow import Undefined
from runtime.tracer import Tracer
from runtime.nn import Layer
from runtime.state import AttrCell, ContentsCell
from runtime.tensor import Tensor

from ..transforms.calls import is_library_module


def _arguments(fn, instance, args, kwargs):
    try:
        return inspect.signature(fn).bind(*((instance,) if instance is not None else ()), *args, **kwargs).arguments
    except TypeError:
        return {}


def argument_objects(fn, instance, args, kwargs):
    """{parameter name: object} for `self` and the arguments a function may write attributes on."""
    return {name: value for name, value in _arguments(fn, instance, args, kwargs).items()
            if value is not None and not isinstance(value, (Tensor, np.ndarray, numbers.Number, str, bytes,
                                                            tuple, list, dict))}


def _containers(fn, instance, args, kwargs):
    return {name: value for name, value in _arguments(fn, instance, args, kwargs).items()
            if type(value) in (list, dict)}


class ArgumentWrites:
    """List/dict arguments: the trace sees copies rebuilt from the call's leaves (tensors as inputs);
    what the function changes in them goes to the caller's own containers, like any written place."""

    def __init__(self, fn, instance, call):
        self.fn, self.instance, self.call, self.seen = fn, instance, call, []

    def traced_with(self, args, kwargs):
        """Called with the rebuilt arguments just before the function runs."""
        self.seen = [(name, copy, type(copy)(copy)) for name, copy in
                     _containers(self.fn, self.instance, args, kwargs).items()]

    def register(self, written):
        if self.call is None:
            return
        originals = _containers(self.fn, self.instance, *self.call)
        for name, copy, initial in self.seen:
            original = originals.get(name)
            if type(original) is not type(copy) or not contents_changed(initial, copy):
                continue
            cell = ContentsCell(original, name)
            written[cell.identity()] = (cell, type(original)(original))
            cell._store(copy)


def snapshot(objects):
    """What the objects a trace may write hold before it: attributes, and the contents of list/dict attributes.

    Writes made outside tensor control flow (`self.total = self.total + x`) go
    through no cell; comparing with this after the trace finds them.
    """
    out = []
    for name, obj in objects.items():
        attrs = getattr(obj, "__dict__", None)
        if not isinstance(attrs, dict) or isinstance(obj, (type, types.ModuleType, types.FunctionType)):
            continue
        contents = {k: type(v)(v) for k, v in attrs.items() if type(v) in (list, dict)}
        out.append((name, obj, dict(attrs), contents))
        # one level down, the objects of user classes it holds (`self.cfg.n = ...`); a Layer's sub-layers,
        # all of them (`self.blocks[0].state = ...`)
        seen = {id(entry[1]) for entry in out}
        held = [(f"{name}.{key}", value) for key, value in attrs.items() if is_user_object(value)]
        if isinstance(obj, Layer):
            held += list(obj.named_sublayers(prefix=name))
        for label, value in held:
            if id(value) not in seen and isinstance(getattr(value, "__dict__", None), dict):
                seen.add(id(value))
                contents = {k: type(v)(v) for k, v in vars(value).items() if type(v) in (list, dict)}
                out.append((label, value, dict(vars(value)), contents))
    return out


def is_user_object(value):
    """An instance of a class defined in user code (not a library's, a module, a class or a function)."""
    return not isinstance(value, (type, types.ModuleType, types.FunctionType, types.MethodType, Tensor)) and \
        not is_library_module(type(value).__module__) and hasattr(value, "__dict__")


def register_writes(written, snap):
    """Add to `written` (a trace's places: cell identity -> (cell, value before)) the places of the
    snapshot's objects the trace changed.

    A Python value written while tracing (`self.calls += 1`) counts too: it is
    stored after each run, and the next call sees that the Program was traced
    with the old value (see `StateWrites.stale`). The snapshot's values are
    the true values before the trace, so they come first: put back last, they
    win over what a cell saw after an earlier write of the same trace.
    """
    found = {}
    for name_of, obj, attrs, contents in snap:
        for name, value in list(vars(obj).items()):
            if not (_has_variables(value) or _changed(name, value, attrs, contents)):
                continue
            if name in contents and value is attrs.get(name):
                cell, before = ContentsCell(value, f"{name_of}.{name}"), contents[name]
            else:
                cell = AttrCell(obj, name, f"{name_of}.{name}")
                before = attrs[name] if name in attrs else Undefined(cell.label)
            found[cell.identity()] = (cell, before)
    rest = {k: v for k, v in written.items() if k not in found}
    written.clear()
    written.update(found)
    written.update(rest)


def _changed(name, value, attrs, contents):
    if name not in attrs or value is not attrs[name]:
        return True
    return name in contents and contents_changed(contents[name], value)


def contents_changed(old, new):
    if len(old) != len(new):
        return True
    pairs = zip(old.values(), new.values()) if isinstance(old, dict) else zip(old, new)
    return (isinstance(old, dict) and list(old) != list(new)) or any(a is not b for a, b in pairs)


def _has_variables(value):
    return any(isinstance(v, Tracer) for v in pytree.flatten(value)[0])

