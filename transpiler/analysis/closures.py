"""Closure cells: the local names a nested scope of the function captures.

Python closures bind late: `def via(): return i + 2` reads the enclosing
function's `i` when it is called, not when it is defined. Converted branch and
loop bodies are functions of their own, so a name such a closure reads must
stay the enclosing function's variable (a cell) there, not become a parameter
of the body function (AutoGraph keeps such names in the enclosing scope too).

A captured name is also live everywhere: a call of the closure may read it at
any later point, which liveness cannot see from the call. One a closure
rebinds (`nonlocal n`) may change at any call: `rebound_by_closures`; so may a
place a closure writes through a captured name (`c.k += 1`): `written_by_closures`.
"""
import gast

from .activity import activity_of, param_names
from .scope import assigned_names, every_node, own_scope

# Scopes that may run after the statement that creates them (a list/set/dict
# comprehension runs at once, so what it reads is read right there).
_LATE_SCOPES = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef, gast.GeneratorExp)


# Builtins that consume a generator given to them before they return: such a generator runs at once, as
# a list comprehension does (`sum(a * k for a, k in zip(row, ks))`).
_CONSUMERS = frozenset({"sum", "any", "all", "min", "max", "list", "tuple", "set", "frozenset", "sorted", "dict"})


def captured_names(fn_node, local_names):
    """Names of `local_names` that a def, lambda, class or generator inside fn_node reads or rebinds."""
    scopes, at_once = [], set()
    for node in own_scope(fn_node.body, stop=_LATE_SCOPES):      # one walk: the function may be long
        if isinstance(node, _LATE_SCOPES):
            scopes.append(node)
        elif isinstance(node, gast.Call):
            at_once |= _consumed_at_once(node, local_names)
    found = set()
    for scope in scopes:
        if id(scope) not in at_once:
            found |= _free_names(scope)
    return frozenset(found) & frozenset(local_names)


def _consumed_at_once(call, local_names):
    """ids of the generator expressions a call passes straight to a consuming builtin (`sum(... for ...)`)."""
    if not (isinstance(call.func, gast.Name) and call.func.id in _CONSUMERS and call.func.id not in local_names):
        return set()
    return {id(arg) for arg in call.args if isinstance(arg, gast.GeneratorExp)}


def _free_names(scope):
    """What a nested scope reads from outside (a `nonlocal` in it counts: it reads and rebinds)."""
    if isinstance(scope, gast.GeneratorExp):
        return activity_of(scope).read
    body = [scope.body] if isinstance(scope, gast.Lambda) else scope.body
    params = frozenset() if isinstance(scope, gast.ClassDef) else param_names(scope.args)
    inner = activity_of(body)
    return (inner.read | inner.nonlocals) - (inner.modified | params)


def rebound_names(stmts, names):
    """Which of `names` the statements bind or unbind in their own scope (not in a nested def)."""
    return assigned_names(stmts) & frozenset(names)


def rebound_by_closures(fn_node, local_names):
    """Names of `local_names` that a nested def/lambda/class declares `nonlocal` (so any call may rebind)."""
    found = {name for stmt in fn_node.body for node in every_node(stmt) if isinstance(node, gast.Nonlocal)
             for name in node.names}
    return frozenset(found) & frozenset(local_names)


def written_by_closures(fn_node, captured):
    """Places (activity Composites: `c.k`, `d['k']`, a list's contents) that a def or lambda inside
    fn_node writes through a name of `captured` (a local it reads from fn_node): any call may write them."""
    found = set()
    for node in own_scope(fn_node.body, stop=_LATE_SCOPES):
        if isinstance(node, (gast.FunctionDef, gast.Lambda)):
            body = [node.body] if isinstance(node, gast.Lambda) else node.body
            params = param_names(node.args)
            found |= {c for c in activity_of(body).composites if c.root in captured and c.root not in params}
    return frozenset(found)


def has_call(nodes):
    """Does any of these nodes call something (outside nested scopes)?"""
    return any(isinstance(node, gast.Call) for node in own_scope(nodes, stop=_LATE_SCOPES))
