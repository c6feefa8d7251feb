"""Globals and closure variables a static function rebinds (`global n` / `nonlocal n`).

Converted code keeps them the enclosing scope's names, carried through branches
and loops like locals, so Python-valued control flow rebinds them as Python
does. Rebound under a tensor-dependent condition, such a name would hold a
traced value after the trace, which the Program does not store back after each
run: `check` puts the old value back and refuses, naming the variable and line.
"""
import gast

from runtime.ir import Variable

from .errors import ConversionError
from .parsing import parse_function

_MISSING = object()


def snapshot(fn):
    """What fn's globals and closure cells hold before a trace."""
    cells = [(name, cell, _contents(cell)) for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ())]
    return dict(fn.__globals__), cells


def check(fn, before):
    """Refuse (after restoring it) a global or closure variable left holding a traced value."""
    old_globals, cells = before
    for name, value in list(fn.__globals__.items()):
        if _traced(value) and old_globals.get(name, _MISSING) is not value:
            if name in old_globals:
                fn.__globals__[name] = old_globals[name]
            else:
                del fn.__globals__[name]
            raise _error(fn, name, "global")
    for name, cell, old in cells:
        value = _contents(cell)
        if _traced(value) and value is not old:
            if old is _MISSING:
                del cell.cell_contents
            else:
                cell.cell_contents = old
            raise _error(fn, name, "nonlocal")


def _contents(cell):
    try:
        return cell.cell_contents
    except ValueError:
        return _MISSING


def _traced(value):
    if isinstance(value, (list, tuple)):
        return any(isinstance(v, Variable) for v in value)
    return isinstance(value, Variable)


def _error(fn, name, kind):
    filename, line = fn.__code__.co_filename, fn.__code__.co_firstlineno
    try:
        node = parse_function(fn).node
        line = min((n.lineno for n in gast.walk(node) if isinstance(n, gast.Name) and n.id == name
                    and isinstance(n.ctx, (gast.Store, gast.Del))), default=line)
    except ConversionError:
        pass
    return ConversionError(
        f"'{name}' ({kind}) is rebound under a tensor-dependent condition; the Program cannot store its "
        f"new value back into the {kind} variable after each run", filename, line,
        f"return '{name}' from the function (or keep it in a local), or use to_static(..., full_graph=False) "
        "to run the function eagerly")
