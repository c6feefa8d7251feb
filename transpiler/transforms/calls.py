"""Calls: user functions are converted when called; builtins get tensor-aware versions.

    h = self.fc1(x)        →  h = _jst.convert_call(self.fc1)(x)
    h = self.fcs[i](x)     →  h = _jst.convert_call_item(self.fcs, i)(x)   (a tensor i: each layer in a cond)
    n = len(x)             →  n = _jst.convert_len(x)
    isinstance(x, T)       →  _jst.convert_isinstance(x, T)      (also min/max/map/enumerate/zip)
    k = int(n)             →  k = _jst.convert_int(n)   (float, bool: a traced n gives a weak 0-d tensor)
    i = xs.index(t)        →  i = _jst.convert_index(xs, t)
    for i in range(n):     →  for i in _jst.convert_range(n):
    print('h', h)          →  _jst.convert_print('h', h)
    assert h.sum() > 0, m  →  _jst.convert_assert(h.sum() > 0, lambda: m)
    y = rt.tanh(x)         →  y = rt.tanh(x)        (library: left alone)
    a = np.asarray(h)      →  a = _jst.convert_call(np.asarray)(h)   (a traced h: h itself)
    s = x.sum()            →  s = x.sum()           (array method: left alone)

What a name refers to is looked up at conversion time in the function's
globals, closure and builtins: calls into modules (runtime, numpy, math, ...)
and into builtins stay plain, so the converted code reads like the original.
`super()` becomes `super(__class__, self)`: converted code is compiled outside
the class body, where the zero-argument form has no cell to read.
"""
import ast
import builtins
import sys

import gast
import numpy as np

from ..analysis import Anno, getanno
from .base import Transformer, is_jst_call, jst, load, located

BUILTIN_OVERLOADS = {"len": "convert_len", "print": "convert_print", "range": "convert_range",
                     "enumerate": "convert_enumerate", "zip": "convert_zip", "min": "convert_min",
                     "max": "convert_max", "map": "convert_map", "isinstance": "convert_isinstance",
                     "any": "convert_any", "all": "convert_all", "reversed": "convert_reversed",
                     "int": "convert_int", "float": "convert_float", "bool": "convert_bool", "sum": "convert_sum"}

# tensor methods called on local names (x.sum()) are not wrapped: they are ours, never user code
ARRAY_METHODS = frozenset("""
sum mean max min prod std var any all argmax argmin cumsum abs exp log sqrt tanh clip astype flatten squeeze
unsqueeze transpose reshape numpy item tolist append extend pop insert keys values items get copy update
index count split join format startswith endswith replace strip lower upper setdefault to cpu gpu
""".split())

# NumPy's array constructors: a traced value cannot live in a NumPy array, so `convert_call` maps
# them to the value itself (operators._numpy_array_overload); other library calls stay plain
NUMPY_ARRAY_CONSTRUCTORS = (np.asarray, np.array, np.asanyarray, np.ascontiguousarray)

_LIBRARY_ROOTS = {"runtime", "transpiler", "numpy", "cupy", "math", "builtins", "functools", "itertools",
                  "operator", "collections", "typing", "random", "time", "os", "sys", "warnings", "re"}


def is_library_object(value):
    """True for modules, builtins, and functions/classes defined in library packages."""
    if isinstance(value, type(sys)):
        return True
    module = getattr(value, "__module__", None) or ""
    root = module.split(".")[0]
    if root in _LIBRARY_ROOTS or root in sys.stdlib_module_names:
        return True
    if isinstance(value, type) and not hasattr(value, "forward") and not _user_defined(value):
        return True
    return False


def _user_defined(cls):
    return getattr(sys.modules.get(cls.__module__), "__file__", "") and not is_library_module(cls.__module__)


def is_library_module(name):
    root = (name or "").split(".")[0]
    if root in _LIBRARY_ROOTS or root in sys.stdlib_module_names:
        return True
    file = getattr(sys.modules.get(root), "__file__", "") or ""
    return "site-packages" in file or "dist-packages" in file


def _is_array_constructor(value):
    return builtins.any(value is fn for fn in NUMPY_ARRAY_CONSTRUCTORS)


def _module_attribute(root_value, node):
    """What `np.asarray` (an attribute chain through modules) names at conversion time; None past a
    non-module, so resolving never runs a user property."""
    names = []
    while _kind(node) == "Attribute":
        names.append(node.attr)
        node = node.value
    value = root_value
    for name in reversed(names):
        if not isinstance(value, type(sys)):
            return None
        value = getattr(value, name, None)
    return value


def _root_name(node):
    while _kind(node) == "Attribute":
        node = node.value
    return node.id if _kind(node) == "Name" else None


def _kind(node):
    """A node's type name: the same for a gast node and a plain `ast` one (see `left_as_written`)."""
    return type(node).__name__


def left_as_written(call, local_names, resolve, first_param):
    """Whether Calls leaves `call` (a gast or a plain `ast` Call) as written: a builtin without an
    overload, a library function, class or module attribute (not a NumPy array constructor), or an
    array method of a local name."""
    func = call.func
    if _kind(func) == "Name":
        if func.id in local_names or (func.id == "super" and not call.args and first_param):
            return False
        found, value = resolve(func.id)
        if found and value is getattr(builtins, func.id, None):
            return func.id not in BUILTIN_OVERLOADS
        return found and is_library_object(value) and not _is_array_constructor(value)
    if _kind(func) != "Attribute":
        return False
    root = _root_name(func)
    if root is not None and root not in local_names:
        found, value = resolve(root)
        if found and is_library_object(value) and not _is_array_constructor(_module_attribute(value, func)):
            return True
    if func.attr == "index" and call.args and not call.keywords:
        return False
    return (func.attr in ARRAY_METHODS and _kind(func.value) == "Name" and func.value.id in local_names
            and func.value.id != "self")


class Calls(Transformer):
    constructs = frozenset({"Call", "Assert"})

    def transform(self, fn_node):
        scope = getanno(fn_node, Anno.SCOPE)      # the function's own names (params and bound)
        self.locals = set(scope.params | scope.modified)
        self.first_param = fn_node.args.args[0].id if fn_node.args.args else None
        return super().transform(fn_node)

    def visit_Assert(self, node):
        self.generic_visit(node)
        msg = node.msg if node.msg is not None else gast.Constant(value="", kind=None)
        thunk = gast.Lambda(args=_no_args(), body=msg)
        call = gast.Call(func=jst("convert_assert"), args=[node.test, thunk], keywords=[])
        return located(gast.Expr(value=call), node)

    def visit_Call(self, node):
        self.generic_visit(node)
        if is_jst_call(node) or left_as_written(node, self.locals, self.ctx.resolve, self.first_param):
            return node
        func = node.func
        if isinstance(func, gast.Name):
            if func.id == "super" and not node.args and self.first_param:
                node.args = [load("__class__"), load(self.first_param)]
                return node
            if func.id not in self.locals:
                found, value = self.ctx.resolve(func.id)
                if found and value is getattr(builtins, func.id, None):     # one with an overload
                    node.func = located(jst(BUILTIN_OVERLOADS[func.id]), func)
                    return node
        elif isinstance(func, gast.Attribute) and func.attr == "index" and node.args and not node.keywords:
            # list/tuple.index compares with `==` and takes each truth: tensor-aware (other receivers: as is)
            call = gast.Call(func=jst("convert_index"), args=[func.value] + node.args, keywords=[])
            return located(call, node)
        if isinstance(func, gast.Subscript) and not isinstance(func.slice, (gast.Constant, gast.Slice, gast.Tuple)):
            # `layers[i](x)`: a tensor i picks the layer at run time
            wrapped = gast.Call(func=jst("convert_call_item"), args=[func.value, func.slice], keywords=[])
            node.func = located(wrapped, func)
            return node
        wrapped = gast.Call(func=jst("convert_call"), args=[func], keywords=[])
        node.func = located(wrapped, func)
        return node

    @staticmethod
    def leaves_as_written(fn_tree, nodes, resolve):
        """Whether Calls would leave a function as written (a plain `ast` FunctionDef as parsed, with no
        nested scope, no walrus and no `global`: every name it binds is a stored Name, an import, or
        a parameter). Names bound anywhere in it count as its locals, comprehensions' too: a name
        counted local that is not only makes a call look like one to convert."""
        if any(_kind(node) in ("Assert", "Match") for node in nodes):
            return False
        args = fn_tree.args
        params = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]
                  if a is not None]
        local_names = set(params)
        for node in nodes:
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                local_names.add(node.id)
            elif isinstance(node, ast.alias):
                local_names.add(node.asname or node.name.split(".")[0])
        first_param = args.args[0].arg if args.args else None
        return all(left_as_written(node, local_names, resolve, first_param) for node in nodes
                   if isinstance(node, ast.Call))


def _no_args():
    return gast.arguments(args=[], posonlyargs=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                          defaults=[])
