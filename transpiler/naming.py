"""Readable, deterministic names for generated code (`__true_fn_0`, `__break_1`)."""
import gast

from .analysis.scope import every_node


class Namer:
    """Hands out `__<kind>_<n>` names that clash with nothing in the function."""

    def __init__(self, fn_node):
        self.taken = set()
        for node in every_node(fn_node):
            if isinstance(node, gast.Name):
                self.taken.add(node.id)
            elif isinstance(node, gast.FunctionDef):
                self.taken.add(node.name)
        self.counters = {}

    def new(self, kind):
        n = self.counters.get(kind, 0)
        while f"__{kind}_{n}" in self.taken:
            n += 1
        self.counters[kind] = n + 1
        name = f"__{kind}_{n}"
        self.taken.add(name)
        return name

    def fixed(self, name):
        """`name` itself if free, else a numbered variant (for names such as `__return_value`)."""
        if name not in self.taken:
            self.taken.add(name)
            return name
        return self.new(name.strip("_"))
