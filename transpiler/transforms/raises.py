"""`raise` → `_jst.convert_raise`, so a raise under a tensor condition becomes a `raise` op;
f-strings given to `raise`, `assert` and `print` → `_jst.convert_fstring`, formatted when the
Program runs.

    if x.sum() > 1:                            def __true_fn_0():
        raise ValueError(f"x is {x}")    →         _jst.convert_raise(ValueError(
                                                       _jst.convert_fstring(('x is ', ''), (x,), (-1,), ('',))))

Runs after ControlFlow, so the analyses saw a real `raise` (a path that ends). On Python
values, and wherever tracing has not entered a branch or loop body, `convert_raise` raises
as Python does; inside one it records the op. An f-string argument of the exception is
passed in pieces, so tensor values in it are formatted when the Program runs; so are an
`assert`'s f-string message and an f-string argument of the builtin `print`
(`print(f"loss {loss}")` prints the value on each run, not the traced Variable). A bare
`raise` stays a Python statement. A `try` body runs under `_jst.catching(...)`: a raise
there, or in a function it calls (converted on its own), that one of its handlers catches
is a Python raise, since a graph cannot catch at run time; other raises there are ops.
"""
import builtins

import gast

from ..analysis import Anno, getanno
from . import templates
from .base import Transformer, const, jst, located


def _fstring(node):
    """`f"a{x!r:>4}b"` → `_jst.convert_fstring(('a', 'b'), (x,), (114,), ('>4',))`."""
    literals, values, conversions, specs = [""], [], [], []
    for part in node.values:
        if isinstance(part, gast.FormattedValue):
            values.append(part.value)
            conversions.append(const(part.conversion if part.conversion is not None else -1))
            specs.append(part.format_spec if part.format_spec is not None else const(""))
            literals.append("")
        else:
            literals[-1] += part.value
    args = [gast.Tuple(elts=[const(s) for s in literals], ctx=gast.Load())] + [
        gast.Tuple(elts=list(items), ctx=gast.Load()) for items in (values, conversions, specs)]
    return located(gast.Call(func=jst("convert_fstring"), args=args, keywords=[]), node)


class Raises(Transformer):
    constructs = frozenset({"Raise", "Try", "TryStar", "JoinedStr"})   # f-strings: in print/assert/raise

    def transform(self, fn_node):
        scope = getanno(fn_node, Anno.SCOPE)
        found, value = self.ctx.resolve("print")
        self.builtin_print = "print" not in (scope.params | scope.modified) and found and value is builtins.print
        return super().transform(fn_node)

    def visit_Call(self, node):
        self.generic_visit(node)
        if self.builtin_print and isinstance(node.func, gast.Name) and node.func.id == "print":
            node.args = [_fstring(a) if isinstance(a, gast.JoinedStr) else a for a in node.args]
        return node

    def visit_Try(self, node):
        if not node.handlers:
            return self.generic_visit(node)
        if not isinstance(node, gast.Try):      # `except*` receives groups: its body stays as written
            for field in ("handlers", "orelse", "finalbody"):
                setattr(node, field, [self.visit(n) for n in getattr(node, field)])
            return node
        self.generic_visit(node)
        types = [h.type if h.type is not None else const(None) for h in node.handlers]
        (scope,) = templates.replace("with _jst.catching(lambda: (types,)):\n    body", types=types, body=node.body)
        node.body = [located(scope, node)]
        return node

    visit_TryStar = visit_Try

    def visit_Lambda(self, node):
        return node

    def visit_Assert(self, node):
        self.generic_visit(node)
        if isinstance(node.msg, gast.JoinedStr):
            node.msg = _fstring(node.msg)
        return node

    def visit_Raise(self, node):
        if node.exc is None:
            return node
        exc = node.exc
        if isinstance(exc, gast.Call):
            exc.args = [_fstring(a) if isinstance(a, gast.JoinedStr) else a for a in exc.args]
        args = [exc] + ([node.cause] if node.cause is not None else [])
        call = gast.Call(func=jst("convert_raise"), args=args, keywords=[])
        return located(gast.Expr(value=call), node)
