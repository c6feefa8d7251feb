"""`break` and `continue` → flag variables, so loop bodies are plain blocks.

    while x.sum() > 1:                     __break_0 = False
        if x.max() > 9:                    while not __break_0 and x.sum() > 1:
            break                  →           if x.max() > 9:
        x = x / 2                                  __break_0 = True
                                               if not __break_0:
                                                   x = x / 2

`continue` sets a flag reset at the top of each iteration; the statements after
it run under `if not __continue_0:`. A `for` loop keeps its break flag as an
extra exit test (the loop transform reads it). `while/else` and `for/else`
become `if not __break_0: <else>` after the loop.
"""
import gast

from ..analysis.cfg import EXTRA_TEST_READS
from .base import Transformer, const, load, located, store
from .expressions import mark_truth_only

BREAK_FLAG = "_dy2s_break_flag"


def _has(node, kind):
    """Does `node` contain `kind` (Break/Continue) belonging to the current loop?"""
    stack = list(gast.iter_child_nodes(node))
    while stack:
        n = stack.pop()
        if isinstance(n, kind):
            return True
        if isinstance(n, (gast.While, gast.For, gast.FunctionDef, gast.Lambda, gast.ClassDef)):
            continue
        stack.extend(gast.iter_child_nodes(n))
    return False


def _block_has(stmts, kind):
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
            out.append(stmt)
            rest = stmts[i + 1:]
            if rest:
                guard = gast.If(test=_not(self.flag), body=self.lower(rest), orelse=[])
                out.append(located(guard, rest[0]))
            return out
        return out


class Jumps(Transformer):
    def visit_While(self, node):
        return self._loop(node)

    def visit_For(self, node):
        return self._loop(node)

    def _loop(self, node):
        if isinstance(node, gast.While):
            mark_truth_only(node.test)               # a loop test is used only for its truth
        node.body = self.visit_block(node.body)      # inner loops first
        node.orelse = self.visit_block(node.orelse)
        before, after = [], []
        has_break = _block_has(node.body, gast.Break)
        break_flag = self.ctx.namer.new("break") if has_break else None
        if _block_has(node.body, gast.Continue):
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
                setattr(node, BREAK_FLAG, flag)
                setattr(node, EXTRA_TEST_READS, (flag,))
            if node.orelse:
                after.append(located(gast.If(test=_not(flag), body=node.orelse, orelse=[]), node.orelse[0]))
                node.orelse = []
        elif node.orelse:
            after, node.orelse = node.orelse, []
        return before + [node] + after
