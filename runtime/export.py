"""Export a Program as ONE standalone Python module that needs only NumPy (or CuPy).

    export_python(program, "out/model")    # out/model.py + out/model.npz
    import model                           # (with out/ on sys.path) no dy2static needed
    outputs = model.run(x=x)               # inputs by name; the outputs nest, as arrays

The module's `program(...)` function is written by the executor's own code
generator (`codegen.generic.Codegen`): straight-line code under the Program's variable
names, `cond` as `if`/`else`, `while` as `while True: ... break`. Ops are not
re-implemented here: an op with a `template` is inlined from it; any other
calls its registry kernel, whose source (with the helpers, modules and
constants it uses, found by reading its code) is copied into the module once.
So the registry stays the one definition of every op.

Nothing derived from the Program reaches the module as code except through
`repr` of plain data or sanitized identifiers; names and IR text appear only in
comments, with anything unprintable replaced.
"""
import ast
import builtins
import copy
import hashlib
import inspect
import keyword
import linecache
import math
import os
import sys
import sysconfig
import types

import numpy as np

from .atomic_files import Staged, commit_all, discard_all
from .backends import _canonical
from .deploy import _sha256, parameter_arrays
from .codegen.generic import Codegen, is_literal
from .serialization import DTYPES, with_relative_origins, write_params
from .shape_text import shape_text

__all__ = ["export_python", "python_source", "ExportError"]


class ExportError(ValueError):
    """The Program cannot be written as a standalone module; the message says which op and why."""


_OUR_PACKAGES = frozenset(["runtime", "transpiler"])
_WRAPPER_NAMES = frozenset(["program", "run", "load_params", "INPUTS", "PARAMETERS", "ARGS", "PARAMS_FILE",
                            "PARAMS_SHA256", "_params", "_input", "xp", "np", "os", "sys", "hashlib"])
_INLINE_LIMIT = 80          # attrs with a longer repr become module-level constants


def export_python(program, path, device="cpu"):
    """Write `path.py` (the standalone module) and `path.npz` (its parameters); returns both paths.

    `device` "cpu" makes a module over NumPy, "gpu" over CuPy (parameters are
    copied to the GPU when first needed). A trailing ".py" on `path` is accepted.
    Both files are written to temporaries and renamed into place only when both
    are whole, the weights first; the module holds their SHA-256 and refuses
    other weights when it loads them, so files of two exports never run together.
    """
    path = os.fspath(path)
    if path.endswith(".py"):
        path = path[:-3]
    py_path, npz_path = path + ".py", path + ".npz"
    arrays = parameter_arrays(program)
    staged = [Staged(npz_path), Staged(py_path)]
    try:
        with open(staged[0].temp, "wb") as f:
            write_params(f, arrays)
        source = python_source(program, os.path.basename(npz_path), device, params_sha256=_sha256(staged[0].temp))
        with open(staged[1].temp, "wb") as f:
            f.write(source.encode("utf-8"))
        commit_all(staged)
    except BaseException:
        discard_all(staged)
        raise
    return py_path, npz_path


def python_source(program, params_file, device="cpu", params_sha256=None):
    """The standalone module's source; it reads parameters from `params_file` next to itself, and refuses a
    file whose SHA-256 is not `params_sha256` (None: no check)."""
    device = _canonical(device)
    program = with_relative_origins(program)       # no absolute paths of the author's in the module
    xp_module = "numpy" if device == "cpu" else "cupy"
    sources = _Sources(_WRAPPER_NAMES)
    sources.preload(np, "np")
    sources.preload(os, "os")
    sources.preload(sys, "sys")
    sources.preload(hashlib, "hashlib")
    gen = _ExportCodegen(program, sources)
    gen.function("program")
    shape_name = sources.function(shape_text, "shape_text", "the module's messages")
    returned = _nest_source(gen, program)
    inputs = {v.name: (v.static_shape, v.dtype.name) for v in program.inputs if not v.persistable}
    params = {v.name: (v.static_shape, v.dtype.name) for v in program.inputs if v.persistable}

    out = ['"""Standalone export of a dy2static Program (generated: re-export rather than edit).',
           "",
           f"Needs only {xp_module}. `run(**inputs)` takes the inputs by name and returns the",
           "outputs as the traced function returned them; `program(...)` is the Program itself.",
           '"""']
    out += _comment_block(str(program), "The Program, as dy2static prints it:")
    out += ["", "import hashlib", "import os", "import sys", "", "import numpy as np"]
    out += [f"import {xp_module} as xp"] if xp_module != "numpy" else ["import numpy as xp"]
    out += sources.imports
    if sources.chunks:
        out += ["", "", "# --- kernels, copied from dy2static's op registry " + "-" * 30]
        for chunk in sources.chunks:
            out += ["", "", chunk]
    if gen.constants:
        out += ["", ""] + gen.constants
    out += ["", ""] + gen.lines
    out += ["", "", _WRAPPER.format(
        inputs=_dict_source(inputs), parameters=_dict_source(params),
        args=repr(tuple(v.name for v in program.inputs)), params_file=repr(params_file),
        params_sha256=repr(params_sha256), returned=returned, shape_text=shape_name)]
    source = "\n".join(out).rstrip("\n") + "\n"
    try:
        compile(source, "<exported program>", "exec")
    except SyntaxError as e:
        raise ExportError(f"the exported module for '{program.name}' does not compile: {e}") from None
    return source


_WRAPPER = '''\
# --- inputs, parameters, run() ---------------------------------------------------------
INPUTS = {inputs}  # name -> (shape, dtype); -1 = any size
PARAMETERS = {parameters}  # read from PARAMS_FILE
ARGS = {args}  # program()'s arguments, in order
PARAMS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), {params_file})
PARAMS_SHA256 = {params_sha256}  # of the PARAMS_FILE exported with this module
_params = {{}}


def load_params(path=PARAMS_FILE, sha256=PARAMS_SHA256):
    """The parameters, read with allow_pickle=False and checked against PARAMETERS.

    The file must have the SHA-256 `sha256` (by default: the one exported with this module, so
    weights of another export never run with this code); sha256=None reads any file that fits.
    """
    if sha256 is not None:
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
        if digest.hexdigest() != sha256:
            raise ValueError(f"{{path}}: not the parameters file exported with this module (its SHA-256 differs: "
                             "an export was interrupted, or files of two exports were mixed); export again, or "
                             "call load_params(path, sha256=None) for parameters you trust")
    with np.load(path, allow_pickle=False) as npz:
        if set(npz.files) != set(PARAMETERS):
            raise ValueError(f"{{path}}: expected parameters {{sorted(PARAMETERS)}}, found {{sorted(npz.files)}}")
        params = {{}}
        for name, (shape, dtype) in PARAMETERS.items():
            array = npz[name]
            if array.shape != shape or array.dtype != np.dtype(dtype):
                raise ValueError(f"{{path}}: parameter {{name!r}} is {{array.dtype}}{{{shape_text}(array.shape)}}, "
                                 f"expected {{dtype}}{{{shape_text}(shape)}}")
            params[name] = xp.asarray(array)
    return params


def _input(name, value):
    shape, dtype = INPUTS[name]
    if isinstance(value, (bool, int, float, complex, list, tuple)):
        value = xp.asarray(value, dtype=dtype)
    else:
        value = xp.asarray(value)
    if (value.dtype != np.dtype(dtype) or value.ndim != len(shape)
            or any(d != -1 and d != n for d, n in zip(shape, value.shape))):
        raise ValueError(f"input {{name!r}}: expected {{dtype}}{{{shape_text}(shape)}}, "
                         f"got {{value.dtype}}{{{shape_text}(value.shape)}}")
    return value


def run(**inputs):
    """Run the Program on its inputs (by name); returns its outputs."""
    unknown = sorted(set(inputs) - set(INPUTS))
    missing = [name for name in INPUTS if name not in inputs]
    if unknown or missing:
        raise TypeError(f"run() takes the inputs {{list(INPUTS)}}; unknown: {{unknown}}, missing: {{missing}}")
    if PARAMETERS and not _params:
        _params.update(load_params())
    outs = program(*[_input(name, inputs[name]) if name in INPUTS else _params[name] for name in ARGS])
    return {returned}
'''


def _dict_source(table):
    if not table:
        return "{}"
    rows = ",\n    ".join(f"{name!r}: ({shape!r}, {dtype!r})" for name, (shape, dtype) in table.items())
    return "{\n    " + rows + ",\n}"


def _comment_block(text, title, width=110):
    """Text as `#` comments: unprintable characters replaced, so nothing can end the comment."""
    lines = ["", f"# {title}"]
    for line in text.split("\n"):
        line = "".join(c if c.isprintable() else "?" for c in line)
        lines.append(("#   " + line)[:width] + (" ..." if len(line) + 4 > width else ""))
    return lines


def _nest_source(gen, program):
    """The expression that rebuilds the function's return value from `outs`."""
    consts = program.output_consts
    leaves, it = [], iter(range(len(program.outputs)))
    for i in range(program.output_tree.num_leaves):
        leaves.append(gen.attr(consts[i]) if i in consts else f"outs[{next(it)}]")
    leaves = iter(leaves)

    def build(td):
        if td.kind == "leaf":
            return next(leaves)
        kids = [build(c) for c in td.children]
        if td.kind == "tuple":
            return "(" + ", ".join(kids) + ("," if len(kids) == 1 else "") + ")"
        if td.kind == "list":
            return "[" + ", ".join(kids) + "]"
        if td.kind == "dict":
            return "{" + ", ".join(f"{gen.sources.const_source(k)}: {v}" for k, v in zip(td.keys, kids)) + "}"
        raise ExportError(f"cannot export a namedtuple output ({td.keys[0].__name__}); return a tuple or dict")
    return build(program.output_tree)


# --- the Program's function ----------------------------------------------------------------

class _ExportCodegen(Codegen):
    """The executor's generator, writing kernels and constants into the module instead of a namespace."""

    def __init__(self, program, sources):
        super().__init__(program)
        self.sources = sources
        self.kernels = {}
        self.constants = []

    def kernel(self, op_type, opdef):
        name = self.kernels.get(op_type)
        if name is None:
            hint = "k_" + "".join(c if c.isalnum() else "_" for c in op_type)
            name = self.sources.function(opdef.kernel, hint, f"op '{op_type}'")
            self.kernels[op_type] = name
        return name

    def constant(self, value):
        name = self.sources.unique(f"c_{len(self.constants) + 1}")
        self.constants.append(f"{name} = {self.sources.const_source(value)}")
        return name

    def attr(self, value):
        if is_literal(value) and len(repr(value)) <= _INLINE_LIMIT:
            return repr(value)
        return self.constant(value)


# --- copying kernels' source ------------------------------------------------------------------

def _stdlib_or_installed(module_name):
    """Modules to import rather than copy: the standard library and installed packages."""
    top = module_name.split(".")[0]
    if top in _OUR_PACKAGES:
        return False
    if top in sys.stdlib_module_names or top in ("numpy", "cupy"):
        return True
    module = sys.modules.get(top)
    origin = getattr(module, "__file__", None) or ""
    return any(origin.startswith(p) for p in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})


class _Sources:
    """Kernel functions, the helpers they call, modules and constants they use: as module source."""

    def __init__(self, reserved):
        self.taken = set(reserved) | set(dir(builtins))
        self.imports = []       # import lines beyond the fixed header
        self.chunks = []        # function sources and constant assignments
        self.emitted = {}       # id(object) -> name in the module
        self._alive = []        # keeps emitted objects alive so their ids stay theirs

    def unique(self, base):
        name, n = base, 2
        while name in self.taken or keyword.iskeyword(name):
            name, n = f"{base}_{n}", n + 1
        self.taken.add(name)
        return name

    def _record(self, obj, name):
        self.emitted[id(obj)] = name
        self._alive.append(obj)
        return name

    def preload(self, module, name):
        self.taken.add(name)
        self._record(module, name)

    # --- references from copied code ---------------------------------------------------
    def reference(self, value, hint, what):
        """The module-level name under which copied code reaches `value` (emitting it once)."""
        if id(value) in self.emitted:
            return self.emitted[id(value)]
        if isinstance(value, types.ModuleType):
            if value.__name__.split(".")[0] in _OUR_PACKAGES:
                raise ExportError(f"{what}: its kernel uses the module {value.__name__}, which the standalone "
                                  "file cannot import")
            name = self.unique(hint)
            self.imports.append(f"import {value.__name__}" if name == value.__name__
                                else f"import {value.__name__} as {name}")
            return self._record(value, name)
        if isinstance(value, types.FunctionType) and not _stdlib_or_installed(value.__module__):
            return self.function(value, hint, what)
        if isinstance(value, type) and not _stdlib_or_installed(value.__module__):
            return self.class_(value, hint, what)
        module_name, attr = getattr(value, "__module__", None), getattr(value, "__name__", None)
        if isinstance(module_name, str) and isinstance(attr, str) and _stdlib_or_installed(module_name) \
                and getattr(sys.modules.get(module_name), attr, None) is value:
            name = self.unique(hint)
            self.imports.append(f"from {module_name} import {attr}" + ("" if name == attr else f" as {name}"))
            return self._record(value, name)
        try:
            source = self.const_source(value)
        except ExportError:
            raise ExportError(f"{what}: its kernel uses {hint!r} ({type(value).__name__}), which cannot be "
                              "copied into a standalone file") from None
        name = self.unique(hint)
        self.chunks.append(f"{name} = {source}")
        return self._record(value, name)

    def const_source(self, value):
        """Python source for plain data (non-finite floats and complex numbers included)."""
        if value is None or isinstance(value, (bool, int, str, bytes)):
            return repr(value)
        if isinstance(value, float):
            return repr(value) if math.isfinite(value) else f"float({repr(value)!r})"
        if isinstance(value, complex):
            return f"complex({self.const_source(value.real)}, {self.const_source(value.imag)})"
        if isinstance(value, np.generic):
            return self.const_source(value.item())
        if isinstance(value, tuple):
            items = [self.const_source(v) for v in value]
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        if isinstance(value, list):
            return "[" + ", ".join(self.const_source(v) for v in value) + "]"
        if isinstance(value, dict):
            return "{" + ", ".join(f"{self.const_source(k)}: {self.const_source(v)}" for k, v in value.items()) + "}"
        if isinstance(value, (set, frozenset)):
            return f"{type(value).__name__}([" + ", ".join(self.const_source(v) for v in value) + "])"
        if isinstance(value, np.dtype) and value.name in DTYPES:
            return f"{self.reference(np, 'np', 'a dtype constant')}.dtype({value.name!r})"
        raise ExportError(f"cannot write a {type(value).__name__} as source")

    # --- functions --------------------------------------------------------------------------
    def function(self, fn, hint, what):
        """Copy `fn` (a def or a lambda) into the module under a fresh name; returns the name."""
        if id(fn) in self.emitted:
            return self.emitted[id(fn)]
        if not isinstance(fn, types.FunctionType):
            raise ExportError(f"{what}: its kernel {fn!r} is not a Python function, so its source cannot be copied")
        name = self._record(fn, self.unique(hint))
        node = self._function_node(fn, what)
        node.name = name
        node.decorator_list = []
        node.returns = None
        args = node.args
        for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
            if a is not None:
                a.annotation = None
        # defaults are evaluated where the kernel was defined (a loop variable, say): bind their values
        defaults = fn.__defaults__ or ()
        kwdefaults = fn.__kwdefaults__ or {}
        args.defaults = [self._const_node(v, what) for v in defaults]
        args.kw_defaults = [self._const_node(kwdefaults[a.arg], what) if a.arg in kwdefaults else None
                            for a in args.kwonlyargs]
        closure = {}
        for var, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            try:
                closure[var] = cell.cell_contents
            except ValueError:
                raise ExportError(f"{what}: its kernel reads '{var}' before it is assigned") from None
        self._link(node, fn.__globals__, closure, fn.__qualname__, what)
        return name

    def class_(self, cls, hint, what):
        """Copy a class (a kernel's return type, say) defined at the top of one of our modules."""
        name = self._record(cls, self.unique(hint))
        module = sys.modules.get(cls.__module__)
        filename = getattr(module, "__file__", None)
        tree = self._parse(filename, vars(module) if module else {}, what, cls.__qualname__)
        found = tree.classes.get(cls.__qualname__, [])
        if len(found) != 1:
            raise ExportError(f"{what}: cannot find the source of the class {cls.__qualname__} its kernel uses")
        node = copy.deepcopy(found[0])
        node.name = name
        self._link(node, vars(module), {}, cls.__qualname__, what)
        return name

    def _link(self, node, globals_, closure, qualname, what):
        """Bind what the copied def/class reads from outside it, then add its source to the module."""
        prelude, renames = [], {}
        for free in _free_names(node, what):
            if free in closure and _is_data(closure[free]):
                prelude.append(ast.parse(f"{free} = {self.const_source(closure[free])}").body[0])
            elif free in closure:
                renames[free] = self.reference(closure[free], free, what)
            elif free in globals_:
                renames[free] = self.reference(globals_[free], free, what)
            elif not hasattr(builtins, free):
                raise ExportError(f"{what}: its kernel {qualname} uses the undefined name '{free}'")
        _Rename(renames).visit(node)
        docstring = bool(node.body) and isinstance(node.body[0], ast.Expr) and \
            isinstance(getattr(node.body[0], "value", None), ast.Constant) and isinstance(node.body[0].value.value, str)
        node.body[docstring:docstring] = prelude
        self.chunks.append(ast.unparse(ast.fix_missing_locations(node)))

    def _parse(self, filename, globals_, what, qualname):
        lines = linecache.getlines(filename, globals_) if filename else []
        if not lines:
            raise ExportError(f"{what}: the source of {qualname} is not available (define it in a .py file)")
        return _module_index(filename, "".join(lines))

    def _const_node(self, value, what):
        try:
            return ast.parse(self.const_source(value), mode="eval").body
        except ExportError:
            raise ExportError(f"{what}: a default argument of its kernel ({type(value).__name__}) cannot be "
                              "written as source") from None

    def _function_node(self, fn, what):
        """The def (or lambda, turned into a def) that made `fn`, found in its module's parsed source."""
        code = fn.__code__
        tree = self._parse(code.co_filename, fn.__globals__, what, fn.__qualname__)
        if code.co_name == "<lambda>":
            found = [n for n in tree.lambdas.get(code.co_firstlineno, [])
                     if _arg_names(n.args) == _code_arg_names(code)]
        else:    # co_name: the name in the source, even when __name__ was reassigned
            found = tree.functions.get((code.co_name, code.co_firstlineno), [])
        if len(found) != 1:
            raise ExportError(f"{what}: cannot find the source of its kernel {fn.__qualname__} "
                              f"({code.co_filename}:{code.co_firstlineno}); define it with `def`")
        node = copy.deepcopy(found[0])
        if isinstance(node, ast.Lambda):
            node = ast.FunctionDef(name="kernel", args=node.args, body=[ast.Return(value=node.body)],
                                   decorator_list=[], returns=None, type_comment=None)
        return node


class _ModuleIndex:
    """A module's parsed source, indexed the way kernels are looked up."""

    def __init__(self, text):
        self.text = text
        self.functions, self.lambdas, self.classes = {}, {}, {}
        tree = ast.parse(text)
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef):
                first = (node.decorator_list[0] if node.decorator_list else node).lineno
                self.functions.setdefault((node.name, first), []).append(node)
            elif isinstance(node, ast.Lambda):
                self.lambdas.setdefault(node.lineno, []).append(node)
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                self.classes.setdefault(node.name, []).append(node)


_INDEXES = {}   # filename -> _ModuleIndex of the text last read (re-parsed when the file changes)


def _module_index(filename, text):
    index = _INDEXES.get(filename)
    if index is None or index.text != text:
        index = _INDEXES[filename] = _ModuleIndex(text)
    return index


def _is_data(value):
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return True
    if isinstance(value, (tuple, list, set, frozenset)):
        return all(_is_data(v) for v in value)
    if isinstance(value, dict):
        return all(_is_data(k) and _is_data(v) for k, v in value.items())
    return False


def _arg_names(args):
    names = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
    return names + [a.arg for a in (args.vararg, args.kwarg) if a is not None]


def _code_arg_names(code):
    n = code.co_argcount + code.co_kwonlyargcount
    n += bool(code.co_flags & inspect.CO_VARARGS) + bool(code.co_flags & inspect.CO_VARKEYWORDS)
    return list(code.co_varnames[:n])


def _free_names(node, what):
    """Names the function reads but never binds, in order of first use."""
    bound, loads = set(), []
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            (loads.append if isinstance(n.ctx, ast.Load) else bound.add)(n.id)
        elif isinstance(n, ast.arg):
            bound.add(n.arg)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n is not node:
            bound.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            modules = [n.module or ""] if isinstance(n, ast.ImportFrom) else [a.name for a in n.names]
            if getattr(n, "level", 0) or any(m.split(".")[0] in _OUR_PACKAGES for m in modules):
                raise ExportError(f"{what}: its kernel imports from dy2static ({ast.unparse(n)}), which a "
                                  "standalone file cannot")
            bound.update((a.asname or a.name).split(".")[0] for a in n.names)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            bound.add(n.name)
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            raise ExportError(f"{what}: its kernel uses `global`/`nonlocal`, which a standalone copy cannot keep")
    return list(dict.fromkeys(name for name in loads if name not in bound))


class _Rename(ast.NodeTransformer):
    def __init__(self, renames):
        self.renames = {k: v for k, v in renames.items() if k != v}

    def visit_Name(self, node):
        if node.id in self.renames:
            node.id = self.renames[node.id]
        return node
