"""Converted gast tree → readable source (astor) and a live function.

The function is compiled from the tree itself, whose nodes carry the user's
file name and original line numbers, so every frame of converted code points
at the user's line. It is created inside a factory function whose parameters
are `_jst` and the original closure's names, then rebuilt over the original
globals and closure cells: globals stay live, closures stay shared.
"""
import ast
import copy
import types

import astor
import gast

from . import operators

FACTORY = "__dy2static_factory"
CONVERTED = "__dy2static_converted"
CONVERTED_CODES = set()    # code objects of converted functions: frames worth showing the user
_JST_CELL = types.CellType(operators)


def emit(fn_node, filename, freevars):
    """The code object of a converted function (fn_node itself is left as it is)."""
    tree = gast.gast_to_ast(fn_node)       # a new tree
    ast.fix_missing_locations(tree)
    return _compile(tree, filename, freevars)


def source_text(fn_node):
    """The converted source: astor's text, or ast.unparse for syntax astor 0.8.1 predates (`match`)."""
    tree = gast.gast_to_ast(fn_node)
    ast.fix_missing_locations(tree)
    try:
        return astor.to_source(tree)
    except Exception:
        return ast.unparse(tree) + "\n"


def _compile(tree, filename, freevars):
    """Compile inside a factory taking `_jst` and the original closure's names (see module doc)."""
    user_name = tree.name
    _strip_evaluated_parts(tree.args)
    tree.returns = None
    tree.decorator_list = []
    tree.name = CONVERTED   # not the user's name: `rec` inside `rec` must stay the global, not a factory cell
    module = ast.parse(f"def {FACTORY}({', '.join(('_jst',) + tuple(freevars))}):\n    return {CONVERTED}\n")
    factory = module.body[0]
    factory.body.insert(0, tree)
    for node in (factory, factory.body[1], factory.body[1].value, factory.args):
        ast.copy_location(node, tree)
    ast.fix_missing_locations(module)
    code = compile(module, filename, "exec")
    factory_code = next(c for c in code.co_consts if isinstance(c, types.CodeType) and c.co_name == FACTORY)
    inner = next(c for c in factory_code.co_consts if isinstance(c, types.CodeType) and c.co_name == CONVERTED)
    names = {"co_name": user_name}
    if hasattr(inner, "co_qualname"):
        names["co_qualname"] = user_name
    inner = inner.replace(**names)      # tracebacks show the user's function name
    _remember(inner)
    return inner


def _strip_evaluated_parts(args):
    """Defaults and annotations are evaluated at def time: the original function's values are reused."""
    args.defaults = []
    args.kw_defaults = [None] * len(args.kwonlyargs)
    for arg in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
        if arg is not None:
            arg.annotation = None


def _remember(code):
    CONVERTED_CODES.add(code)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _remember(const)


def instantiate(code, fn):
    """A function running `code` with fn's globals, defaults and closure cells."""
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    closure = []
    for name in code.co_freevars:
        if name == "_jst":
            closure.append(_JST_CELL)
        else:
            closure.append(cells[name])
    new = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, tuple(closure) or None)
    new.__kwdefaults__ = copy.copy(fn.__kwdefaults__)
    new.__qualname__ = fn.__qualname__
    new.__module__ = fn.__module__
    new.__doc__ = fn.__doc__
    new.__dict__.update(fn.__dict__)
    new.__dy2static_original__ = fn
    return new
