"""The places a function the converter converts writes through its parameters (and its globals and closure
variables): declared where it is called.

A tensor-dependent if/while that calls `self.bump()` (which sets `self.count`), `m(x)` (a
callable object, a Layer's forward) or `helper(d)` (which sets `d['k']`) writes those places
as surely as if it wrote them itself. Each such function gets a summary once (`summary`,
cached per code object): the attributes, items and list/dict/Tensor contents it writes
through each parameter it never rebinds (`self.n = ...`, `p.log.append(v)`, `t.add_(1)`), and
the calls it makes through them (`self.forward(x)`, `helper(self)`). At a call site of a
construct (`_jst.called_places(lambda: (m, x), 'm')` in its `state=`), the summary is applied
to the objects the call will get: the places become cells of the construct, carried from its
first trace. What no summary shows (a C function, `getattr(self, name)`, `eval`) is still found
by tracing the construct (`operators.regions._moved_attributes`, `runtime.control_flow.carried`).
"""
import inspect
import types

import gast

from runtime.nn import Layer
from runtime.state import AttrCell, ContentsCell, ItemCell, TensorValueCell
from runtime.tensor import EagerTensor
from runtime.torch_methods import IN_PLACE

from ..analysis.activity import activity_of, MUTATORS, param_names
from ..analysis.scope import assigned_names, own_scope
from ..errors import ConversionError
from ..parsing import parse_function
from ..transforms.calls import is_library_module

_DEPTH = 4                                     # calls followed below a call site
_TENSOR_WRITERS = frozenset(IN_PLACE) | {"set_value", "copy_", "fill_", "zero_"}
_summaries = {}                                # code object -> _Summary, or None (no source, a generator)


def called_places(thunk, label):
    """The cells a call writes through the objects it is given: `thunk()` is (callee, positional
    arguments...) as the call site will pass them (None where the converter could not tell)."""
    try:
        callee, *args = thunk()
    except Exception:  # noqa: BLE001 - a name not bound yet, an attribute not there: nothing to declare
        return ()
    found = {}
    _apply(callee, args, label, 0, set(), found)
    return tuple(found.values())


class _Summary:
    __slots__ = ("params", "writes", "calls")

    def __init__(self, params, writes, calls):
        self.params = params      # positional parameter names, in order
        self.writes = writes      # (root, path, kind, key): root a param index or a global/closure name;
                                  # kind "attr" | "item" | "contents"
        self.calls = calls        # (callee chain, [argument chain or None]); a chain: (param index | name, path)


def summary(fn):
    """What fn writes through its parameters and which calls it makes through them (once per code object)."""
    code = fn.__code__
    if code in _summaries:
        return _summaries[code]
    try:
        node = parse_function(fn).node
    except (ConversionError, OSError, TypeError, SyntaxError):
        node = None
    _summaries[code] = result = None if node is None or _is_generator(node) else _summarize(node)
    return result


def _summarize(node):
    args = node.args
    params = [p.id for p in args.posonlyargs + args.args]
    rebound = assigned_names(node.body) | (param_names(args) - set(params))
    index = {p: i for i, p in enumerate(params) if p not in rebound}
    act = activity_of(node.body)
    outer = act.globals | act.nonlocals

    def root_of(name):
        """A parameter's index, the name of a global or closure variable (`G.n = ...`), or None (a local)."""
        if name in index:
            return index[name]
        return None if name in rebound and name not in outer or name in params else name

    writes = []
    for c in act.composites:
        chain = _chain(c.container)
        root = None if chain is None else root_of(chain[0])
        if root is None:
            continue
        kind, key = c.kind, None
        if kind == "attr":
            key = c.node.attr
        elif kind == "item":
            key = c.node.slice.value
        writes.append((root, chain[1], kind, key))
    for name in act.mutated | act.subscripted:
        if name in index:
            writes.append((index[name], (), "contents", None))
    calls = []
    for call in own_scope(node.body):
        if not isinstance(call, gast.Call):
            continue
        chain = _chain(call.func)
        if chain is None:
            continue
        root, path = chain
        if root in index:
            root = index[root]
        elif root in rebound or root in params:
            continue
        if path and path[-1][1] in _TENSOR_WRITERS:
            writes.append((root, path[:-1], "contents", None))      # `t.add_(1)`, `self.w.set_value(v)`
            continue
        arguments = []
        for arg in call.args:
            a = _chain(arg)
            arguments.append(None if a is None or a[0] not in index else (index[a[0]], a[1]))
        calls.append(((root, path), arguments))
    return _Summary(params, writes, calls)


def _is_generator(node):
    return any(isinstance(n, (gast.Yield, gast.YieldFrom)) for n in own_scope(node.body))


def _chain(node):
    """`a.b['k'].c` as ('a', (('attr', 'b'), ('item', 'k'), ('attr', 'c'))), or None (a call, a computed key)."""
    path = []
    while isinstance(node, (gast.Attribute, gast.Subscript)):
        if isinstance(node, gast.Attribute):
            path.append(("attr", node.attr))
        elif isinstance(node.slice, gast.Constant):
            path.append(("item", node.slice.value))
        else:
            return None
        node = node.value
    return (node.id, tuple(reversed(path))) if isinstance(node, gast.Name) else None


_MISSING = object()


def _follow(value, path):
    """value.a['k']... looked up without running user code (no property, no __getattr__ but a Layer's own),
    or _MISSING."""
    for step, key in path:
        if step == "item":
            if type(value) is dict and key in value:
                value = value[key]
            elif type(value) is list and isinstance(key, int) and -len(value) <= key < len(value):
                value = value[key]
            else:
                return _MISSING
            continue
        held = getattr(value, "__dict__", None)
        if isinstance(held, dict) and key in held:
            value = held[key]
            continue
        if isinstance(value, Layer):
            for registry in ("_sublayers", "_parameters", "_buffers"):
                found = held.get(registry, {}) if isinstance(held, dict) else {}
                if key in found:
                    value = found[key]
                    break
            else:
                value = _method(value, key)
        else:
            value = _method(value, key)
        if value is _MISSING:
            return _MISSING
    return value


def _method(obj, name):
    """obj.name where the class defines it as a plain function: the bound method; else _MISSING."""
    try:
        attr = inspect.getattr_static(type(obj), name)
    except AttributeError:
        return _MISSING
    return types.MethodType(attr, obj) if isinstance(attr, types.FunctionType) else _MISSING


def _function(callee):
    """(the user function a call of callee runs, the values bound before the call's own arguments), or None."""
    if isinstance(callee, types.MethodType):
        fn, bound = callee.__func__, [callee.__self__]
    elif isinstance(callee, types.FunctionType):
        fn, bound = callee, []
    elif isinstance(callee, Layer):
        fn, bound = inspect.getattr_static(type(callee), "forward", None), [callee]
    elif hasattr(callee, "__dict__") and not isinstance(callee, (type, types.ModuleType)):
        fn, bound = inspect.getattr_static(type(callee), "__call__", None), [callee]
    else:
        return None
    if not isinstance(fn, types.FunctionType) or is_library_module(getattr(fn, "__module__", "") or ""):
        return None
    return fn, bound


def _apply(callee, args, label, depth, seen, found):
    """Add to found (identity -> cell) the places the call `callee(*args)` writes through its arguments."""
    resolved = _function(callee)
    if resolved is None or depth > _DEPTH:
        return
    fn, bound = resolved
    values = bound + list(args)
    key = (fn.__code__, tuple(id(v) for v in values))
    if key in seen:
        return
    seen.add(key)
    s = summary(fn)
    if s is None:
        return
    values = (values + [None] * len(s.params))[:len(s.params)]
    for root, path, kind, attr in s.writes:
        base = values[root] if isinstance(root, int) else _global(fn, root)
        if base is None or base is _MISSING:
            continue
        holder = _follow(base, path)
        cell = _cell(holder, kind, attr, _label(s.params[root] if isinstance(root, int) else root, path, kind,
                                                attr, fn))
        if cell is not None:
            found.setdefault(cell.identity(), cell)
    for (root, path), arguments in s.calls:
        base = values[root] if isinstance(root, int) else _global(fn, root)
        if base is None or base is _MISSING:
            continue
        inner = _follow(base, path)
        if inner is _MISSING:
            continue
        inner_args = [None if a is None or values[a[0]] is None else _follow(values[a[0]], a[1]) for a in arguments]
        _apply(inner, [None if a is _MISSING else a for a in inner_args], label, depth + 1, seen, found)


def _global(fn, name):
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    if name in cells:
        try:
            return cells[name].cell_contents
        except ValueError:
            return _MISSING
    return fn.__globals__.get(name, _MISSING)


def _cell(holder, kind, key, label):
    if holder is _MISSING or holder is None:
        return None
    if kind == "contents":
        if isinstance(holder, EagerTensor):
            return TensorValueCell(holder, label)
        # a list a callee appends to cannot be carried (its length would change): left to the check that
        # names it (`operators.regions._check_captured`)
        return ContentsCell(holder, label) if type(holder) is dict else None
    if kind == "item":
        return ItemCell(holder, key, label) if type(holder) is dict else None
    if isinstance(holder, (type, types.ModuleType, EagerTensor)) or not hasattr(holder, "__dict__"):
        return None
    return AttrCell(holder, key, label)


def _label(param, path, kind, key, fn):
    text = param + "".join(f".{k}" if step == "attr" else f"[{k!r}]" for step, k in path)
    if kind == "attr":
        text += f".{key}"
    elif kind == "item":
        text += f"[{key!r}]"
    return f"{text} (written by {fn.__qualname__})"
