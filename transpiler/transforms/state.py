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
"""
import copy

import gast

from ..analysis import Anno, getanno
from ..analysis.activity import MUTATORS, expr_text
from .base import JST, const, jst


def state_keyword(composites, bound):
    """`state=lambda: (cells...)` for these Composites, or None when there are none to carry."""
    places = [c for c in composites if c.root not in bound]
    texts = {c.text for c in places}
    places = sorted((c for c in places if not _inside_other(c, texts)), key=lambda c: c.text)
    if not places:
        return None
    cells = gast.Tuple(elts=[_cell(c) for c in places], ctx=gast.Load())
    args = gast.arguments(args=[], posonlyargs=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                          defaults=[])
    return gast.keyword(arg="state", value=gast.Lambda(args=args, body=cells))


_IN_PLACE = {"convert_setitem", "convert_append", "convert_pop", "convert_insert", "convert_extend",
             "convert_delitem"}


def changed_arguments(fn_node, stmts):
    """Parameters whose list/dict the statements change in place (`d[k] = v`, `xs.pop()`).

    The caller holds that object: a change to it is a result of the construct
    even where the name is not read again in the function.
    """
    params = getanno(fn_node, Anno.SCOPE).params
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
    return names & params


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
