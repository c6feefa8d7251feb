"""Definedness: which local names are bound on every path reaching a point.

The transpiler needs it to know when a name modified in a branch or loop has no
value before it (it then starts as an `Undefined` placeholder), and to report a
read of a name that only some paths define.

Forward must-analysis over `cfg`: defined_after = (defined_before | bound) -
unbound, joined by intersection, starting from the parameters. A point no path
reaches (code after `return`) keeps the vacuous answer, every local name, which
is also what it hands on, so dead code never weakens what live paths know.
"""
from . import cfg
from .annos import Anno, setanno


def _intersection(values):
    return frozenset.intersection(*values)


def solve(graph, params, local_names):
    """(before, after) dicts node -> names bound on every path to that point."""
    everything = frozenset(local_names) | frozenset(params)
    reached = cfg.reachable(graph)

    def transfer(node, defined_before):
        if node not in reached:
            return everything
        return (defined_before | node.bound) - node.unbound

    return cfg.solve(graph, forward=True, transfer=transfer, meet=_intersection,
                     boundary=frozenset(params), top=everything)


def annotate(graph, params, local_names):
    """Write DEFINED_IN on every statement of `graph` (intersection over copies)."""
    before, _ = solve(graph, params, local_names)
    for stmt, spans in graph.spans.items():
        setanno(stmt, Anno.DEFINED_IN, _intersection([before[first] for first, _ in spans]))


def _union(values):
    return frozenset.union(*values) if values else frozenset()


def solve_maybe(graph, params):
    """(before, after) dicts node -> names bound on SOME path to that point."""
    def transfer(node, defined_before):
        return (defined_before | node.bound) - node.unbound

    return cfg.solve(graph, forward=True, transfer=transfer, meet=_union,
                     boundary=frozenset(params), top=frozenset())


def annotate_maybe(graph, params):
    """Write MAYBE_DEFINED_IN on every statement (union over copies)."""
    before, _ = solve_maybe(graph, params)
    for stmt, spans in graph.spans.items():
        setanno(stmt, Anno.MAYBE_DEFINED_IN, _union([before[first] for first, _ in spans]))
