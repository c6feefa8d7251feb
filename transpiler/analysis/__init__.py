"""Static analysis of one function: activity, liveness and definedness.

`analyze(fn)` runs the passes in order and leaves their results on the tree
as annotations (see `Anno`); transformers read them and never re-derive them.
It covers the function's own scope only: a nested def or lambda is analysed
when it is converted itself. Run it again after a transformation: it recomputes
everything and overwrites the earlier annotations.
"""
from . import cfg, definedness, liveness
from .closures import captured_names, rebound_names
from .activity import Activity, activity_of, annotate_activity
from .annos import Anno, getanno, hasanno, setanno

__all__ = ['analyze', 'maybe_defined_in', 'Anno', 'getanno', 'setanno', 'hasanno',
           'Activity', 'activity_of', 'rebound_names']


def analyze(fn_node):
    """Annotate `fn_node` (a gast FunctionDef) and every statement of its scope."""
    scope = annotate_activity(fn_node)
    graph = cfg.build(fn_node.body, declared=scope.globals | scope.nonlocals)
    local_names = scope.params | scope.modified
    captured = captured_names(fn_node, local_names)
    setanno(fn_node, Anno.CAPTURED, captured)
    liveness.annotate(graph, local_names, always_live=captured)
    definedness.annotate(graph, scope.params, local_names)
    setanno(fn_node, Anno.CFG, (graph, scope.params))
    return fn_node


def maybe_defined_in(fn_node, stmt):
    """Names bound on SOME path reaching stmt. Solved on first use only: few statements need it
    (a name live before a statement but not bound on every path) and it is the costliest solve."""
    if not hasanno(stmt, Anno.MAYBE_DEFINED_IN):
        graph, params = getanno(fn_node, Anno.CFG)
        definedness.annotate_maybe(graph, params)
    return getanno(stmt, Anno.MAYBE_DEFINED_IN)
