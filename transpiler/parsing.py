"""Getting a function's source and parsing it into a gast tree with the user's line numbers."""
import ast
import inspect
import linecache
import textwrap

import gast

from .errors import ConversionError


class ParsedFunction:
    """A function's gast FunctionDef (a lambda's too, made one), with where it came from.

    A `def` is parsed with `ast` (`tree`, which stays as parsed) and its gast tree made on first use of
    `node`: a function whose conversion is the function itself is compiled from `tree` and needs none.
    """

    def __init__(self, node, filename, source, tree=None):
        self._node = node
        self.tree = tree
        self.filename = filename
        self.source = source

    @property
    def node(self):
        if self._node is None:
            self._node = gast.ast_to_gast(self.tree)
        return self._node


def parse_function(fn):
    """Parse `fn`'s source; line numbers in the tree are the lines of its file."""
    try:
        lines, first = _source_lines(fn)
        filename = inspect.getsourcefile(fn) or inspect.getfile(fn)
    except (OSError, TypeError) as e:
        raise ConversionError(f"cannot get the source of {_name(fn)} ({e}); dy2static converts functions "
                              "defined in files", getattr(fn.__code__, "co_filename", None),
                              getattr(fn.__code__, "co_firstlineno", None)) from None
    source = textwrap.dedent("".join(lines))
    if fn.__name__ == "<lambda>":
        return _parse_lambda(fn, source, filename, first, _dedented_by(lines, source))
    try:
        module = _parse_at(source, first)
    except SyntaxError:
        lines, first = inspect.getsourcelines(fn)     # the line table's span fell short: ask inspect
        source = textwrap.dedent("".join(lines))
        try:
            module = _parse_at(source, first)
        except SyntaxError as e:
            raise ConversionError(f"syntax error in {_name(fn)}: {e.msg}", filename, e.lineno or first) from None
    tree = module.body[0]
    if isinstance(tree, ast.AsyncFunctionDef):
        raise ConversionError(f"async function {_name(fn)} cannot be converted", filename, first,
                              "convert a plain `def` function")
    if not isinstance(tree, ast.FunctionDef):
        raise ConversionError(f"{_name(fn)} is not a function definition", filename, first)
    tree.decorator_list = []
    return ParsedFunction(None, filename, source, tree)


def _source_lines(fn):
    """fn's lines: from its code's own line table where Python keeps end positions (3.11+), which
    spares inspect's tokenizing of the whole block; else inspect."""
    code = fn.__code__
    filename = code.co_filename
    if fn.__name__ != "<lambda>" and hasattr(code, "co_positions") and not filename.startswith("<"):
        last = _last_line(code)
        all_lines = linecache.getlines(filename, fn.__globals__)
        first = code.co_firstlineno
        if last and all_lines and last <= len(all_lines) and all_lines[first - 1].lstrip().startswith(("def ", "@")):
            return all_lines[first - 1:last], first
    return inspect.getsourcelines(fn)


def _last_line(code):
    last = max((end for _, end, _, _ in code.co_positions() if end is not None), default=0)
    for const in code.co_consts:
        if isinstance(const, type(code)):
            last = max(last, _last_line(const))
    return last


def _parse_lambda(fn, source, filename, first, indent):
    """The lambda on fn's source lines with fn's parameter names, as a FunctionDef. Several such
    lambdas on one line are told apart by the code object's column positions (Python 3.11+)."""
    module, shift = _parse_lambda_lines(source)
    if module is None:
        raise ConversionError("cannot parse the source of this lambda", filename, first)
    code = fn.__code__
    params = list(code.co_varnames[:code.co_argcount])
    found = [n for n in gast.walk(module) if isinstance(n, gast.Lambda)
             and [a.id for a in n.args.args] == params]
    if len(found) > 1 and hasattr(code, "co_positions"):
        positions = _body_positions(code)
        inside = [_inside(n.body, positions, first, indent, shift) for n in found]
        best = max(inside)
        found = [n for n, count in zip(found, inside) if best and count == best]
        if len(found) > 1 and all(_nested(a, b) or _nested(b, a) for a in found for b in found if a is not b):
            found = [min(found, key=lambda n: (n.end_lineno - n.lineno, n.end_col_offset - n.col_offset))]
    if len(found) != 1:
        hint = ("give the lambda its own line or make it a def" if hasattr(code, "co_positions") else
                "on Python < 3.11 only one lambda per line can be converted: give it its own line or make it a def")
        raise ConversionError("cannot tell which lambda on this line to convert "
                              f"({len(found)} candidates)", filename, first, hint)
    _shift_lines(module, first - 1)
    lam = found[0]
    node = gast.FunctionDef(name="__lambda", args=lam.args, body=[gast.Return(value=lam.body)],
                            decorator_list=[], returns=None, type_comment=None, type_params=[])
    gast.copy_location(node, lam)
    node.body[0] = gast.copy_location(node.body[0], lam)
    return ParsedFunction(node, filename, source)


def _parse_lambda_lines(source):
    """The lines holding a lambda as a module, and how far columns on the first line moved: the lines
    as they are, a line cut out of a larger expression (an argument, a dict entry `'k': lambda x: ...,`,
    a keyword argument), or a compound statement's header (`for y in map(lambda x: ..., xs):`,
    `elif f(lambda: ...):`) given an empty body."""
    stripped = source.strip()
    indent = len(source) - len(source.lstrip())
    header = stripped[2:] if stripped.startswith("elif") else stripped
    candidates = [(source, 0)]
    candidates += [(opening + stripped.rstrip(",") + closing, len(opening) - indent)
                   for opening, closing in (("(", ")"), ("{", "}"), ("f(", ")"))]
    candidates.append((header + " pass", -indent - (len(stripped) - len(header))))
    for text, shift in candidates:
        try:
            return gast.parse(text), shift
        except SyntaxError:
            continue
    return None, 0


def _body_positions(code):
    """(line, column) where each instruction of the lambda's code starts (empty spans, such as
    the frame setup's, carry no place)."""
    return {(line, col) for line, end_line, col, end_col in code.co_positions()
            if line is not None and col is not None and (line, col) != (end_line, end_col)}


def _inside(expr, positions, first, indent, shift):
    """How many positions (file coordinates) expr (parsed-source coordinates) holds."""
    count = 0
    for line, col in positions:
        line = line - first + 1
        col = col - indent + (shift if line == 1 else 0)
        count += (expr.lineno, expr.col_offset) <= (line, col) < (expr.end_lineno, expr.end_col_offset)
    return count


def _nested(inner, outer):
    return ((outer.lineno, outer.col_offset) <= (inner.lineno, inner.col_offset)
            and (inner.end_lineno, inner.end_col_offset) <= (outer.end_lineno, outer.end_col_offset))


def _dedented_by(lines, source):
    """How many columns dedent removed (the same on every line)."""
    for original, dedented in zip(lines, source.splitlines(True)):
        if original.strip():
            return len(original) - len(dedented)
    return 0


def _parse_at(source, first):
    """The `ast` module of `source` as if it started at line `first` of its file (blank lines above it: no
    walk over the tree to shift its line numbers afterwards)."""
    return ast.parse("\n" * (first - 1) + source)


def _shift_lines(tree, offset):
    for node in gast.walk(tree):
        if hasattr(node, "lineno") and node.lineno is not None:
            node.lineno += offset
            if getattr(node, "end_lineno", None) is not None:
                node.end_lineno += offset


def _name(fn):
    return f"'{getattr(fn, '__qualname__', getattr(fn, '__name__', fn))}'"
