"""`break` and `continue` → flag variables, so loop bodies are plain blocks.

    while x.sum() > 1:                     __break_0 = False
        if x.max() > 9:                    while not __break_0 and x.sum() > 1:
            break                  →           if x.max() > 9:
        x = x / 2                                  __break_0 = True
                                               if not __break_0:
                                                   x = x / 2

`continue` sets a flag reset at the top of each iteration; the statements after
it run under `if not __continue_0:`. A `for` loop keeps its break flag as an
extra exit test (`Anno.EXIT_FLAG`, which the loop transform reads). `while/else`
and `for/else` become `if not __break_0: <else>` after the loop. A guard that
only sets flags is one expression: `if c: break` → `__break_0 = True if c else __break_0`.
A `while` test that binds a name (`while (n := n - 1) > 0:`) becomes a flag computed
before the loop and at the end of each iteration.
"""
import copy

import gast

from ..analysis import Anno, setanno
from ..analysis.scope import NESTED_SCOPES, own_scope
from .base import Transformer, const, load, located, store
from .expressions import mark_truth_only


def _has(node, kind):
    """Does `node` contain `kind` (Break/Continue) belonging to the current loop?"""
    return any(isinstance(n, kind) for n in own_scope(gast.iter_child_nodes(node),
                                                      stop=NESTED_SCOPES + (gast.While, gast.For)))


def block_has(stmts, kind):
    return any(isinstance(s, kind) or _has(s, kind) for s in stmts)


def _not(name):
    return gast.UnaryOp(op=gast.Not(), operand=load(name))


def _assign(name, value, origin):
    return located(gast.Assign(targets=[store(name)], value=const(value), type_comment=None), origin)


class _Lowering:
    """Replace each `kind` statement by `flag = True` and guard what follows it.

    In a `finally`, the jump also discards the jumps pending when it started:
    `overrides` are those jumps' flags, set back to False there.
    """

    def __init__(self, kind, flag, overrides=()):
        self.kind, self.flag, self.overrides = kind, flag, overrides

    def lower(self, stmts, in_finally=False):
        out = []
        for i, stmt in enumerate(stmts):
            if isinstance(stmt, self.kind):
                if in_finally:
                    out.extend(_assign(flag, False, stmt) for flag in self.overrides)
                out.append(_assign(self.flag, True, stmt))
                return out
            if not _has(stmt, self.kind):
                out.append(stmt)
                continue
            for field in ("body", "orelse", "finalbody"):
                block = getattr(stmt, field, None)
                if block:
                    setattr(stmt, field, self.lower(block, in_finally or field == "finalbody"))
            for handler in getattr(stmt, "handlers", []) or []:
                handler.body = self.lower(handler.body, in_finally)
            out.append(self.one_expression(stmt))
            rest = stmts[i + 1:]
            if rest:
                guard = gast.If(test=_not(self.flag), body=self.lower(rest), orelse=[])
                out.append(located(guard, rest[0]))
            return out
        return out

    def one_expression(self, stmt):
        """`if c: flag = True` → `flag = True if c else flag`: what Python computes, in one line."""
        if not (isinstance(stmt, gast.If) and not stmt.orelse and len(stmt.body) == 1):
            return stmt
        only = stmt.body[0]
        if not (isinstance(only, gast.Assign) and isinstance(only.targets[0], gast.Name)
                and only.targets[0].id == self.flag):
            return stmt
        value = gast.IfExp(test=stmt.test, body=only.value, orelse=load(self.flag))
        return located(gast.Assign(targets=[store(self.flag)], value=value, type_comment=None), stmt)


class Jumps(Transformer):
    statements_only = True
    constructs = frozenset({"While", "For"})

    def visit_While(self, node):
        return self._loop(node)

    def visit_For(self, node):
        return self._loop(node)

    def _loop(self, node):
        if isinstance(node, gast.While):
            mark_truth_only(node.test)               # a loop test is used only for its truth
        binding_test = _binding_test(node, self.ctx.namer)
        node.body = self.visit_block(node.body)      # inner loops first
        node.orelse = self.visit_block(node.orelse)
        before, after = [], []
        has_break = block_has(node.body, gast.Break)
        break_flag = self.ctx.namer.new("break") if has_break else None
        if binding_test:
            before.append(binding_test[0])
        if block_has(node.body, gast.Continue):
            flag = self.ctx.namer.new("continue")
            lowering = _Lowering(gast.Continue, flag, overrides=[break_flag] if has_break else [])
            node.body = [_assign(flag, False, node)] + lowering.lower(node.body)
        if has_break:
            flag = break_flag
            node.body = _Lowering(gast.Break, flag, overrides=[]).lower(node.body)
            before.append(_assign(flag, False, node))
            if isinstance(node, gast.While):
                test = gast.BoolOp(op=gast.And(), values=[_not(flag), node.test])
                node.test = located(mark_truth_only(test), node.test)
            else:
                setanno(node, Anno.EXIT_FLAG, flag)
            if node.orelse:
                after.append(located(gast.If(test=_not(flag), body=node.orelse, orelse=[]), node.orelse[0]))
                node.orelse = []
        elif node.orelse:
            after, node.orelse = node.orelse, []
        if binding_test:
            again = binding_test[1]
            if has_break:           # Python does not evaluate the test after a break
                again = located(gast.If(test=_not(break_flag), body=[again], orelse=[]), again)
            node.body.append(again)
        return before + [node] + after


def _binding_test(node, namer):
    """`while (n := n - 1) > 0:` — a loop's condition function returns only its truth, so a test that binds
    a name (a walrus outside any lambda) becomes a flag: (its first computation before the loop, its
    computation at the end of each iteration); the loop tests the flag. None for other loops."""
    if not isinstance(node, gast.While) or \
            not any(isinstance(n, gast.NamedExpr) for n in own_scope([node.test], stop=(gast.Lambda,))):
        return None
    flag = namer.new("test")
    first, again = (located(gast.Assign(targets=[store(flag)], value=copy.deepcopy(node.test), type_comment=None),
                            node.test) for _ in range(2))
    node.test = located(mark_truth_only(load(flag)), node.test)
    return first, again


def _binds_names(test):
    """Whether a loop test binds a name (a walrus outside any lambda)."""
    return any(isinstance(n, gast.NamedExpr) for n in own_scope([test], stop=(gast.Lambda,)))
