"""Early `return` → one return at the end, so every branch and loop body is a plain block.

    def f(x):                         def f(x):
        if x.sum() > 0:                   __return_value = _jst.return_placeholder()
            z = x * 2                     if x.sum() > 0:
            return z          →               z = x * 2
        y = -x                                __return_value = z
        return y                          else:
                                              y = -x
                                              __return_value = y
                                          return __return_value

`if c: return a` followed by `return b` (or with `else: return b`) is first
folded into `return a if c else b`, exactly what Python computes, so a chain of
guarded returns needs no return variable at all. Statements after an `if` one
of whose branches always returns move into the other branch (as AutoGraph does),
which removes most guards. A return inside a loop sets `__return_flag`; a loop
with no `break`, `else` or `try` of its own exits on that flag itself, any other
loop gets a `break` (the break transform takes it from there). Code after such a
loop runs under `if not __return_flag:`, and a last `return y` there becomes
`return __return_value if __return_flag else y`.
"""
import copy

import gast

from ..analysis import Anno, getanno, hasanno, setanno
from ..analysis.scope import own_scope
from . import templates
from .base import Transformer, const, load, located, store
from .expressions import mark_truth_only
from .jumps import block_has


_COMPOUND_STATEMENTS = frozenset({"If", "For", "While", "Try", "TryStar", "With", "Match"})


def _contains_return(node):
    """Does node hold a `return` of the function being converted (not of a nested def)?"""
    return any(isinstance(n, gast.Return) for n in own_scope([node]))


def fold_returns(stmts):
    """`if c: return a` + `return b` (or `else: return b`) → `return a if c else b`, innermost first."""
    out = []
    for stmt in reversed(stmts):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(stmt, field, None)
            if block and not isinstance(stmt, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
                setattr(stmt, field, fold_returns(block))
        for clause in getattr(stmt, "handlers", []) + getattr(stmt, "cases", []):
            clause.body = fold_returns(clause.body)
        if isinstance(stmt, gast.If) and _single_return(stmt.body):
            other = stmt.orelse or out[:1]          # the `else`, or the statement after the `if`
            if _single_return(other):
                out = out if stmt.orelse else out[1:]
                value = gast.IfExp(test=stmt.test, body=_value(stmt.body[0]), orelse=_value(other[0]))
                setanno(value, Anno.RETURNED, True)
                stmt = located(gast.Return(value=value), stmt)
        out.insert(0, stmt)
    return out


def _single_return(stmts):
    return len(stmts) == 1 and isinstance(stmts[0], gast.Return)


def _value(ret):
    return ret.value if ret.value is not None else located(const(None), ret)


def _always_returns(stmts):
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, (gast.Return, gast.Raise)):
        return True
    if isinstance(last, gast.If):
        return _always_returns(last.body) and _always_returns(last.orelse)
    if isinstance(last, (gast.While, gast.For)) and not block_has(last.body, gast.Break):
        # leaves only through its `else` (or a return/raise inside): Python compiles away what follows
        forever = isinstance(last, gast.While) and isinstance(last.test, gast.Constant) and bool(last.test.value)
        return forever or _always_returns(last.orelse)
    return False


class Returns(Transformer):
    @classmethod
    def applies(cls, fn_node, present):
        """A return anywhere but as the last statement (an `if` holding one folds too)."""
        if "Return" not in present:
            return False
        if not present.isdisjoint(_COMPOUND_STATEMENTS):
            return True
        return any(type(stmt).__name__ == "Return" for stmt in fn_node.body[:-1])

    def transform(self, fn_node):
        body = fn_node.body = fold_returns(fn_node.body)
        if not any(_contains_return(s) for s in body[:-1]) and not any(
                _contains_return(s) for s in body[-1:] if not isinstance(s, gast.Return)):
            return fn_node
        self.value = self.ctx.namer.fixed("__return_value")
        self.flag = self.ctx.namer.fixed("__return_flag")
        self.flag_used = False
        if not _always_returns(body):
            body = body + [located(gast.Return(value=None), body[-1])]
        normalized = self.normalize(body)
        self.flag_every_return = False
        body = self.lower(copy.deepcopy(normalized), top=True)
        if self.flag_used:     # some code runs under `if not __return_flag`: every return must set it
            self.flag_every_return = True
            body = self.lower(normalized, top=True)
        if self.flag_used:
            (start,) = templates.replace("value, flag = _jst.return_placeholder(), False", value=self.value,
                                         flag=self.flag)
        else:
            (start,) = templates.replace("value = _jst.return_placeholder()", value=self.value)
        located(start, fn_node.body[0] if fn_node.body else fn_node)
        if not (body and isinstance(body[-1], gast.Return)):
            body.append(located(gast.Return(value=load(self.value)), body[-1] if body else fn_node))
        fn_node.body = [start] + body
        return fn_node

    def normalize(self, stmts):
        """Move what follows an if-with-one-returning-branch into the other branch."""
        out = []
        for i, stmt in enumerate(stmts):
            if isinstance(stmt, gast.If):
                stmt.body = self.normalize(stmt.body)
                stmt.orelse = self.normalize(stmt.orelse)
                rest = stmts[i + 1:]
                if rest and _always_returns(stmt.body) and not _always_returns(stmt.orelse):
                    stmt.orelse = self.normalize(stmt.orelse + rest)
                    return out + [stmt]
                if rest and _always_returns(stmt.orelse) and not _always_returns(stmt.body):
                    stmt.body = self.normalize(stmt.body + rest)
                    return out + [stmt]
                if rest and _always_returns(stmt.body) and _always_returns(stmt.orelse):
                    return out + [stmt]
            elif isinstance(stmt, (gast.While, gast.For)):
                stmt.body = self.normalize(stmt.body)
            out.append(stmt)
            if isinstance(stmt, gast.Return):
                return out
        return out

    def lower(self, stmts, loop=None, in_finally=False, top=False):
        """`loop`: the innermost loop around stmts; `top`: stmts is the function's own body."""
        out = []
        for i, stmt in enumerate(stmts):
            if isinstance(stmt, gast.Return):
                out.extend(self.lowered_return(stmt, loop))
                return out
            if not _contains_return(stmt):
                out.append(stmt)
                continue
            if isinstance(stmt, gast.If):
                stmt.body = self.lower(stmt.body, loop, in_finally)
                stmt.orelse = self.lower(stmt.orelse, loop, in_finally)
                if _always_returns_lowered(stmt):
                    out.append(stmt)
                    return out
            elif isinstance(stmt, (gast.While, gast.For)):
                if not in_finally and _may_exit_on_flag(stmt):
                    self.exit_on_flag(stmt)
                stmt.body = self.lower(stmt.body, stmt, in_finally)
                stmt.orelse = self.lower(stmt.orelse, loop, in_finally)
            else:   # try / with / match: lower every statement list inside
                for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                    block = getattr(stmt, field, None)
                    if field == "finalbody" and loop is not None and block:
                        block = self.cancel_on_loop_jump(block)
                    if isinstance(block, list) and block and isinstance(block[0], gast.stmt):
                        setattr(stmt, field, self.lower(block, loop, in_finally or field == "finalbody"))
                    elif isinstance(block, list):
                        for handler in block:
                            handler.body = self.lower(handler.body, loop, in_finally)
            out.append(stmt)
            rest = stmts[i + 1:]
            breaks = loop is not None and not hasanno(loop, Anno.EXIT_FLAG)
            if not rest and not (breaks and isinstance(stmt, (gast.While, gast.For))):
                return out
            self.flag_used = True
            if breaks:
                guard = gast.If(test=load(self.flag), body=[gast.Break()], orelse=[])
                out.append(_locate(guard, stmt))
                out.extend(self.lower(rest, loop, in_finally))
            elif top and _single_return(rest):    # the function's last return: one expression
                value = gast.IfExp(test=load(self.flag), body=load(self.value), orelse=_value(rest[0]))
                setanno(value, Anno.RETURNED, True)
                out.append(_locate(gast.Return(value=value), rest[0]))
            else:
                guard = gast.If(test=gast.UnaryOp(op=gast.Not(), operand=load(self.flag)),
                                body=self.lower(rest, loop, in_finally), orelse=[])
                out.append(_locate(guard, stmt))
            return out
        return out

    def exit_on_flag(self, loop):
        """The loop stops once `__return_flag` is set: no break, no flag of its own."""
        setanno(loop, Anno.EXIT_FLAG, self.flag)
        if isinstance(loop, gast.While):
            test = gast.BoolOp(op=gast.And(), values=[gast.UnaryOp(op=gast.Not(), operand=load(self.flag)),
                                                      loop.test])
            loop.test = located(mark_truth_only(test), loop.test)

    def cancel_on_loop_jump(self, stmts):
        """A `break`/`continue` in `finally` discards a pending return: clear the flag before it."""
        out = []
        for stmt in stmts:
            if isinstance(stmt, (gast.Break, gast.Continue)):
                self.flag_used = True
                out.append(_locate(gast.Assign(targets=[store(self.flag)], value=const(False), type_comment=None),
                                   stmt))
            elif not isinstance(stmt, (gast.While, gast.For, gast.FunctionDef, gast.ClassDef)):
                for field in ("body", "orelse", "finalbody"):
                    if getattr(stmt, field, None):
                        setattr(stmt, field, self.cancel_on_loop_jump(getattr(stmt, field)))
                for clause in getattr(stmt, "handlers", []) + getattr(stmt, "cases", []):
                    clause.body = self.cancel_on_loop_jump(clause.body)
            out.append(stmt)
        return out

    def lowered_return(self, node, loop):
        stmts = [gast.Assign(targets=[store(self.value)], value=_value(node), type_comment=None)]
        if loop is not None or self.flag_every_return:
            self.flag_used = True
            stmts.append(gast.Assign(targets=[store(self.flag)], value=const(True), type_comment=None))
        if loop is not None and not hasanno(loop, Anno.EXIT_FLAG):
            stmts.append(gast.Break())
        for stmt in stmts:
            _locate(stmt, node)
        setanno(stmts[0], Anno.RETURN_VALUE, True)
        return stmts


def _may_exit_on_flag(loop):
    """A loop with no break, `else` or `try` of its own can stop on the return flag alone (a `finally`
    could clear the flag and a break needs its own; a loop in a `finally` may start with the flag set)."""
    return (not loop.orelse and not block_has(loop.body, gast.Break)
            and not any(isinstance(n, (gast.Try, gast.TryStar)) for n in own_scope(loop.body)))


def _always_returns_lowered(if_node):
    """After lowering: does every path through this if assign the return value (and not fall through)?"""
    def ends(stmts):
        if not stmts:
            return False
        last = stmts[-1]
        if getanno(last, Anno.RETURN_VALUE, False) or isinstance(last, gast.Raise):
            return True
        if isinstance(last, (gast.Break, gast.Assign)) and any(getanno(s, Anno.RETURN_VALUE, False)
                                                               for s in stmts[-3:]):
            return True
        if isinstance(last, gast.If):
            return ends(last.body) and ends(last.orelse)
        return False
    return ends(if_node.body) and ends(if_node.orelse)


def _locate(node, origin):
    return located(node, origin)
