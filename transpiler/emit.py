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


def to_source(fn_node):
    """Source text of a converted function: astor, or ast.unparse for syntax astor predates."""
    tree = gast.gast_to_ast(copy.deepcopy(fn_node))
    ast.fix_missing_locations(tree)
    try:
        return astor.to_source(tree)
    except Exception:  # astor 0.8.1 has no printer for e.g. `match`
        return ast.unparse(tree) + "\n"


def compile_code(fn_node, filename, freevars):
    """The code object of the converted function (compiled once per original code object)."""
    node = copy.deepcopy(fn_node)
    _strip_evaluated_parts(node.args)
    node.returns = None
    node.name = CONVERTED   # not the user's name: `rec` inside `rec` must stay the global, not a factory cell
    factory = gast.FunctionDef(
        name=FACTORY,
        args=gast.arguments(args=[gast.Name(id=n, ctx=gast.Param(), annotation=None, type_comment=None)
                                  for n in ("_jst",) + tuple(freevars)],
                            posonlyargs=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
        body=[node, gast.Return(value=gast.Name(id=node.name, ctx=gast.Load(), annotation=None,
                                                type_comment=None))],
        decorator_list=[], returns=None, type_comment=None, type_params=[])
    gast.copy_location(factory, fn_node)
    factory.body[1] = gast.copy_location(factory.body[1], fn_node)
    module = gast.Module(body=[factory], type_ignores=[])
    tree = gast.gast_to_ast(module)
    ast.fix_missing_locations(tree)
    code = compile(tree, filename, "exec")
    factory_code = next(c for c in code.co_consts if isinstance(c, types.CodeType) and c.co_name == FACTORY)
    inner = next(c for c in factory_code.co_consts if isinstance(c, types.CodeType) and c.co_name == node.name)
    names = {"co_name": fn_node.name}
    if hasattr(inner, "co_qualname"):
        names["co_qualname"] = fn_node.name
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
