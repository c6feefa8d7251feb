"""Expressions whose meaning depends on whether a value is a tensor.

    a and b        →  _jst.convert_logical_and(a, lambda: b)
    a or b         →  _jst.convert_logical_or(a, lambda: b)
    not a          →  _jst.convert_logical_not(a)
    a < f(b) < c   →  _jst.convert_logical_and(a < (__compare_0 := f(b)), lambda: __compare_0 < c)
    a if c else b  →  _jst.convert_ifexp(c, lambda: a, lambda: b)
    a in b         →  _jst.convert_in(a, b)        (`not in`: convert_not_in)
    [e for v in it if c]  →  _jst.convert_list_comp(it, lambda v: c, lambda v: e, False)

Right operands and branches are thunks, so short-circuiting holds for Python
and tensor operands alike (a tensor left operand gives a `cond` op). Applies
inside lambdas too (an expression has no scope of its own to respect).

An and/or (or chained comparison) marked `Anno.TRUTH_ONLY` (see `mark_truth_only`:
the test of an if/while/ternary/assert, marked by the transform that makes it a
test (ControlFlow, Jumps, Returns, or here), or a loop test another transform built,
such as `not __break_0 and x > 0`) is used only for its truth, so it becomes
`_jst.convert_test_and/or`, whose operands may differ in rank and dtype. In value
position (`y = a and b`) Python's operand semantics hold: the result is one of
the operands, and `name='y'` lets an error about operands that cannot merge name y.

A later operand (or branch) that binds a name with a walrus stays as written: WalrusOperands made
statements of those whose statement evaluates them first; a thunk would bind the name in a lambda.
"""
import gast

from ..analysis import Anno, getanno, setanno
from ..analysis.scope import own_scope
from .base import Transformer, is_jst_call, jst, load, located, store


def mark_truth_only(test):
    """Mark `test` (and the and/or/not/comparison chains inside it) as used only for its truth value."""
    if isinstance(test, (gast.BoolOp, gast.Compare)):
        setanno(test, Anno.TRUTH_ONLY, True)
        for value in getattr(test, "values", ()):
            mark_truth_only(value)
    elif isinstance(test, gast.UnaryOp) and isinstance(test.op, gast.Not):
        mark_truth_only(test.operand)
    return test


def python_valued(test):
    """Is `test` a Python bool whatever its operands are? `is`/`is not` cannot be overloaded, and
    `not`/`and`/`or` of such tests stay Python bools (operands holding no test of their own)."""
    if isinstance(test, gast.Compare):
        operands = [n for operand in [test.left, *test.comparators] for n in gast.walk(operand)]
        return all(isinstance(op, (gast.Is, gast.IsNot)) for op in test.ops) and not any(
            isinstance(n, (gast.BoolOp, gast.IfExp, gast.Compare, gast.UnaryOp, gast.NamedExpr)) for n in operands)
    if isinstance(test, gast.UnaryOp) and isinstance(test.op, gast.Not):
        return python_valued(test.operand)
    if isinstance(test, gast.BoolOp):
        return all(python_valued(v) for v in test.values)
    return isinstance(test, gast.Constant) and isinstance(test.value, bool)


def _membership(compare):
    """`a in b` / `a not in b` → `_jst.convert_in(a, b)` / `_jst.convert_not_in(a, b)`; other comparisons stay."""
    op = compare.ops[0]
    if isinstance(op, (gast.In, gast.NotIn)):
        name = "convert_in" if isinstance(op, gast.In) else "convert_not_in"
        return _call(name, [compare.left, compare.comparators[0]], compare)
    return compare


def _name_result(value, name):
    """An and/or/ternary's result is named after where it goes: errors speak of it, the Program shows it."""
    if is_jst_call(value) and value.func.attr in ("convert_logical_and", "convert_logical_or", "convert_ifexp") \
            and not any(k.arg == "name" for k in value.keywords):       # a folded return is named already
        value.keywords.append(gast.keyword(arg="name", value=gast.Constant(value=name, kind=None)))


def _thunk(expr):
    args = gast.arguments(args=[], posonlyargs=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                          defaults=[])
    return located(gast.Lambda(args=args, body=expr), expr)


def _call(op, args, origin):
    return located(gast.Call(func=jst(op), args=args, keywords=[]), origin)


def _binds_in(operands):
    """Whether a later operand binds a name with a walrus (not inside a lambda of its own). WalrusOperands
    made statements of those it could; one left (in a comprehension, a call's argument) stays Python's
    and/or/ternary, so the name is bound where Python binds it (a tensor operand is then a clear error)."""
    return any(isinstance(n, gast.NamedExpr) for n in own_scope(operands, stop=(gast.Lambda,)))


class Expressions(Transformer):
    constructs = frozenset({"BoolOp", "Not", "Compare", "IfExp", "ListComp"})

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        if _binds_in(node.values[1:]):
            return node
        op = "convert_logical_and" if isinstance(node.op, gast.And) else "convert_logical_or"
        if getanno(node, Anno.TRUTH_ONLY, False):
            op = "convert_test_and" if isinstance(node.op, gast.And) else "convert_test_or"
        first, *rest = node.values
        return _call(op, [first] + [_thunk(v) for v in rest], node)

    def visit_Assign(self, node):
        """`y = a and b` names y, so an error about operands that cannot merge speaks of y."""
        self.generic_visit(node)
        if len(node.targets) == 1 and isinstance(node.targets[0], gast.Name):
            _name_result(node.value, node.targets[0].id)
        return node

    def visit_If(self, node):
        """An `if` ControlFlow left as written (a Python-valued test) keeps its test as written too."""
        if not python_valued(node.test):
            return self.generic_visit(node)
        node.body = self.visit_block(node.body)
        node.orelse = self.visit_block(node.orelse)
        return node

    def visit_Assert(self, node):
        mark_truth_only(node.test)
        return self.generic_visit(node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, gast.Not):
            return _call("convert_logical_not", [node.operand], node)
        return node

    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) == 1:
            return _membership(node)
        pairs, left = [], node.left
        last = len(node.ops) - 1
        for i, (op, right) in enumerate(zip(node.ops, node.comparators)):
            if i < last and not isinstance(right, (gast.Name, gast.Constant)):
                # a middle operand is evaluated once, as in Python: bind it, then reuse the name
                temp = self.ctx.namer.new("compare")
                right_once = gast.NamedExpr(target=store(temp), value=right)
                pairs.append(_membership(located(gast.Compare(left=left, ops=[op], comparators=[right_once]), node)))
                left = load(temp)
            else:
                pairs.append(_membership(located(gast.Compare(left=left, ops=[op], comparators=[right]), node)))
                left = right
        first, *rest = pairs
        op = "convert_test_and" if getanno(node, Anno.TRUTH_ONLY, False) else "convert_logical_and"
        return _call(op, [first] + [_thunk(p) for p in rest], node)

    def visit_IfExp(self, node):
        mark_truth_only(node.test)
        self.generic_visit(node)
        if _binds_in([node.body, node.orelse]):
            return node
        call = _call("convert_ifexp", [node.test, _thunk(node.body), _thunk(node.orelse)], node)
        if getanno(node, Anno.RETURNED, False):     # a folded `if c: return a`: errors speak of the return value
            _name_result(call, "__return_value")
        return call

    def visit_ListComp(self, node):
        """`[e for v in it if c]` → `_jst.convert_list_comp(it, lambda v: c, lambda v: e, unpack)`: a tensor `c`
        keeps an item under a cond, as the loop with `if c: out.append(e)` does. One `for` with one `if`
        and a target of names; a walrus (which binds in the function) leaves it as written."""
        for gen in node.generators:
            for test in gen.ifs:
                mark_truth_only(test)
        self.generic_visit(node)
        if len(node.generators) != 1:
            return node
        gen = node.generators[0]
        targets = gen.target.elts if isinstance(gen.target, gast.Tuple) else [gen.target]
        if len(gen.ifs) != 1 or gen.is_async or not all(isinstance(t, gast.Name) for t in targets) or \
                any(isinstance(n, gast.NamedExpr) for n in gast.walk(node)):
            return node
        params = [gast.Name(id=t.id, ctx=gast.Param(), annotation=None, type_comment=None) for t in targets]

        def function(body):
            args = gast.arguments(args=params, posonlyargs=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                                  kwarg=None, defaults=[])
            return located(gast.Lambda(args=args, body=body), body)
        unpack = gast.Constant(value=isinstance(gen.target, gast.Tuple), kind=None)
        return _call("convert_list_comp", [gen.iter, function(gen.ifs[0]), function(node.elt), unpack], node)

    def visit_Call(self, node):
        if is_jst_call(node) and node.func.attr == "undefined":
            return node
        return self.generic_visit(node)
