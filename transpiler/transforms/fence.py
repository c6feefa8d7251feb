"""Reject what cannot be converted, early, with the user's line and a hint.

Runs first, on the function as written. What it lets through, the later
transforms handle.
"""
import gast

from .base import Transformer, own_scope

_LOOP_OR_BRANCH = (gast.For, gast.While, gast.If)


class Fence(Transformer):
    def transform(self, fn_node):
        self.declared = set()
        for node in own_scope(fn_node):
            if isinstance(node, (gast.Global, gast.Nonlocal)):
                self.declared.update(node.names)
        self.compound = []
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
        if isinstance(node, (gast.Assign, gast.AugAssign, gast.AnnAssign)) and self.compound and self.declared:
            targets = node.targets if isinstance(node, gast.Assign) else [node.target]
            for target in targets:
                for name in gast.walk(target):
                    if isinstance(name, gast.Name) and name.id in self.declared:
                        kind = type(self.compound[-1]).__name__.lower()
                        raise self.ctx.error(
                            node, f"'{name.id}' is declared global/nonlocal and rebound inside an `{kind}` body; "
                                  "converted bodies become functions, so the rebinding cannot be kept",
                            f"return the new value from the function instead of rebinding '{name.id}'")
        is_compound = isinstance(node, _LOOP_OR_BRANCH)
        if is_compound:
            self.compound.append(node)
        for child in gast.iter_child_nodes(node):
            self.check(child)
        if is_compound:
            self.compound.pop()

