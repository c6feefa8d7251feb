"""Reject what cannot be converted, early, with the user's line and a hint.

Runs first, on the function as written. What it lets through, the later
transforms handle.
"""
import gast

from ..analysis.scope import own_scope
from .base import Transformer


class Fence(Transformer):
    constructs = frozenset({"Yield", "YieldFrom", "Await", "AsyncFor", "AsyncWith", "AsyncFunctionDef"})

    def transform(self, fn_node):
        for node in own_scope(fn_node.body):    # a nested def is fenced when it is converted itself
            self.check(node)
        return fn_node

    def check(self, node):
        if isinstance(node, (gast.Yield, gast.YieldFrom)):
            raise self.ctx.error(node, "generators (`yield`) cannot be converted to a static graph",
                                 "return a list or a stacked tensor instead, or mark the function @not_to_static")
        if isinstance(node, (gast.Await, gast.AsyncFor, gast.AsyncWith, gast.AsyncFunctionDef)):
            raise self.ctx.error(node, "async code cannot be converted to a static graph",
                                 "call it outside the @to_static function")
