"""The places (attributes, items) an `if`/`while`/`for` writes through objects, as one runtime argument.

    if x.sum() > 0:                     ...
        self.n = self.n + 1       →     _jst.convert_ifelse(x.sum() > 0, __true_fn_0, __false_fn_0, (), (),
                                            state=lambda: (_jst.attr_cell(self, 'n', 'self.n'),))

The lambda is called only when the construct becomes a graph op; its cells
(`runtime.state`) are carried through the op like names (see
`runtime.control_flow.cond`). A place whose root name the construct itself
rebinds is not state of it (`p = Point(); p.x = 1`: the object is new), and a
place inside another written place is carried with it (`self.d = {}` and
`self.d['k'] = v`: `self.d` is the state).

A local name an `if` writes into without rebinding it (`buf[i] = v`) may hold
an eager Tensor, which the store writes in place (a branch gets the object
itself): it is declared too (`+ _jst.tensor_cell(lambda: buf, 'buf')`, a cell
only when it holds one), so the `if` carries the Tensor from its first trace
instead of finding the write by tracing it (runtime.control_flow). A loop does
not: such a name is a loop variable, which the loop carries as a traced value.
"""
import copy

import gast

from runtime.torch_methods import IN_PLACE

from ..analysis import Anno, getanno
from ..analysis.activity import MUTATORS, expr_text
from ..analysis.scope import own_scope
from .base import JST, const, jst
from .calls import ARRAY_METHODS, is_library_object


def state_keyword(composites, bound, written_into=(), calls=(), tensors=()):
    """`state=lambda: (cells...)` for these Composites, the local names written into, the places the
    calls (`call_sites`) write through what they are given and the Tensors their in-place methods write
    (`tensor_writers`), or None when there are none to carry."""
    places = [c for c in composites if c.root not in bound]
    texts = {c.text for c in places}
    places = sorted((c for c in places if not _inside_other(c, texts)), key=lambda c: c.text)
    if not places and not written_into and not calls and not tensors:
        return None
    parts = [gast.Tuple(elts=[_cell(c) for c in places], ctx=gast.Load())] if places else []
    parts += [gast.Call(func=jst("tensor_cell"), args=[gast.Lambda(args=_no_arguments(), body=_name(name)),
                                                        const(name)], keywords=[]) for name in sorted(written_into)]
    parts += [gast.Call(func=jst("tensor_cell"), args=[gast.Lambda(args=_no_arguments(), body=_load(expr)),
                                                        const(text)], keywords=[]) for text, expr in tensors]
    parts += [gast.Call(func=jst("called_places"), args=[gast.Lambda(args=_no_arguments(), body=values),
                                                          const(label)], keywords=[]) for label, values in calls]
    body = parts[0]
    for part in parts[1:]:
        body = gast.BinOp(left=body, op=gast.Add(), right=part)     # each tensor_cell is a tuple of 0 or 1 cells
    return gast.keyword(arg="state", value=gast.Lambda(args=_no_arguments(), body=body))


def _no_arguments():
    return gast.arguments(args=[], posonlyargs=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                          defaults=[])


def _name(name):
    return gast.Name(id=name, ctx=gast.Load(), annotation=None, type_comment=None)


_IN_PLACE = {"convert_setitem", "convert_append", "convert_pop", "convert_insert", "convert_extend",
             "convert_delitem"}


def changed_arguments(fn_node, stmts):
    """Parameters whose list/dict the statements change in place (`d[k] = v`, `xs.pop()`).

    The caller holds that object: a change to it is a result of the construct
    even where the name is not read again in the function.
    """
    return changed_in_place(stmts) & getanno(fn_node, Anno.SCOPE).params


def changed_in_place(stmts):
    """Names whose object the statements change in place: an update lowered by InPlaceUpdates
    (`d = _jst.convert_setitem(d, k, v)`, `xs = _jst.convert_append(xs, v)`) or a list/dict method
    call (`xs.sort()`)."""
    names = set()
    for node in (n for stmt in stmts for n in gast.walk(stmt)):
        call = node.value if isinstance(node, gast.Assign) else node
        if not isinstance(call, gast.Call) or not call.args or not isinstance(call.args[0], gast.Name):
            continue
        func = call.func
        if isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name) and func.value.id == JST \
                and func.attr in _IN_PLACE:
            names.add(call.args[0].id)
    for node in (n for stmt in stmts for n in gast.walk(stmt)):
        if isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) and node.func.attr in MUTATORS \
                and isinstance(node.func.value, gast.Name):
            names.add(node.func.value.id)
    return frozenset(names)


def changed_only_in_place(stmts):
    """Names the statements change in place and rebind no other way: after them the name holds the
    object it held before, changed; another name (`m2 = m`) or container may hold that object too, so
    the change is a result of an `if` even where the name is dead after it."""
    stores = {}
    for node in own_scope(stmts):
        if isinstance(node, gast.Name) and not isinstance(node.ctx, gast.Load):
            stores[node.id] = stores.get(node.id, 0) + 1
    updates = {}
    for node in own_scope(stmts):
        name = _updated_in_place(node)
        if name is not None:
            updates[name] = updates.get(name, 0) + 1
    mutated = {node.func.value.id for node in own_scope(stmts) if isinstance(node, gast.Call)
               and isinstance(node.func, gast.Attribute) and node.func.attr in MUTATORS
               and isinstance(node.func.value, gast.Name)}
    return frozenset(name for name, count in updates.items() if stores.get(name) == count) | \
        frozenset(name for name in mutated if name not in stores)


def _updated_in_place(assign):
    """`x = _jst.convert_append(x, ...)` (any in-place update), `x, v = _jst.convert_pop(x, ...)`,
    `x = _jst.convert_pop(x)[0]`: the name x; else None."""
    if not isinstance(assign, gast.Assign) or len(assign.targets) != 1:
        return None
    target, call = assign.targets[0], assign.value
    if isinstance(call, gast.Subscript):        # `xs = _jst.convert_pop(xs)[0]`
        call = call.value
    if isinstance(target, gast.Tuple) and target.elts:
        target = target.elts[0]
    if not (isinstance(target, gast.Name) and isinstance(call, gast.Call) and call.args
            and isinstance(call.args[0], gast.Name) and call.args[0].id == target.id):
        return None
    func = call.func
    if isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name) and func.value.id == JST \
            and func.attr in _IN_PLACE | {"convert_setitem_path"}:
        return target.id
    return None


def written_into(stmts):
    """Local names the statements write into by a subscript store or a Tensor's in-place method (`buf[i] = v`,
    `buf.add_(1)`, lowered to `buf = _jst.convert_setitem(buf, i, v)` by InPlaceUpdates) and bind no other way, nested
    constructs included: the object the name holds before them is what the store changes."""
    stores, into = {}, {}
    for node in own_scope(stmts):
        if isinstance(node, gast.Name) and not isinstance(node.ctx, gast.Load):
            stores[node.id] = stores.get(node.id, 0) + 1
        elif isinstance(node, gast.Assign) and _writes_into_itself(node):
            name = node.targets[0].id
            into[name] = into.get(name, 0) + 1
    return frozenset(name for name, count in into.items() if stores[name] == count)


def _writes_into_itself(assign):
    """`x = _jst.convert_setitem(x, ...)`, `x = _jst.convert_in_place(x, 'add_', ...)`."""
    call, targets = assign.value, assign.targets
    return len(targets) == 1 and isinstance(targets[0], gast.Name) and isinstance(call, gast.Call) \
        and isinstance(call.func, gast.Attribute) and isinstance(call.func.value, gast.Name) \
        and call.func.value.id == JST and call.func.attr in ("convert_setitem", "convert_in_place") and call.args \
        and isinstance(call.args[0], gast.Name) and call.args[0].id == targets[0].id


def call_sites(stmts, bound, resolve):
    """[(label, `(callee, arguments...)` expression)] of the calls in the statements (not in nested defs) that
    may run a function the converter converts and write through what it is given (`self.bump()`, `m(x)`,
    `helper(d)`): the callee is a name or attribute chain whose root the statements do not rebind and that
    is no library object; an argument that is no such chain is passed as None (nothing known of it)."""
    found = {}
    for node in own_scope(stmts, stop=_LATE):
        if not isinstance(node, gast.Call) or any(isinstance(a, gast.Starred) for a in node.args):
            continue
        root = _chain_root(node.func)
        if root is None or root in bound or root == JST:
            continue
        if isinstance(node.func, gast.Attribute) and node.func.attr in _NOT_USER_METHODS or \
                isinstance(node.func, gast.Name) and not node.args:
            continue        # a plain function given nothing writes only globals and closures (not summarized)
        known, value = resolve(root)
        if known and is_library_object(value):
            continue
        label = expr_text(node.func)
        if label in found:
            continue
        args = [_load(a) if _chain_root(a) not in (None, JST) and _chain_root(a) not in bound else const(None)
                for a in node.args]
        found[label] = gast.Tuple(elts=[_load(node.func)] + args, ctx=gast.Load())
    return sorted(found.items())


_LATE = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef)
_NOT_USER_METHODS = ARRAY_METHODS | MUTATORS | frozenset(IN_PLACE) | {"set_value", "copy_", "fill_", "zero_"}


def tensor_writers(stmts, bound):
    """[(text, expression)] of the names and attribute chains the statements call a Tensor's in-place
    method on (`v.set_value(x)`, `self.h.add_(1)`; not a lowered local, `x = _jst.convert_in_place(x, ...)`,
    which `written_into` covers), whose root they do not rebind: a Tensor there is written in place."""
    found = {}
    for node in own_scope(stmts, stop=_LATE):
        if not (isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute)):
            continue
        if node.func.attr in _WRITERS:
            target = node.func.value
        elif node.func.attr == "convert_in_place" and _chain_root(node.func.value) == JST and node.args:
            target = node.args[0]       # `_jst.convert_in_place(self.h, 'add_', 1)`: not rebound to a name
        else:
            continue
        root = _chain_root(target)
        if root is not None and root not in bound and root != JST:
            found.setdefault(expr_text(target), target)
    return sorted(found.items())


_WRITERS = frozenset(IN_PLACE) | {"set_value", "copy_", "fill_", "zero_"}


def _chain_root(node):
    """The name `a.b.c` (attributes only) starts from, or None."""
    while isinstance(node, gast.Attribute):
        node = node.value
    return node.id if isinstance(node, gast.Name) else None


def _inside_other(composite, texts):
    """Whether an enclosing expression of this place (`self.d` for `self.d['k']`) is written too."""
    node = getattr(composite.node, "value", None)
    while isinstance(node, (gast.Attribute, gast.Subscript)):
        if expr_text(node) in texts:
            return True
        node = node.value
    return False


def _cell(composite):
    container = _load(composite.container)
    if composite.kind == "attr":
        return gast.Call(func=jst("attr_cell"), args=[container, const(composite.node.attr), const(composite.text)],
                         keywords=[])
    if composite.kind == "item":
        return gast.Call(func=jst("item_cell"), args=[container, const(composite.node.slice.value),
                                                     const(composite.text)], keywords=[])
    return gast.Call(func=jst("contents_cell"), args=[container, const(composite.text)], keywords=[])


def _load(node):
    """A copy of an expression with every context set to Load."""
    node = copy.deepcopy(node)
    for child in gast.walk(node):
        if hasattr(child, "ctx"):
            child.ctx = gast.Load()
    return node
