"""The user-facing jit API: to_static, StaticFunction, not_to_static, to_source.

A StaticFunction converts its function once (lazily), traces the converted
code once per input signature into a Program, compiles it, and afterwards runs
only the compiled plan. The cache key is documented in `signature_key`.
"""
import builtins
import functools
import inspect
import types
import warnings
import weakref

import gast
import numpy as np

import runtime as rt
from runtime import pytree, tracing
from runtime.errors import SymbolicBoolError
from runtime.executor import Executor, wrap_output
from runtime.passes import run_passes

from . import emit, outer_names
from .errors import ConversionError, recursion_error, relocate, warn_fallback
from .naming import Namer
from .parsing import parse_function
from .transforms import convert_node
from .transforms.calls import is_library_module
from . import writeback
from .writeback import StateWrites

_code_cache = {}                              # original code object -> (converted code, source text)
_function_cache = weakref.WeakKeyDictionary()  # original function -> converted function
NOT_TO_STATIC = "__dy2static_not_to_static__"


# --- converting functions ----------------------------------------------------------------

def convert_function(fn):
    """The converted twin of a plain Python function (cached per function and per code object)."""
    cached = _function_cache.get(fn)
    if cached is not None:
        return cached
    entry = _code_cache.get(fn.__code__)
    if entry is None:
        parsed = parse_function(fn)
        returns = return_lines(parsed.node)
        namer = Namer(parsed.node)
        node = convert_node(parsed.node, parsed.filename, namer, _resolver(fn))
        code = emit.emit(node, parsed.filename, fn.__code__.co_freevars)
        entry = _code_cache[fn.__code__] = _Converted(code, node, (parsed.filename, returns))
    converted = emit.instantiate(entry.code, fn)
    converted.__dy2static_returns__ = entry.returns
    _function_cache[fn] = converted
    return converted


class _Converted:
    """One original code object's conversion; its source text is printed only when asked for."""

    __slots__ = ("code", "node", "returns", "_source")

    def __init__(self, code, node, returns):
        self.code, self.node, self.returns, self._source = code, node, returns, None

    @property
    def source(self):
        if self._source is None:
            self._source = emit.source_text(self.node)
        return self._source


def converted_source(fn):
    """The converted source text of a plain function."""
    convert_function(fn)
    return _code_cache[fn.__code__].source


def return_lines(fn_node):
    """Lines of fn's own `return` statements (where a returned value is read)."""
    lines, stack = [], list(fn_node.body)
    while stack:
        node = stack.pop()
        if isinstance(node, gast.Return):
            lines.append(node.lineno)
        if not isinstance(node, (gast.FunctionDef, gast.Lambda, gast.ClassDef)):
            stack.extend(gast.iter_child_nodes(node))
    return sorted(lines)


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


def _is_user_function(fn):
    if getattr(fn, NOT_TO_STATIC, False) or fn.__code__ in emit.CONVERTED_CODES:
        return False
    if is_library_module(getattr(fn, "__module__", None)):
        return False
    filename = fn.__code__.co_filename
    return not (filename.startswith("<") or "site-packages" in filename or "dist-packages" in filename)


def converted_callable(obj):
    """What converted code calls in place of obj: its converted form when obj is user code."""
    if isinstance(obj, StaticFunction):
        return obj.traceable()
    if isinstance(obj, types.FunctionType):
        return convert_function(obj) if _is_user_function(obj) else obj
    if isinstance(obj, types.MethodType):
        func = converted_callable(obj.__func__)
        return obj if func is obj.__func__ else types.MethodType(func, obj.__self__)
    if isinstance(obj, rt.nn.Layer):
        forward = obj.forward
        return converted_callable(forward)
    call = getattr(type(obj), "__call__", None)
    if isinstance(call, types.FunctionType) and not isinstance(obj, type) and _is_user_function(call):
        return types.MethodType(convert_function(call), obj)
    return obj


tracing.call_converter = converted_callable


def not_to_static(fn):
    """Leave fn as Python when converted code calls it (it still runs while tracing)."""
    setattr(fn, NOT_TO_STATIC, True)
    return fn


def to_source(fn):
    """The converted source of a function, method or StaticFunction."""
    if isinstance(fn, StaticFunction):
        return fn.code
    fn = getattr(fn, "__func__", fn)
    return converted_source(fn)


# --- static functions ----------------------------------------------------------------------

class _Traced:
    __slots__ = ("program", "plan", "param_tensors", "n_inputs", "state")

    def __init__(self, program, plan, n_inputs, state):
        self.program = program
        self.plan = plan
        self.n_inputs = n_inputs
        self.param_tensors = [program.parameters[v.name] for v in program.inputs[n_inputs:]]
        self.state = state      # writeback.StateWrites: objects the function writes


class StaticFunction:
    """A function (or method) run as a static Program, traced per input signature."""

    def __init__(self, fn, input_spec=None, full_graph=True, passes=None, instance=None):
        self._fn = fn
        self._instance = instance
        self._input_spec = None if input_spec is None else [_as_spec(s) for s in input_spec]
        self._full_graph = full_graph
        self._passes = passes
        self._cache = {}
        self.retrace_reasons = []     # why each trace after the first happened, e.g. "x: shape (2, 3) -> (4, 3)"
        self._fallback = None
        self._bound = weakref.WeakKeyDictionary()
        functools.update_wrapper(self, fn)

    # descriptor: each instance gets its own StaticFunction and cache
    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        bound = self._bound.get(instance)
        if bound is None:
            bound = StaticFunction(self._fn, self._input_spec, self._full_graph, self._passes, instance)
            self._bound[instance] = bound
        return bound

    @property
    def code(self):
        """The converted Python source."""
        return converted_source(self._fn)

    @property
    def cache_size(self):
        return len(self._cache)

    def rollback(self):
        """The original Python function (bound to the instance for methods)."""
        return self._fn if self._instance is None else types.MethodType(self._fn, self._instance)

    def traceable(self):
        """The converted function, bound: what another static function calls to inline this one."""
        fn = convert_function(self._fn)
        return fn if self._instance is None else types.MethodType(fn, self._instance)

    def __repr__(self):
        return f"<StaticFunction {self._fn.__qualname__}>"

    # --- calling ---------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        fast = self.__dict__.get("_fast_call")      # the last signature's guard + plan call (see _fast_call)
        if fast is not None and not kwargs:
            out = fast(args)
            if out is not _MISS:
                return out
        if tracing.current_block() is not None:
            return self.traceable()(*args, **kwargs)
        if self._fallback is not None:
            return self.rollback()(*args, **kwargs)
        leaves, treedef = pytree.flatten((args, kwargs))
        key, positions = self._signature(leaves, treedef)
        traced = self._cache.get(key)
        if traced is not None and traced.state:
            stale = traced.state.stale()
            if stale is not None:
                self.retrace_reasons.append(stale)
                del self._cache[key]
                traced = None
        if traced is None:
            try:
                traced = self._trace(key, leaves, treedef, positions, (args, kwargs))
            except ConversionError as e:
                if self._full_graph:
                    raise
                self._fallback = e
                self.__dict__.pop("_fast_call", None)      # every call runs eagerly from now on
                warn_fallback(self._fn, e)
                return self.rollback()(*args, **kwargs)
        plan = traced.plan
        arrays = [_array(leaves[i], plan.backend) for i in positions]
        for t in writeback.current(traced.state.param_tensors(traced.param_tensors)):
            if t.backend is not plan.backend:
                raise _device_mismatch(t, traced, plan)
            arrays.append(t.data)
        outs = plan(*arrays)
        backend = plan.backend
        if not kwargs:
            calls = self.__dict__.setdefault("_fast_calls", {})
            if key not in calls or getattr(calls[key], "generation", None) != writeback.GENERATION[0]:
                calls[key] = _fast_call(self, traced, args, key)
            self._fast_call = calls[key]
        outs = [wrap_output(o, backend) for o in outs]
        traced.state.store(outs)
        return tracing.rebuild_outputs(traced.program, outs)

    def get_program(self, *args, optimized=False, **kwargs):
        """The Program for these arguments (Tensors, arrays or InputSpecs), as traced or after passes."""
        leaves, treedef = pytree.flatten((args, kwargs))
        key, positions = self._signature(leaves, treedef)
        traced = self._cache.get(key) or self._trace(key, leaves, treedef, positions)
        return run_passes(traced.program, self._passes) if optimized else traced.program

    def _signature(self, leaves, treedef):
        """The cache key: tensor shapes/dtypes/devices (InputSpec None dims stay dynamic),
        other arguments by value, the argument structure, and a layer's train/eval mode."""
        parts, positions = [], []
        specs = self._input_spec
        for i, leaf in enumerate(leaves):
            if _is_tensor_like(leaf):
                n = len(positions)
                spec = specs[n] if specs is not None and n < len(specs) else None
                positions.append(i)
                if spec is not None:
                    _check_against_spec(leaf, spec, self._arg_name(n))
                    parts.append(("T", spec.shape, spec.dtype.str, _device(leaf)))
                else:
                    parts.append(("T", tuple(leaf.shape), np.dtype(leaf.dtype).str, _device(leaf)))
            else:
                parts.append(("V", _hashable(leaf)))
        training = getattr(self._instance, "training", None)
        return (treedef, tuple(parts), training), positions

    def _arg_name(self, n):
        names = self._param_names()
        return names[n] if n < len(names) else f"argument {n}"

    def _param_names(self):
        params = list(inspect.signature(self._fn).parameters)
        return params[1:] if self._instance is not None else params

    def _trace(self, key, leaves, treedef, positions, call=None):
        fn = self.traceable()
        containers = writeback.ArgumentWrites(self._fn, self._instance, call)
        specs = []
        names = self._param_names()
        for n, i in enumerate(positions):
            leaf = leaves[i]
            base = self._input_spec[n] if self._input_spec is not None and n < len(self._input_spec) else None
            shape = base.shape if base is not None else tuple(leaf.shape)
            name = (base.name if base is not None and base.name else None) or (names[n] if n < len(names) else f"x{n}")
            specs.append(rt.InputSpec(shape, leaf.dtype, name))

        def body(*variables):
            filled = list(leaves)
            for i, var in zip(positions, variables):
                filled[i] = var
            args, kwargs = pytree.unflatten(treedef, filled)
            containers.traced_with(args, kwargs)
            return fn(*args, **kwargs)

        named = list(self._instance.named_parameters()) if isinstance(self._instance, rt.nn.Layer) else []
        objects = writeback.argument_objects(self._fn, self._instance, *pytree.unflatten(treedef, leaves))
        before = writeback.snapshot(objects)
        outer = outer_names.snapshot(self._fn)
        try:
            with tracing.parameter_names(named):
                program, _, _ = rt.trace(body, specs, name=self._fn.__name__)
            writeback.register_writes(program, before)
            outer_names.register(self._fn, outer, program)
            containers.register(program)
        except SymbolicBoolError as e:
            raise _symbolic_bool_conversion_error(e) from None
        except RecursionError as e:
            raise recursion_error(e, emit.CONVERTED_CODES) or e from None
        except ConversionError:
            raise
        except Exception as e:
            located = relocate(e, emit.CONVERTED_CODES) or _returned_undefined(e, self.traceable())
            if located is None:
                raise
            located.original = e
            raise located from None
        state = StateWrites(program, [program.parameters[v.name] for v in program.inputs[len(positions):]])
        device = _device(leaves[positions[0]]) if positions else "cpu"
        plan = Executor(device, self._passes).compile(state.runnable(program))
        traced = _Traced(program, plan, len(positions), state)
        if self._cache:
            self.retrace_reasons.append(_retrace_reason(list(self._cache)[-1], key))
        self._cache[key] = traced
        if len(self._cache) in (8, 32, 128):
            recent = "; ".join(self.retrace_reasons[-3:])
            warnings.warn(f"{self._fn.__qualname__} has been traced for {len(self._cache)} input signatures "
                          f"(latest retraces: {recent}); pass input_spec with None dims to stop retracing on "
                          "shape changes, or keep Python arguments constant", UserWarning, stacklevel=3)
        return traced


_MISS = object()
_SCALARS = (bool, int, str, type(None))


def _fast_call(static, traced, args, key):
    """A function running `traced` for arguments of exactly this signature, or returning _MISS.

    Generated per signature: a guard of identity and equality checks on the
    arguments (Tensors on the plan's backend with this shape and dtype, equal
    Python scalars, no trace being recorded, the layer's train/eval mode,
    parameters still on the plan's backend), then the plan's function called
    directly. Anything else returns _MISS and takes the general path, which
    decides, traces and raises exactly as before. None when the signature has
    arguments the guard does not handle (nests, arrays, other objects).
    """
    from runtime.executor import _located
    if traced.state:
        return None     # objects to write after each run: the general path
    plan, program = traced.plan, traced.program
    backend = plan.backend
    ns = {"MISS": _MISS, "blocks": tracing._blocks, "Tensor": rt.Tensor, "BE": backend, "FN": plan.fn,
          "PLAN": plan, "LOCATED": _located, "WRAP": wrap_output, "ND": type(backend.asarray(np.zeros(1))),
          "REBUILD": tracing.rebuild_outputs, "PROGRAM": program, "INST": static._instance}
    lines = [f"if blocks or len(args) != {len(args)}:", "    return MISS"]
    feeds = []
    specs = static._input_spec
    for i, a in enumerate(args):
        if type(a) is rt.Tensor:
            n = len(feeds)
            spec = specs[n] if specs is not None and n < len(specs) else None
            shape = spec.shape if spec is not None else tuple(a.data.shape)
            ns[f"DT{i}"] = np.dtype(spec.dtype if spec is not None else a.data.dtype)
            lines += [f"a{i} = args[{i}]", f"if a{i}.__class__ is not Tensor or a{i}.backend is not BE:",
                      "    return MISS", f"d{i} = a{i}.data", f"s{i} = d{i}.shape"]
            if -1 in shape:
                dims = " or ".join(f"s{i}[{k}] != {d}" for k, d in enumerate(shape) if d != -1)
                test = f"len(s{i}) != {len(shape)}" + (f" or {dims}" if dims else "")
            else:
                test = f"s{i} != {shape!r}"
            lines += [f"if {test} or (d{i}.dtype is not DT{i} and d{i}.dtype != DT{i}):", "    return MISS"]
            feeds.append(f"d{i}")
        elif type(a) in _SCALARS or (type(a) is float and a == a):
            ns[f"V{i}"] = a
            lines += [f"if args[{i}].__class__ is not {type(a).__name__ if a is not None else 'type(None)'} "
                      f"or args[{i}] != V{i}:", "    return MISS"]
        else:
            return None
    if static._instance is not None and key[2] is not None:
        ns["TRAINING"] = key[2]
        lines += ["if getattr(INST, 'training', None) != TRAINING:", "    return MISS"]
    for j, t in enumerate(writeback.current(traced.param_tensors)):
        ns[f"P{j}"] = t
        feeds.append(f"P{j}.data")
    if traced.param_tensors:
        lines += ["if " + " or ".join(f"P{j}.backend is not BE" for j in range(len(traced.param_tensors))) + ":",
                  "    return MISS"]
    ns["GEN"], ns["G0"] = writeback.GENERATION, writeback.GENERATION[0]
    lines += ["if GEN[0] != G0:", "    return MISS"]       # a write-back replaced a captured tensor
    lines += ["try:", f"    outs = FN({', '.join(feeds)})", "except Exception as e:",
              "    raise LOCATED(e, PLAN) from None"]
    wrapped = [f"(Tensor(outs[{k}], BE) if outs[{k}].__class__ is ND else WRAP(outs[{k}], BE))"
               for k in range(len(program.outputs))]
    tree = program.output_tree
    if not program.output_consts and tree == pytree.LEAF and len(wrapped) == 1:
        lines.append(f"return {wrapped[0]}")
    elif (not program.output_consts and tree.kind == "tuple" and len(tree.children) == len(wrapped)
          and all(c == pytree.LEAF for c in tree.children)):
        lines.append(f"return ({', '.join(wrapped)}{',' if len(wrapped) == 1 else ''})")
    else:
        lines.append(f"return REBUILD(PROGRAM, [{', '.join(wrapped)}])")
    source = "def fast(args):\n" + "\n".join("    " + line for line in lines) + "\n"
    exec(compile(source, f"<dy2static call {static._fn.__qualname__}>", "exec"), ns)
    ns["fast"].generation = ns["G0"]
    return ns["fast"]


def _retrace_reason(old, new):
    """What differs between two signature keys, in words."""
    (old_tree, old_parts, old_mode), (new_tree, new_parts, new_mode) = old, new
    if old_mode != new_mode:
        return f"layer mode {'train' if old_mode else 'eval'} -> {'train' if new_mode else 'eval'}"
    if old_tree != new_tree or len(old_parts) != len(new_parts):
        return f"argument structure {old_tree} -> {new_tree}"
    for i, (a, b) in enumerate(zip(old_parts, new_parts)):
        if a == b:
            continue
        if a[0] == b[0] == "T":
            what = [f"{k} {x} -> {y}" for k, x, y in zip(("shape", "dtype", "device"), a[1:], b[1:]) if x != y]
            return f"tensor argument {i}: " + ", ".join(what)
        return f"argument {i}: {a[1][-1]!r} -> {b[1][-1]!r}" if a[0] == b[0] == "V" else f"argument {i} kind"
    return "unknown"


def _symbolic_bool_conversion_error(error):
    """bool() of a Variable reached from converted code: the user's line, and why it was not converted."""
    filename, lineno = _innermost_outside_us(error.__traceback__)
    return ConversionError(
        "a tensor-dependent condition is used where it cannot become a graph op (bool() of a tensor, "
        "in a function marked @not_to_static, or in code that is not converted)", filename, lineno,
        "write it as an if/while in converted code, or use rt.where / rt.cond")


def _innermost_outside_us(tb):
    """(file, line) of the innermost frame that is the user's code (converted or not)."""
    found = (None, None)
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if not filename.startswith(tracing._SKIP_DIRS) and not filename.startswith("<"):
            found = (filename, tb.tb_lineno)
        tb = tb.tb_next
    return found


def _returned_undefined(error, converted):
    """An Undefined found among the function's results: name the return statement(s) that read it."""
    filename, lines = getattr(getattr(converted, "__func__", converted), "__dy2static_returns__", (None, []))
    if not isinstance(error, UnboundLocalError) or not lines:
        return None
    where = ", ".join(str(n) for n in lines)
    return UnboundLocalError(f"{error}; it is returned at line {where}\n  File \"{filename}\", line {lines[-1]}")


def _device_mismatch(tensor, traced, plan):
    name = next(n for n, t in traced.program.parameters.items() if t is tensor)
    return ValueError(f"parameter '{name}' is on device '{tensor.device}' but the inputs are on device "
                      f"'{plan.backend.name}'; move the layer (or tensor) with .to('{plan.backend.name}')")


def _as_spec(spec):
    if isinstance(spec, rt.InputSpec):
        return spec
    if isinstance(spec, (rt.Tensor, np.ndarray)):
        return rt.InputSpec.from_value(spec)
    raise TypeError(f"input_spec entries must be InputSpec, Tensor or ndarray, got {type(spec).__name__}")


def _is_tensor_like(value):
    return isinstance(value, (rt.Tensor, np.ndarray, rt.InputSpec))


def _device(value):
    return value.backend.name if isinstance(value, rt.Tensor) else "cpu"


def _array(value, backend):
    if isinstance(value, rt.Tensor) and value.backend is backend:
        return value.data
    if isinstance(value, rt.InputSpec):
        raise TypeError("an InputSpec describes an input; call the function with a tensor")
    return backend.asarray(value.data if isinstance(value, rt.Tensor) else value)


def _hashable(value):
    try:
        hash(value)
    except TypeError:
        return ("id", id(value))
    if isinstance(value, (bool, int, float, complex, str, bytes, type(None))):
        return (type(value), value)
    return ("id", id(value))


def _check_against_spec(value, spec, name):
    shape, dtype = tuple(value.shape), np.dtype(value.dtype)
    expected = ", ".join("None" if d == -1 else str(d) for d in spec.shape)
    if len(shape) != len(spec.shape) or any(e != -1 and e != a for e, a in zip(spec.shape, shape)):
        raise ValueError(f"argument '{name}': expected shape [{expected}] (input_spec), got {list(shape)}")
    if dtype != spec.dtype:
        raise TypeError(f"argument '{name}': expected dtype {spec.dtype.name} (input_spec), got {dtype.name}; "
                        f"cast it with .astype('{spec.dtype.name}')")


def to_static(fn=None, *, input_spec=None, full_graph=True, passes=None):
    """Convert fn (a function or method) into a StaticFunction; usable bare or with arguments."""
    def wrap(f):
        if isinstance(f, StaticFunction):
            if input_spec is None and passes is None and full_graph:
                return f
            return StaticFunction(f._fn, input_spec if input_spec is not None else f._input_spec, full_graph,
                                  passes if passes is not None else f._passes, f._instance)
        if isinstance(f, types.MethodType):
            static = StaticFunction(f.__func__, input_spec, full_graph, passes)
            return static.__get__(f.__self__, type(f.__self__))
        if not isinstance(f, types.FunctionType):
            raise TypeError(f"to_static expects a function or method, got {type(f).__name__}")
        return StaticFunction(f, input_spec, full_graph, passes)
    return wrap if fn is None else wrap(fn)

