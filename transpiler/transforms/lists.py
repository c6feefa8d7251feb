"""In-place updates of local names → rebinding, so analysis sees them as writes.

    xs.append(v)      →   xs = _jst.convert_append(xs, v)
    x[i] = v          →   x = _jst.convert_setitem(x, i, v)
    x[i] += v         →   x = _jst.convert_setitem(x, i, x[i] + v)
    x[k][i] = v       →   x = _jst.convert_setitem_path(x, (k,), i, v)    (any depth: `cache[l][:, p] = k`)
    a, x[i] = v       →   a, __item_0 = v; x = _jst.convert_setitem(x, i, __item_0)   (stored left to right)
    xs.insert(i, v)   →   xs = _jst.convert_insert(xs, i, v)          (also extend)
    xs.pop()          →   xs = _jst.convert_pop(xs)[0]
    v = xs.pop(i)     →   xs, v = _jst.convert_pop(xs, i)
    s += xs.pop()     →   xs, __pop_0 = _jst.convert_pop(xs); s += __pop_0   (a pop inside a statement)
    del xs[i]         →   xs = _jst.convert_delitem(xs, i)
    x.stop_gradient = v  →  x = _jst.convert_stop_gradient(x, v)      (Paddle's flag: x detached from here on;
                                                                       also self.h.stop_gradient = v)
    x.add_(y, alpha=2)   →  x = _jst.convert_in_place(x, 'add_', y, alpha=2)   (PyTorch's in-place methods,
                                                                       runtime.torch_methods.IN_PLACE)
    f(n).fill_(0)        →  _jst.convert_in_place(f(n), 'fill_', 0)   (on a temporary: its value)
    p.data.add_(g)       →  p.data = _jst.convert_in_place(p.data, 'add_', g)   (PyTorch's `.data`: traced, a
                                                                       write into p; eagerly, p's own array)
    xs[i]             →   _jst.convert_getitem(xs, i)      (only for names grown by append/insert/extend
                                                          or bound to a list display: `xs = [a, b]`)

On Python lists/dicts the operators mutate in place and return the same
object (Python semantics). On Variables they return a new value: a tensor
array after the append, a functionally updated tensor after setitem, which
then flows out of branches and loops like any other rebound name. A list
that may become a tensor array is read through `convert_getitem`, so a
tensor index (`xs[i - 1]` with a loop counter) reads it in the graph.
"""
import copy

import gast

from runtime.torch_methods import IN_PLACE

from ..analysis.scope import assigned_names, declared_names, every_node
from . import templates
from .base import Transformer, const, load, located, store


class InPlaceUpdates(Transformer):
    """Only names local to the function are rebound; a global or closure container is mutated as written."""
    @classmethod
    def applies(cls, fn_node, present):
        """Items, or the methods (by name) and attribute it rewrites."""
        return "Subscript" in present or not present.isdisjoint(_REWRITTEN_ATTRIBUTES)

    def transform(self, fn_node):
        # a nested def's parameter `log` is not this function's `log`
        self.locals = assigned_names([fn_node.args, *fn_node.body]) - declared_names(fn_node.body)
        self.appended = set()
        self.pops = False         # whether any local list is popped (else no statement has a pop to hoist)
        for node in every_node(fn_node):
            if isinstance(node, gast.Call):
                self.appended.add(_receiver(node, self.locals, _GROWING))
                self.pops = self.pops or _receiver(node, self.locals, ("pop",)) is not None
            elif (isinstance(node, gast.Assign) and isinstance(node.value, (gast.List, gast.ListComp))
                  and len(node.targets) == 1 and isinstance(node.targets[0], gast.Name)
                  and node.targets[0].id in self.locals):
                self.appended.add(node.targets[0].id)
        self.appended.discard(None)
        return super().transform(fn_node)

    def visit_Subscript(self, node):
        self.generic_visit(node)
        if isinstance(node.ctx, gast.Load) and isinstance(node.value, gast.Name) and node.value.id in self.appended:
            call = templates.expression("_jst.convert_getitem(xs, index)", xs=node.value, index=index_expr(node.slice))
            return located(call, node)
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if (isinstance(func, gast.Attribute) and func.attr in IN_PLACE and isinstance(func.value, gast.Call)
                and not any(isinstance(a, gast.Starred) for a in node.args)
                and all(k.arg is not None for k in node.keywords)):
            call = templates.expression("_jst.convert_in_place(x, method, args)", x=func.value, method=const(func.attr),
                                        args=node.args)
            call.keywords = node.keywords
            return located(call, node)
        return node

    def visit_Expr(self, node):
        self.generic_visit(node)
        call = node.value
        if _in_place_receiver(call, self.locals):
            (new,) = templates.replace("x = _jst.convert_in_place(x, method, args)", x=call.func.value.id,
                                       method=const(call.func.attr), args=call.args)
            new.value.keywords = call.keywords
            return located(new, node)
        if _in_place_on_data(call):
            holder_load, holder_store = copy.deepcopy(call.func.value), copy.deepcopy(call.func.value)
            _set_ctx(holder_load, gast.Load())
            _set_ctx(holder_store, gast.Store())
            (new,) = templates.replace("holder = _jst.convert_in_place(current, method, args)", holder=holder_store,
                                       current=holder_load, method=const(call.func.attr), args=call.args)
            new.value.keywords = call.keywords
            return located(new, node)
        target = _receiver(call, self.locals, _METHODS)
        if target is None:
            return self._hoist_pop(node)
        template = "xs = _jst.op(xs, args)[0]" if call.func.attr == "pop" else "xs = _jst.op(xs, args)"
        (new,) = templates.replace(template, xs=target, op=_METHODS[call.func.attr], args=call.args)
        return located(new, node)

    def visit_Assign(self, node):
        if len(node.targets) == 1 and isinstance(node.targets[0], (gast.Tuple, gast.List)) and \
                any(self._item_target(t) for t in gast.walk(node.targets[0])):
            return self._unpack_then_store(node)
        if len(node.targets) == 1 and _subscript_path(node.targets[0], self.locals):
            return self._setitem_path(node, node.targets[0], self.visit(node.value))
        self.generic_visit(node)
        if len(node.targets) == 1 and _is_name_subscript(node.targets[0], self.locals):
            return self._setitem(node, node.targets[0], node.value)
        target = node.targets[0]
        if (len(node.targets) == 1 and isinstance(target, gast.Attribute) and target.attr == "stop_gradient"
                and _rooted_at_local(target.value, self.locals)):
            holder_load, holder_store = copy.deepcopy(target.value), copy.deepcopy(target.value)
            _set_ctx(holder_load, gast.Load())
            _set_ctx(holder_store, gast.Store())
            (new,) = templates.replace("holder = _jst.convert_stop_gradient(current, value)", holder=holder_store,
                                       current=holder_load, value=node.value)
            return located(new, node)
        name = _receiver(node.value, self.locals, ("pop",))
        if len(node.targets) == 1 and name is not None:
            (new,) = templates.replace("xs, target = _jst.convert_pop(xs, args)", xs=name, target=node.targets[0],
                                       args=node.value.args)
            return located(new, node)
        return self._hoist_pop(node)

    def visit_Return(self, node):
        self.generic_visit(node)
        return self._hoist_pop(node)

    def _hoist_pop(self, node):
        """A pop inside a larger statement (`s += xs.pop()`, `return xs.pop() * 2`) runs first, as its own
        rebinding of xs: only where it surely runs (not under and/or/if-else/lambda/comprehension) and
        nothing else in the statement reads xs, so the order of evaluation cannot show."""
        if not self.pops or getattr(node, "value", None) is None:
            return node
        pops = list(_unconditional_pops(node.value, self.locals))
        if len(pops) != 1:
            return node
        call = pops[0]
        name = call.func.value.id
        if sum(isinstance(n, gast.Name) and n.id == name for n in gast.walk(node)) != 1:
            return node
        item = self.ctx.namer.new("pop")
        node.value = _Replace(call, load(item)).visit(node.value)
        (new,) = templates.replace("xs, item = _jst.convert_pop(xs, args)", xs=name, item=item, args=call.args)
        return [located(new, node), node]

    def visit_Delete(self, node):
        if len(node.targets) == 1 and _is_name_subscript(node.targets[0], self.locals):
            target = node.targets[0]
            (new,) = templates.replace("xs = _jst.convert_delitem(xs, index)", xs=target.value.id,
                                       index=index_expr(target.slice))
            return located(new, node)
        return node

    def visit_AugAssign(self, node):
        if _subscript_path(node.target, self.locals):
            current = copy.deepcopy(node.target)
            _load_all(current)
            value = gast.BinOp(left=self.visit(current), op=node.op, right=self.visit(node.value))
            return self._setitem_path(node, node.target, value)
        if _is_name_subscript(node.target, self.locals):
            current = copy.deepcopy(node.target)
            current.ctx = gast.Load()
            value = gast.BinOp(left=self.visit(current), op=node.op, right=node.value)
            return self._setitem(node, node.target, value)
        return self._hoist_pop(node)

    def _item_target(self, target):
        return _is_name_subscript(target, self.locals) or _subscript_path(target, self.locals) is not None

    def _setitem(self, node, target, value):
        (new,) = templates.replace("x = _jst.convert_setitem(x, index, value)", x=target.value.id,
                                   index=index_expr(target.slice), value=value)
        return located(new, node)

    def _setitem_path(self, node, target, value):
        name, path = _subscript_path(target, self.locals)
        (new,) = templates.replace("x = _jst.convert_setitem_path(x, (keys,), index, value)", x=name,
                                   keys=[self.visit(index_expr(key)) for key in path],
                                   index=self.visit(index_expr(target.slice)), value=value)
        return located(new, node)

    def _unpack_then_store(self, node):
        """`foo, a[0], bar = v` → `foo, __item_0, bar = v` then `a[0] = __item_0`, each converted: Python
        unpacks first and stores the targets left to right, so every target is stored through a temporary
        in its own statement, in order."""
        stores = []

        def temporary(target):
            if isinstance(target, (gast.Tuple, gast.List)):
                target.elts = [temporary(t) for t in target.elts]
                return target
            if isinstance(target, gast.Starred):
                target.value = temporary(target.value)
                return target
            name = self.ctx.namer.new("item")
            stores.extend(located(stmt, node) for stmt in templates.replace("target = item", target=target, item=name))
            return store(name)

        (unpack,) = templates.replace("targets = value", targets=temporary(node.targets[0]), value=node.value)
        return [located(unpack, node)] + [self.visit_Assign(s) for s in stores]


_METHODS = {"append": "convert_append", "insert": "convert_insert", "extend": "convert_extend",
            "pop": "convert_pop"}
_GROWING = ("append", "insert", "extend")
_REWRITTEN_ATTRIBUTES = frozenset("." + name for name in (*_METHODS, *IN_PLACE, "stop_gradient"))


def _receiver(node, local_names, methods):
    """The local name `node` calls one of `methods` on (`xs.append(v)` → "xs"), or None."""
    if not (isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) and node.func.attr in methods
            and isinstance(node.func.value, gast.Name) and node.func.value.id in local_names
            and not node.keywords and not any(isinstance(a, gast.Starred) for a in node.args)):
        return None
    arity = {"append": (1,), "insert": (2,), "extend": (1,), "pop": (0, 1)}[node.func.attr]
    return node.func.value.id if len(node.args) in arity else None


def _in_place_receiver(node, local_names):
    """Whether `node` is a statement-level `x.add_(...)` (a PyTorch in-place method) on a local name x."""
    return (isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) and node.func.attr in IN_PLACE
            and isinstance(node.func.value, gast.Name) and node.func.value.id in local_names
            and not any(isinstance(a, gast.Starred) for a in node.args)
            and all(k.arg is not None for k in node.keywords))


def _in_place_on_data(node):
    """Whether `node` is a statement-level `p.data.add_(...)`: a PyTorch in-place method on a `.data`."""
    return (isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) and node.func.attr in IN_PLACE
            and isinstance(node.func.value, gast.Attribute) and node.func.value.attr == "data"
            and not any(isinstance(a, gast.Starred) for a in node.args)
            and all(k.arg is not None for k in node.keywords))


_CONDITIONAL = (gast.BoolOp, gast.IfExp, gast.Lambda, gast.ListComp, gast.SetComp, gast.DictComp,
                gast.GeneratorExp)


def _unconditional_pops(expr, local_names):
    """`xs.pop(...)` calls on local names in expr that run whenever expr does."""
    if _receiver(expr, local_names, ("pop",)) is not None:
        yield expr
    if isinstance(expr, _CONDITIONAL):
        return
    for child in gast.iter_child_nodes(expr):
        yield from _unconditional_pops(child, local_names)


class _Replace(gast.NodeTransformer):
    """One node (by identity) replaced by another."""

    def __init__(self, old, new):
        self.old, self.new = old, new

    def visit(self, node):
        return self.new if node is self.old else super().visit(node)


def _rooted_at_local(node, local_names):
    """`x` or `x.a.b` with x a local name (self included)."""
    while isinstance(node, gast.Attribute):
        node = node.value
    return isinstance(node, gast.Name) and node.id in local_names


def _set_ctx(node, ctx):
    """The outermost node stores or loads; the names and attributes inside it are loads."""
    node.ctx = ctx


def _is_name_subscript(target, local_names):
    return isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name) and \
        target.value.id in local_names


def _subscript_path(target, local_names):
    """`a[k0][k1][i]` with a a local name → ("a", [k0, k1]) (the keys above the last index); else None."""
    path = []
    node = target.value if isinstance(target, gast.Subscript) else None
    while isinstance(node, gast.Subscript):
        path.insert(0, node.slice)
        node = node.value
    if path and isinstance(node, gast.Name) and node.id in local_names:
        return node.id, path
    return None


def _load_all(node):
    """A store target reused as a value: every context in it a load."""
    for child in gast.walk(node):
        if hasattr(child, "ctx"):
            child.ctx = gast.Load()


def index_expr(index):
    """A subscript's index as an ordinary expression (`1:3` → `slice(1, 3, None)`)."""
    if isinstance(index, gast.Slice):
        parts = [p if p is not None else gast.Constant(value=None, kind=None)
                 for p in (index.lower, index.upper, index.step)]
        return gast.Call(func=load("slice"), args=parts, keywords=[])
    if isinstance(index, gast.Tuple):
        return gast.Tuple(elts=[index_expr(e) for e in index.elts], ctx=gast.Load())
    return index
