"""The conversion cache: a user function's converted twin, made once per function and per code object.

The converted code object is kept per original code object (a closure made again
converts nothing again); the converted function per function. The source text
(`f.code`) is printed from the kept tree only when asked for.
"""
import ast
import builtins
import inspect
import types
import weakref

import gast

from runtime.gc_pause import paused_gc

from . import emit
from .analysis.scope import own_scope
from .naming import Namer
from .parsing import ParsedFunction, parse_function
from .transforms import convert_node, needs_conversion
from .transforms.calls import is_library_module

_code_cache = {}                              # _code_key(fn) -> _Converted
_function_cache = weakref.WeakKeyDictionary()  # original function -> converted function
NOT_TO_STATIC = "__dy2static_not_to_static__"


def convert_function(fn):
    """The converted twin of a plain Python function (cached per function and per code object)."""
    cached = _function_cache.get(fn)
    if cached is not None:
        return cached
    key = _code_key(fn)
    entry = _code_cache.get(key)
    if entry is None:
        with paused_gc():       # a long function's trees: tens of thousands of objects, none garbage yet
            entry = _convert(fn, key)
    converted = emit.instantiate(entry.code, fn)
    converted.__dy2static_returns__ = entry.returns
    _function_cache[fn] = converted
    return converted


def _convert(fn, key):
    """fn's code converted (or compiled as parsed, when no transform applies), kept in the code cache."""
    parsed = parse_function(fn)
    resolve = _resolver(fn)
    nodes = list(own_scope(parsed.tree.body, stop=())) if parsed.tree is not None else None
    if nodes is not None and not needs_conversion(parsed.tree, nodes, resolve):
        code = emit.emit_unconverted(parsed.tree, parsed.filename, fn.__code__.co_freevars)
        returns = sorted(node.lineno for node in nodes if isinstance(node, ast.Return))   # no nested scope
        entry = _code_cache[key] = _Converted(code, parsed, (parsed.filename, returns))
    else:
        returns = return_lines(parsed.node)
        namer = Namer(parsed.node)
        node = convert_node(parsed.node, parsed.filename, namer, resolve)
        code = emit.emit(node, parsed.filename, fn.__code__.co_freevars)
        entry = _code_cache[key] = _Converted(code, node, (parsed.filename, returns))
    return entry


def _code_key(fn):
    """What one conversion serves: one code object (closures made again by one factory share it) in one
    module. Code objects compare equal across files (their filename is not compared), and what a name
    of the function resolves to at conversion time is its module's: the same `def` in another file is
    converted on its own, with that file's name and lines in its errors."""
    return fn.__code__, fn.__code__.co_filename, id(fn.__globals__)


class _Converted:
    """One original code object's conversion; its source text is printed only when asked for (from the
    converted gast tree, or the parse of a function converted to itself, whose gast tree is made then)."""

    __slots__ = ("code", "_node", "returns", "_source")

    def __init__(self, code, node, returns):
        self.code, self._node, self.returns, self._source = code, node, returns, None

    @property
    def node(self):
        return self._node.node if isinstance(self._node, ParsedFunction) else self._node

    @property
    def source(self):
        if self._source is None:
            self._source = emit.source_text(self.node)
        return self._source


def converted_source(fn):
    """The converted source text of a plain function."""
    convert_function(fn)
    return _code_cache[_code_key(fn)].source


def return_lines(fn_node):
    """Lines of fn's own `return` statements (where a returned value is read)."""
    return sorted(node.lineno for node in own_scope(fn_node.body) if isinstance(node, gast.Return))


def _resolver(fn):
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))

    def resolve(name):
        if name in cells:
            try:
                return True, cells[name].cell_contents
            except ValueError:
                return False, None
        if name in fn.__globals__:
            return True, fn.__globals__[name]
        if hasattr(builtins, name):
            return True, getattr(builtins, name)
        return False, None
    return resolve



def is_user_function(fn):
    """Whether converted code converts fn when it calls it (user code, not a library's, a generator or marked)."""
    if getattr(fn, NOT_TO_STATIC, False) or fn.__code__ in emit.CONVERTED_CODES:
        return False
    if fn.__code__.co_flags & inspect.CO_GENERATOR:
        return False        # a generator called from converted code runs as Python while tracing
    if is_library_module(getattr(fn, "__module__", None)):
        return False
    filename = fn.__code__.co_filename
    return not (filename.startswith("<") or "site-packages" in filename or "dist-packages" in filename)



def not_to_static(fn):
    """Leave fn as Python when converted code calls it (it still runs while tracing). A bound method
    marks its function (a method object takes no attributes): every instance's method stays Python."""
    setattr(getattr(fn, "__func__", fn) if isinstance(fn, types.MethodType) else fn, NOT_TO_STATIC, True)
    return fn

