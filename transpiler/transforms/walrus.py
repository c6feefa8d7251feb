"""Named expressions in the operands that and/or/ternaries evaluate only sometimes.

Expressions (later) makes those operands thunks (lambdas), where a walrus would bind
its name in the lambda, not in the function as Python does. So an and/or/ternary
whose later operand (or branch) holds a walrus becomes statements first, and the
names it binds are ordinary locals that ControlFlow carries like any other:

    if a and (m := f()) > 1: body     →   if a:
                                              if (m := f()) > 1: body
      (an `else` goes under both ifs; `or` nests in the else: `if a: body else: if b: body`)

    y = a and (m := f())             →   __walrus_0 = a
                                          if __walrus_0:
                                              __walrus_0 = (m := f())
                                          y = __walrus_0

    y = (m := f()) if c else g()      →   if c: __walrus_0 = (m := f())
                                          else: __walrus_0 = g()
                                          y = __walrus_0

Only where the and/or/ternary is the first thing its statement evaluates (an if's
or assert's test, the value of an assignment, return or expression statement), so
Python's order of evaluation holds. The operands keep Python's semantics: the value
of `a and b` is an operand, evaluated once, left to right, short-circuiting.
"""
import copy

import gast

from ..analysis.scope import own_scope
from .base import Transformer, load, located, store


def _binds(node):
    """Whether node binds a name with a walrus in the function's own scope (not inside a lambda)."""
    return any(isinstance(n, gast.NamedExpr) for n in own_scope([node], stop=(gast.Lambda,)))


def _needs_lowering(node):
    if isinstance(node, gast.BoolOp):
        return any(_binds(v) for v in node.values[1:]) or _needs_lowering(node.values[0])
    if isinstance(node, gast.IfExp):
        return _binds(node.body) or _binds(node.orelse) or _needs_lowering(node.test)
    return False


class WalrusOperands(Transformer):
    statements_only = True
    constructs = frozenset({"NamedExpr"})

    def visit_If(self, node):
        self.generic_visit(node)
        test = node.test
        if isinstance(test, gast.BoolOp) and _needs_lowering(test):
            first, rest = test.values[0], test.values[1:]
            rest_test = rest[0] if len(rest) == 1 else located(gast.BoolOp(op=test.op, values=rest), test)
            inner = located(gast.If(test=rest_test, body=node.body, orelse=node.orelse), node)
            if isinstance(test.op, gast.And):
                outer = gast.If(test=first, body=[inner], orelse=copy.deepcopy(node.orelse))
            else:
                inner.body = copy.deepcopy(node.body)
                outer = gast.If(test=first, body=node.body, orelse=[inner])
            return self.visit_If(located(outer, node))     # the rest of a chain may hold more to lower
        if _needs_lowering(test):
            before, node.test = self._lower(test)
            return before + [node]
        return node

    def visit_Assign(self, node):
        return self._lower_field(node, "value")

    def visit_Return(self, node):
        return self._lower_field(node, "value")

    def visit_Expr(self, node):
        return self._lower_field(node, "value")

    def visit_Assert(self, node):
        return self._lower_field(node, "test")

    def _lower_field(self, node, field):
        value = getattr(node, field)
        if value is None or not _needs_lowering(value):
            return node
        before, new = self._lower(value)
        setattr(node, field, new)
        return before + [node]

    def _lower(self, expr):
        """(statements, expression): the statements compute expr's value into a temporary, which the
        expression loads; walrus targets are bound by those statements, as locals."""
        if not _needs_lowering(expr):
            return [], expr
        temp = self.ctx.namer.new("walrus")
        if isinstance(expr, gast.BoolOp):
            stmts, first = self._lower(expr.values[0])
            stmts.append(located(gast.Assign(targets=[store(temp)], value=first, type_comment=None), expr))
            guard = stmts
            for value in expr.values[1:]:
                inner, value = self._lower(value)
                inner.append(located(gast.Assign(targets=[store(temp)], value=value, type_comment=None), expr))
                test = load(temp) if isinstance(expr.op, gast.And) else \
                    gast.UnaryOp(op=gast.Not(), operand=load(temp))
                branch = located(gast.If(test=test, body=inner, orelse=[]), expr)
                guard.append(branch)
                guard = inner       # a later operand runs only where this one did not decide the value
            return stmts, load(temp)
        stmts, test = self._lower(expr.test)
        body, body_value = self._lower(expr.body)
        orelse, orelse_value = self._lower(expr.orelse)
        body.append(located(gast.Assign(targets=[store(temp)], value=body_value, type_comment=None), expr))
        orelse.append(located(gast.Assign(targets=[store(temp)], value=orelse_value, type_comment=None), expr))
        stmts.append(located(gast.If(test=test, body=body, orelse=orelse), expr))
        return stmts, load(temp)
