"""A function's own scope: the one walk every analysis and transform uses to stay inside it.

A nested def, lambda or class has its own names and parameters, and its body
runs later (if at all): what it binds is not bound here, and a `return` or
`break` inside it is not this function's. Comprehensions bind their targets in
a scope of their own too (`assigned_names` leaves them out).
"""
import gast

NESTED_SCOPES = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef)
COMPREHENSIONS = (gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp)


def own_scope(nodes, stop=NESTED_SCOPES):
    """Every node under `nodes` (themselves included) in source order; one of a `stop` type is
    yielded but not entered."""
    stack = list(nodes)
    stack.reverse()
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, stop):
            stack.extend(_children_last_first(node))


def every_node(root):
    """Every node under root (itself included, nested scopes too), in no particular order: a faster
    gast.walk for the walks of a whole function where order does not matter."""
    return own_scope([root], stop=())


def _children_last_first(node):
    """node's child nodes, last first (as gast.iter_child_nodes yields them, reversed), without its
    two nested generators: every analysis walks the whole function, so this loop is the converter's hottest."""
    out = []
    for field in reversed(node._fields):
        value = getattr(node, field, None)
        if isinstance(value, list):
            out.extend(item for item in reversed(value) if isinstance(item, gast.AST))
        elif isinstance(value, gast.AST):
            out.append(value)
    return out


def assigned_names(nodes):
    """Names the nodes bind or unbind in their own scope (parameters too, where `nodes` holds them)."""
    return frozenset(node.id for node in own_scope(nodes, NESTED_SCOPES + COMPREHENSIONS)
                     if isinstance(node, gast.Name) and not isinstance(node.ctx, gast.Load))


def declared_names(nodes):
    """Names a `global` or `nonlocal` statement of this scope declares."""
    return frozenset(name for node in own_scope(nodes) if isinstance(node, (gast.Global, gast.Nonlocal))
                     for name in node.names)
