"""`global` / `nonlocal` statements → one of each at the top of the function.

Python applies them to the whole function wherever they stand, but ControlFlow
moves the statements of a branch or loop body into a nested function: a
declaration left in there would declare the name in that function only (after
its prologue has bound the name: a SyntaxError), and the function itself would
treat the name as a local. Valid source never uses a name before declaring it,
so hoisting the declarations keeps their meaning.
"""
import gast

from .base import Transformer


class Declarations(Transformer):
    statements_only = True
    constructs = frozenset({"Global", "Nonlocal"})

    def transform(self, fn_node):
        self.found = {gast.Global: [], gast.Nonlocal: []}
        fn_node.body = self.visit_block(fn_node.body)
        hoisted = [kind(names=sorted(set(names))) for kind, names in self.found.items() if names]
        fn_node.body = [gast.copy_location(node, fn_node) for node in hoisted] + (fn_node.body or [gast.Pass()])
        return fn_node

    def visit_Global(self, node):
        self.found[type(node)].extend(node.names)
        return None

    visit_Nonlocal = visit_Global

    def visit_FunctionDef(self, node):     # a nested scope declares for itself
        return node

    visit_AsyncFunctionDef = visit_ClassDef = visit_Lambda = visit_FunctionDef

    def generic_visit(self, node):
        emptied = [f for f in ("body", "orelse", "finalbody") if getattr(node, f, None)]
        node = super().generic_visit(node)
        for field in emptied:
            if not getattr(node, field):
                setattr(node, field, [gast.Pass()])
        return node
