"""Converted gast tree → readable source (astor) and a live function.

The function is compiled from the tree itself, whose nodes carry the user's
file name and original line numbers, so every frame of converted code points
at the user's line. It is created inside a factory function whose parameters
are `_jst` and the original closure's names, then rebuilt over the original
globals and closure cells: globals stay live, closures stay shared.
"""
import ast
import copy
import io
import tokenize
import types

import astor
import gast

from . import operators
from .effects.aliases import CONVERTED_CODES

WIDTH = 120        # converted source wraps its lines at the width of our own code, between arguments only
FACTORY = "__dy2static_factory"
CONVERTED = "__dy2static_converted"
_JST_CELL = types.CellType(operators)


def emit(fn_node, filename, freevars):
    """The code object of a converted function (fn_node itself is left as it is)."""
    tree = gast.gast_to_ast(fn_node)       # a new tree
    ast.fix_missing_locations(tree)
    return _compile(tree, filename, freevars)


def emit_unconverted(fn_tree, filename, freevars):
    """The code object of a function whose conversion is itself, from its `ast` tree as parsed (every
    node located already; the tree itself is left as it is): no gast round trip of a long function."""
    tree = copy.copy(fn_tree)
    tree.args = copy.copy(fn_tree.args)
    for field in ("posonlyargs", "args", "kwonlyargs"):
        setattr(tree.args, field, [copy.copy(arg) for arg in getattr(fn_tree.args, field)])
    for field in ("vararg", "kwarg"):
        setattr(tree.args, field, copy.copy(getattr(fn_tree.args, field)))
    return _compile(tree, filename, freevars)


def source_text(fn_node):
    """The converted source: astor's text, or ast.unparse for syntax astor 0.8.1 predates (`match`).

    astor's own line wrapping breaks anywhere (`rt.` / `where`); lines are wrapped here instead.
    """
    tree = gast.gast_to_ast(fn_node)
    ast.fix_missing_locations(tree)
    try:
        text = astor.to_source(tree, pretty_source="".join)
    except Exception:
        text = ast.unparse(tree) + "\n"
    return wrap_lines(text)


def wrap_lines(text, width=WIDTH):
    """Lines longer than `width` broken after commas inside brackets (outermost first), indented by 4.

    Nothing else is ever split, so `rt.where` or `_jst.convert_ifelse` stays whole; a line with
    no such comma stays long. `lambda :` (astor's spelling) becomes `lambda:`.
    """
    tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    lines = text.splitlines(keepends=True)
    breaks, lambdas, depth = {}, [], 0     # breaks: line number -> [(column after a comma, depth)]
    for tok, nxt in zip(tokens, tokens[1:]):
        if tok.type == tokenize.OP and tok.string in "([{":
            depth += 1
        elif tok.type == tokenize.OP and tok.string in ")]}":
            depth -= 1
        elif tok.type == tokenize.OP and tok.string == "," and depth and nxt.start[0] == tok.end[0]:
            breaks.setdefault(tok.end[0], []).append((tok.end[1], depth))
        elif tok.type == tokenize.NAME and tok.string == "lambda" and nxt.string == ":":
            lambdas.append((tok.end[0], tok.end[1]))
    for row, col in reversed(lambdas):     # right to left: earlier columns stay valid
        line = lines[row - 1]
        lines[row - 1] = line[:col] + line[col:].lstrip(" ")
        breaks[row] = [(c - (len(line) - len(lines[row - 1])) if c > col else c, d) for c, d in breaks.get(row, [])]
    out = []
    for row, line in enumerate(lines, 1):
        body = line.rstrip("\n")
        if len(body) <= width or row not in breaks:
            out.append(line)
            continue
        indent = " " * (len(body) - len(body.lstrip()) + 4)
        out.append("\n".join(_fill(body, breaks[row], indent, width)) + "\n")
    return "".join(out)


def _fill(body, cuts, indent, width):
    """body cut at the shallowest commas that make it fit, greedily packed."""
    first, *rest = _split(body, cuts, len(indent), width, 0, len(body))
    lines, current = [], body[:len(body) - len(body.lstrip())] + first
    for piece in rest:
        if len(current) + 1 + len(piece) > width:
            lines.append(current)
            current = indent + piece
        else:
            current += " " + piece
    return lines + [current]


def _split(body, cuts, indent, width, start, end):
    """Pieces of body[start:end] cut after commas: the shallowest depth first, deeper ones inside a piece
    that is still too long for a line of its own."""
    inside = [(c, d) for c, d in cuts if start < c < end]
    text = body[start:end].strip()
    if not inside or len(text) + indent <= width:
        return [text]
    shallowest = min(d for _, d in inside)
    bounds = [start] + [c for c, d in inside if d == shallowest] + [end]
    return [piece for a, b in zip(bounds, bounds[1:]) for piece in _split(body, cuts, indent, width, a, b)]


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
        ast.copy_location(node, tree)      # the rest of the factory is located by its parse, tree by its caller
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
