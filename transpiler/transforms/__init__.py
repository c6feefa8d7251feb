"""The conversion pipeline: one transform per construct, in this fixed order.

1. Fence           reject unsupported syntax (yield, async, rebinding globals in bodies)
   Declarations    `global`/`nonlocal` anywhere in the function → hoisted to its top
   FinallyJumps    a `finally` that returns/breaks holds the exception in flight, raised only if it did not
   WalrusOperands  an and/or/ternary whose later operand binds a name (`:=`) → ifs, so the name is the function's
2. Returns         `if c: return a` + `return b` → `return a if c else b`; other early returns → one return at the end
3. Jumps           break/continue → flags and guards; loop `else` → `if not __break_n`
4. InPlaceUpdates  xs.append(v) / x[i] = v / x.add_(y) → rebinding, so analysis sees the write
   -- analysis: activity, liveness, definedness (annotations on the lowered tree) --
5. ControlFlow     if/while/for → branch/body functions + convert_ifelse/while/for
6. Raises          raise → convert_raise (a `raise` op where tracing is inside a branch or body)
7. Expressions     and/or/not, chained comparisons, ternaries → thunk-taking operators
8. Calls           user calls → convert_call; len/print/range/enumerate/zip/assert overloads

Nested user functions are converted first, each through the whole pipeline.
"""
import ast

import gast

from ..analysis import Anno, analyze, annotate_activity, getanno, setanno
from ..analysis.scope import own_scope
from .base import Context
from .calls import Calls
from .control_flow import ControlFlow
from .declarations import Declarations
from .expressions import Expressions
from .fence import Fence
from .finally_jumps import FinallyJumps
from .jumps import Jumps
from .lists import InPlaceUpdates
from .raises import Raises
from .returns import Returns
from .walrus import WalrusOperands

# WalrusOperands runs twice: before Returns sees the user's ifs, and after Jumps for the loop tests it moves
BEFORE_ANALYSIS = (Fence, Declarations, FinallyJumps, WalrusOperands, Returns, Jumps, WalrusOperands, InPlaceUpdates)
AFTER_ANALYSIS = (ControlFlow, Raises, Expressions, Calls)
PIPELINE = BEFORE_ANALYSIS + AFTER_ANALYSIS


def convert_node(fn_node, filename, namer, resolve):
    """Run the pipeline over fn_node and every user function nested in it (innermost first)."""
    for nested in _nested_functions(fn_node):
        convert_node(nested, filename, namer, resolve)
    ctx = Context(fn_node, filename, namer, resolve)
    present, stale, analyzed = node_types(fn_node.body), False, False
    for transform in PIPELINE:
        if not transform.applies(fn_node, present) and stale:
            present, stale = node_types(fn_node.body), False     # what the transforms run so far made
        if not transform.applies(fn_node, present):
            continue
        if transform in AFTER_ANALYSIS and not analyzed:
            # ControlFlow reads the whole analysis; the later transforms only the function's scope
            if transform is ControlFlow:
                analyze(fn_node)
            else:
                annotate_activity(fn_node)
            analyzed = True
        transform(ctx).transform(fn_node)
        stale = True
    setanno(fn_node, Anno.CONVERTED, True)
    return fn_node


def node_types(stmts):
    """Names of the node types under the statements, nested functions included (the branch and body
    functions ControlFlow makes are transformed further): which transforms have something to do. A
    transform runs when this set, taken before it or any transform ran since, names its constructs."""
    return _names_of(own_scope(stmts, stop=()))


def needs_conversion(fn_tree, nodes, resolve):
    """Whether a function (a plain `ast` FunctionDef as parsed; `nodes`: every node under its body) is
    converted to anything but itself: it defines a nested function or lambda, a transform has a
    construct of its to rewrite, or a call is not one Calls leaves as written (`resolve` as the Context's)."""
    present = _names_of(nodes)
    if not present.isdisjoint(_NESTED) or any(t.applies(fn_tree, present) for t in PIPELINE if t is not Calls):
        return True
    return Calls.applies(fn_tree, present) and not Calls.leaves_as_written(fn_tree, nodes, resolve)


_NESTED = frozenset({"FunctionDef", "AsyncFunctionDef", "ClassDef", "Lambda"})


def _names_of(nodes):
    """The nodes' type names, and `.attr` for each attribute read or written (`.append`, `.add_`: what
    InPlaceUpdates rewrites is told by the method's name)."""
    names = set()
    for node in nodes:
        name = type(node).__name__
        names.add(name)
        if name == "Attribute":
            names.add("." + node.attr)
    return names


def _nested_functions(fn_node):
    """User functions defined directly in fn_node's scope (not inside another nested def), and the methods
    of classes defined there: their code is converted code, which calls never convert again."""
    found = []
    for node in own_scope(fn_node.body):
        if isinstance(node, gast.ClassDef):
            found.extend(_nested_functions(node))
        elif isinstance(node, gast.FunctionDef) and not getanno(node, Anno.CONVERTED, False):
            if is_generator(node):      # stays Python: it runs while tracing, as a library's would
                setanno(node, Anno.CONVERTED, True)
            else:
                found.append(node)
    return found


def is_generator(fn_node):
    """Whether a def is a generator function (`yield` in its own scope)."""
    return any(isinstance(node, (gast.Yield, gast.YieldFrom)) for node in own_scope(fn_node.body))
