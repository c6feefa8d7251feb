"""Early `return` → one return at the end, so every branch and loop body is a plain block.

    def f(x):                         def f(x):
        if x.sum() > 0:                   __return_value = _jst.return_placeholder()
            return x          →           if x.sum() > 0:
        y = -x                                __return_value = x
        return y                          else:
                                              y = -x
                                              __return_value = y
                                          return __return_value

The placeholder is an Undefined that may become zeros where a graph needs a value
(`operators.return_placeholder`). Statements after an `if` one of whose branches
always returns move into the other branch (as AutoGraph does), which removes most
guards. A return inside a loop sets `__return_flag` and breaks (the break transform
takes it from there); code after such a loop runs under `if not __return_flag:`,
and then every return sets the flag.
"""
import copy

import gast

from .base import Transformer, const, jst, load, located, store


def _contains_return(node):
    """Does node hold a `return` of the function being converted (not of a nested def)?"""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, gast.Return):
            return True
        if isinstance(n, (gast.FunctionDef, gast.Lambda, gast.ClassDef)):
            continue
        stack.extend(gast.iter_child_nodes(n))
    return False


def _always_returns(stmts):
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, (gast.Return, gast.Raise)):
        return True
    if isinstance(last, gast.If):
        return _always_returns(last.body) and _always_returns(last.orelse)
    return False


class Returns(Transformer):
    def transform(self, fn_node):
        body = fn_node.body
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
        body = self.lower(copy.deepcopy(normalized), in_loop=False)
        if self.flag_used:     # some code runs under `if not __return_flag`: every return must set it
            self.flag_every_return = True
            body = self.lower(normalized, in_loop=False)
        placeholder = gast.Call(func=jst("return_placeholder"), args=[], keywords=[])
        prologue = [gast.Assign(targets=[store(self.value)], value=placeholder, type_comment=None)]
        if self.flag_used:
            prologue.append(gast.Assign(targets=[store(self.flag)], value=const(False), type_comment=None))
        for stmt in prologue:
            located(stmt, fn_node.body[0] if fn_node.body else fn_node)
        ret = located(gast.Return(value=load(self.value)), body[-1] if body else fn_node)
        fn_node.body = prologue + body + [ret]
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

    def lower(self, stmts, in_loop):
        out = []
        for i, stmt in enumerate(stmts):
            if isinstance(stmt, gast.Return):
                out.extend(self.lowered_return(stmt, in_loop))
                return out
            if not _contains_return(stmt):
                out.append(stmt)
                continue
            if isinstance(stmt, gast.If):
                stmt.body = self.lower(stmt.body, in_loop)
                stmt.orelse = self.lower(stmt.orelse, in_loop)
                if _always_returns_lowered(stmt):
                    out.append(stmt)
                    return out
            elif isinstance(stmt, (gast.While, gast.For)):
                stmt.body = self.lower(stmt.body, in_loop=True)
                stmt.orelse = self.lower(stmt.orelse, in_loop)
            else:   # try / with / match: lower every statement list inside
                for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                    block = getattr(stmt, field, None)
                    if field == "finalbody" and in_loop and block:
                        block = self.cancel_on_loop_jump(block)
                    if isinstance(block, list) and block and isinstance(block[0], gast.stmt):
                        setattr(stmt, field, self.lower(block, in_loop))
                    elif isinstance(block, list):
                        for handler in block:
                            handler.body = self.lower(handler.body, in_loop)
            out.append(stmt)
            rest = stmts[i + 1:]
            leaves_loop = in_loop and isinstance(stmt, (gast.While, gast.For))
            if not rest and not leaves_loop:
                return out
            self.flag_used = True
            if in_loop:
                guard = gast.If(test=load(self.flag), body=[gast.Break()], orelse=[])
                out.append(_locate(guard, stmt))
                out.extend(self.lower(rest, in_loop))
            else:
                guard = gast.If(test=gast.UnaryOp(op=gast.Not(), operand=load(self.flag)),
                                body=self.lower(rest, in_loop), orelse=[])
                out.append(_locate(guard, stmt))
            return out
        return out

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

    def lowered_return(self, node, in_loop):
        value = node.value if node.value is not None else const(None)
        stmts = [gast.Assign(targets=[store(self.value)], value=value, type_comment=None)]
        if in_loop or self.flag_every_return:
            self.flag_used = True
            stmts.append(gast.Assign(targets=[store(self.flag)], value=const(True), type_comment=None))
        if in_loop:
            stmts.append(gast.Break())
        for stmt in stmts:
            _locate(stmt, node)
        setattr(stmts[0], "_dy2s_return", True)
        return stmts


def _always_returns_lowered(if_node):
    """After lowering: does every path through this if assign the return value (and not fall through)?"""
    def ends(stmts):
        if not stmts:
            return False
        last = stmts[-1]
        if getattr(last, "_dy2s_return", False) or isinstance(last, gast.Raise):
            return True
        if isinstance(last, (gast.Break, gast.Assign)) and any(getattr(s, "_dy2s_return", False) for s in stmts[-3:]):
            return True
        if isinstance(last, gast.If):
            return ends(last.body) and ends(last.orelse)
        return False
    return ends(if_node.body) and ends(if_node.orelse)


def _locate(node, origin):
    return located(node, origin)
