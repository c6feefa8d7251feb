"""Expressions whose meaning depends on whether a value is a tensor.

    a and b        →  _jst.convert_logical_and(a, lambda: b)
    a or b         →  _jst.convert_logical_or(a, lambda: b)
    not a          →  _jst.convert_logical_not(a)
    a < f(b) < c   →  _jst.convert_logical_and(a < (__compare_0 := f(b)), lambda: __compare_0 < c)
    a if c else b  →  _jst.convert_ifexp(c, lambda: a, lambda: b)

Right operands and branches are thunks, so short-circuiting holds for Python
and tensor operands alike (a tensor left operand gives a `cond` op). Applies
inside lambdas too (an expression has no scope of its own to respect).

A BoolOp marked `TRUTH_ONLY` (see `mark_truth_only`: a loop test that another
transform built, such as `not __break_0 and x > 0`) is used only for its truth,
so it becomes `_jst.convert_test_and/or`, whose operands may differ in rank.
"""
import gast

from .base import Transformer, is_jst_call, jst, load, located, store


TRUTH_ONLY = "_dy2s_truth_only"


def mark_truth_only(test):
    """Mark `test` (and the and/or inside it) as used only for its truth value."""
    if isinstance(test, gast.BoolOp):
        setattr(test, TRUTH_ONLY, True)
        for value in test.values:
            mark_truth_only(value)
    return test


def _thunk(expr):
    args = gast.arguments(args=[], posonlyargs=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                          defaults=[])
    return located(gast.Lambda(args=args, body=expr), expr)


def _call(op, args, origin):
    return located(gast.Call(func=jst(op), args=args, keywords=[]), origin)


class Expressions(Transformer):
    def visit_BoolOp(self, node):
        self.generic_visit(node)
        op = "convert_logical_and" if isinstance(node.op, gast.And) else "convert_logical_or"
        if getattr(node, TRUTH_ONLY, False):
            op = "convert_test_and" if isinstance(node.op, gast.And) else "convert_test_or"
        first, *rest = node.values
        return _call(op, [first] + [_thunk(v) for v in rest], node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, gast.Not):
            return _call("convert_logical_not", [node.operand], node)
        return node

    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) == 1:
            return node
        pairs, left = [], node.left
        last = len(node.ops) - 1
        for i, (op, right) in enumerate(zip(node.ops, node.comparators)):
            if i < last and not isinstance(right, (gast.Name, gast.Constant)):
                # a middle operand is evaluated once, as in Python: bind it, then reuse the name
                temp = self.ctx.namer.new("compare")
                right_once = gast.NamedExpr(target=store(temp), value=right)
                pairs.append(located(gast.Compare(left=left, ops=[op], comparators=[right_once]), node))
                left = load(temp)
            else:
                pairs.append(located(gast.Compare(left=left, ops=[op], comparators=[right]), node))
                left = right
        first, *rest = pairs
        return _call("convert_logical_and", [first] + [_thunk(p) for p in rest], node)

    def visit_IfExp(self, node):
        self.generic_visit(node)
        return _call("convert_ifexp", [node.test, _thunk(node.body), _thunk(node.orelse)], node)

    def visit_Call(self, node):
        if is_jst_call(node) and node.func.attr == "undefined":
            return node
        return self.generic_visit(node)
