"""In-place updates of local names → rebinding, so analysis sees them as writes.

    xs.append(v)      →   xs = _jst.convert_append(xs, v)
    x[i] = v          →   x = _jst.convert_setitem(x, i, v)
    x[i] += v         →   x = _jst.convert_setitem(x, i, x[i] + v)

On Python lists/dicts the operators mutate in place and return the same
object (Python semantics). On Variables they return a new value: a tensor
array after the append, a functionally updated tensor after setitem, which
then flows out of branches and loops like any other rebound name.
"""
import copy

import gast

from .base import Transformer, jst, load, located, own_scope, store


class InPlaceUpdates(Transformer):
    """Only names local to the function are rebound; a global or closure container is mutated as written."""

    def transform(self, fn_node):
        declared = set()
        bound = {p.id for p in gast.walk(fn_node.args) if isinstance(p, gast.Name) and isinstance(p.ctx, gast.Param)}
        for node in own_scope(fn_node):     # a nested def's parameter `log` is not this function's `log`
            if isinstance(node, (gast.Global, gast.Nonlocal)):
                declared.update(node.names)
            elif isinstance(node, gast.Name) and isinstance(node.ctx, gast.Store):
                bound.add(node.id)
        self.locals = bound - declared
        return super().transform(fn_node)

    def visit_Expr(self, node):
        call = node.value
        if (isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute) and call.func.attr == "append"
                and isinstance(call.func.value, gast.Name) and call.func.value.id in self.locals
                and len(call.args) == 1 and not call.keywords):
            target = call.func.value.id
            new = gast.Call(func=jst("convert_append"), args=[load(target), call.args[0]], keywords=[])
            return located(gast.Assign(targets=[store(target)], value=new, type_comment=None), node)
        return node

    def visit_Assign(self, node):
        if len(node.targets) == 1 and _is_name_subscript(node.targets[0], self.locals):
            return self._setitem(node, node.targets[0], node.value)
        return node

    def visit_AugAssign(self, node):
        if _is_name_subscript(node.target, self.locals):
            current = copy.deepcopy(node.target)
            current.ctx = gast.Load()
            value = gast.BinOp(left=current, op=node.op, right=node.value)
            return self._setitem(node, node.target, value)
        return node

    def _setitem(self, node, target, value):
        name = target.value.id
        call = gast.Call(func=jst("convert_setitem"), args=[load(name), index_expr(target.slice), value],
                         keywords=[])
        return located(gast.Assign(targets=[store(name)], value=call, type_comment=None), node)


def _is_name_subscript(target, local_names):
    return isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name) and \
        target.value.id in local_names


def index_expr(index):
    """A subscript's index as an ordinary expression (`1:3` → `slice(1, 3, None)`)."""
    if isinstance(index, gast.Slice):
        parts = [p if p is not None else gast.Constant(value=None, kind=None)
                 for p in (index.lower, index.upper, index.step)]
        return gast.Call(func=load("slice"), args=parts, keywords=[])
    if isinstance(index, gast.Tuple):
        return gast.Tuple(elts=[index_expr(e) for e in index.elts], ctx=gast.Load())
    return index
