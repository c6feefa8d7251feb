"""A `finally` that jumps (`return`, `break`, `continue`) discards the exception in flight.

    try:                              __pending_0 = None
        y = risky(x)                  try:
    finally:                  →           try:
        return x + 1                          y = risky(x)
                                          except BaseException as __exc_0:
                                              __pending_0 = __exc_0
                                      finally:
                                          return x + 1
                                      if __pending_0 is not None:
                                          raise __pending_0

Returns and jumps are lowered to flags later, so a `return` in `finally` no
longer leaves the function by itself; here the exception is held until the
`finally` has run, and raised again only when the `finally` did not jump:
the code after the `try` runs under the jump's guard, like any code after a
jump. A try whose `finally` does not jump is left as it is.
"""
import gast

from ..analysis.scope import NESTED_SCOPES, own_scope
from . import templates
from .base import Transformer, located

_HOLD = '''
pending = None
try:
    body
except BaseException as caught:
    pending = caught
finally:
    finalbody
if pending is not None:
    raise pending
'''


def jumps_out(stmts):
    """Does this block hold a return, or a break/continue of a loop outside it (a loop's `else` is outside it)?"""
    if any(isinstance(node, gast.Return) for node in own_scope(stmts)):
        return True
    loops = (gast.For, gast.While)
    return any(isinstance(node, (gast.Break, gast.Continue)) or (isinstance(node, loops) and jumps_out(node.orelse))
               for node in own_scope(stmts, stop=NESTED_SCOPES + loops))


class FinallyJumps(Transformer):
    statements_only = True
    constructs = frozenset({"Try", "TryStar"})

    def visit_Try(self, node):
        self.generic_visit(node)
        if not node.finalbody or not jumps_out(node.finalbody):
            return node
        namer = self.ctx.namer
        pending, caught = namer.new("pending"), namer.new("exc")
        body = node.body
        if node.handlers or node.orelse:
            body = [type(node)(body=node.body, handlers=node.handlers, orelse=node.orelse, finalbody=[])]
        start, held, again = templates.replace(_HOLD, pending=pending, caught=caught, body=body,
                                               finalbody=node.finalbody)
        return [located(start, node), located(held, node), located(again, node.finalbody[-1])]

    visit_TryStar = visit_Try
