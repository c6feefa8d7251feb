"""rt.cond and rt.while_loop: Python control flow on concrete values, graph ops on symbolic ones.

On concrete predicates they *are* Python `if`/`while` (so the transpiler's
converted code stays exact on Python values). On a traced predicate they trace
each body into a sub-block and record one `cond`/`while` op. Values that cross
the boundary are checked: same structure, same dtype (Python numbers are weak
and adopt the other side's dtype), shapes relaxed to -1 where they differ.

`branches` (cond), `loops` (while), `join` (the join of two traced values, and
making Python values traced ones), `carried` (places outside the locals carried
through an op); names with a leading underscore are private to this package.
"""
from ..undefined import Undefined
from .branches import cond
from .join import as_predicate, as_variable
from .loops import while_loop

__all__ = ["Undefined", "as_predicate", "as_variable", "cond", "while_loop"]
