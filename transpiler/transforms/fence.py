"""Reject what cannot be converted, early, with the user's line and a hint.

Runs first, on the function as written. What it lets through, the later
transforms handle.
"""
import gast

from .base import Transformer


class Fence(Transformer):
    def transform(self, fn_node):
        for stmt in fn_node.body:
            self.check(stmt)
        return fn_node

    def check(self, node):
        if isinstance(node, (gast.Yield, gast.YieldFrom)):
            raise self.ctx.error(node, "generators (`yield`) cannot be converted to a static graph",
                                 "return a list or a stacked tensor instead, or mark the function @not_to_static")
        if isinstance(node, (gast.Await, gast.AsyncFor, gast.AsyncWith, gast.AsyncFunctionDef)):
            raise self.ctx.error(node, "async code cannot be converted to a static graph",
                                 "call it outside the @to_static function")
        if isinstance(node, (gast.FunctionDef, gast.Lambda, gast.ClassDef)):
            return  # its own scope, fenced when converted
        for child in gast.iter_child_nodes(node):
            self.check(child)
