"""Liveness: which local names may still be read after a point.

A name modified in a branch or loop body is state that must flow out of it
only if it is live after it (or, for a loop, live at its head); a name used
only inside the body stays local to the generated function. This is AutoGraph's
rule, and it keeps converted code from threading every written name.

Standard backward may-analysis over `cfg`: live_before = read | (live_after -
bound - unbound). Only local names (params and names bound in the function) are
reported: a global or builtin is never state. Nothing is live at a point no
path reaches (after an `if` whose branches all return, say): no code runs there.
A name a closure captures is live at every reachable point (`always_live`): a
call of the closure may read it, and the call does not say so.
"""
from . import cfg
from .annos import Anno, setanno


def _transfer(node, live_after):
    return node.read | (live_after - node.bound - node.unbound)


def _union(values):
    return frozenset().union(*values)


def solve(graph):
    """(before, after) dicts node -> names that may be read later."""
    return cfg.solve(graph, forward=False, transfer=_transfer, meet=_union,
                     boundary=frozenset(), top=frozenset())


def annotate(graph, local_names, always_live=frozenset()):
    """Write LIVE_IN/LIVE_OUT on every statement of `graph` (union over copies)."""
    before, after = solve(graph)
    live = cfg.reachable(graph)
    for stmt, spans in graph.spans.items():
        live_in = _union(before[first] for first, _ in spans if first in live)
        live_out = _union(after[last] for _, last in spans if last in live)
        if any(first in live for first, _ in spans):
            live_in, live_out = live_in | always_live, live_out | always_live
        setanno(stmt, Anno.LIVE_IN, live_in & local_names)
        setanno(stmt, Anno.LIVE_OUT, live_out & local_names)
