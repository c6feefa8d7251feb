"""The user-facing jit API: to_static, StaticFunction, not_to_static, to_source.

A StaticFunction converts its function once (lazily), traces the converted
code once per input signature into a Program, compiles it, and afterwards runs
only the compiled plan. The cache key is documented in `signature_key`.
"""
import builtins
import collections
import functools
import inspect
import math
import re
import threading
import types
import warnings
import weakref

import gast
import numpy as np

import runtime as rt
from runtime import pytree, rng, tracing
from runtime.deploy import program_from_payload, program_payload
from runtime.autodiff.static_call import backward_program, draws_random, record_call
from runtime.autodiff.tape import GRAD_MODE
from runtime.errors import SymbolicBoolError
from runtime.codegen.plan import located as located_in_plan, wrap_output
from runtime.executor import Executor
from runtime.passes import run_passes
from runtime.shape_text import shape_text

from . import effects, emit, guards
from .analysis.scope import own_scope
from .errors import ConversionError, recursion_error, relocate, warn_fallback
from .naming import Namer
from .parsing import parse_function
from .transforms import convert_node
from .transforms.calls import is_library_module

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


def _is_user_function(fn):
    if getattr(fn, NOT_TO_STATIC, False) or fn.__code__ in emit.CONVERTED_CODES:
        return False
    if fn.__code__.co_flags & inspect.CO_GENERATOR:
        return False        # a generator called from converted code runs as Python while tracing
    if is_library_module(getattr(fn, "__module__", None)):
        return False
    filename = fn.__code__.co_filename
    return not (filename.startswith("<") or "site-packages" in filename or "dist-packages" in filename)


def converted_callable(obj):
    """What converted code calls in place of obj: its converted form when obj is user code."""
    if isinstance(obj, StaticFunction):
        return obj.traceable()
    if isinstance(obj, types.FunctionType):
        if not _is_user_function(obj):
            return obj
        _note_reads(obj)
        return convert_function(obj)
    if isinstance(obj, types.MethodType):
        if not isinstance(obj.__func__, types.FunctionType) or not _is_user_function(obj.__func__):
            return obj
        _note_reads(obj.__func__, obj.__self__)
        effects.note_instance(obj.__self__)
        return types.MethodType(convert_function(obj.__func__), obj.__self__)
    if isinstance(obj, rt.nn.Layer):
        if obj.__dict__.get("_forward_pre_hooks") or obj.__dict__.get("_forward_post_hooks"):
            return obj      # its __call__ runs the hooks around the converted forward
        forward = obj.forward
        return converted_callable(forward)
    call = getattr(type(obj), "__call__", None)
    if isinstance(call, types.FunctionType) and not isinstance(obj, type) and _is_user_function(call):
        _note_reads(call, obj)
        return types.MethodType(convert_function(call), obj)
    return obj


def _note_reads(fn, instance=None):
    """While this thread traces: note the globals, cells and attributes fn may read (see guards)."""
    reads = guards.current()
    if reads is not None:
        reads.function(fn, instance)


tracing.call_converter = converted_callable


def not_to_static(fn):
    """Leave fn as Python when converted code calls it (it still runs while tracing). A bound method
    marks its function (a method object takes no attributes): every instance's method stays Python."""
    setattr(getattr(fn, "__func__", fn) if isinstance(fn, types.MethodType) else fn, NOT_TO_STATIC, True)
    return fn


def to_source(fn):
    """The converted source of a function, method or StaticFunction."""
    if isinstance(fn, StaticFunction):
        return fn.code
    fn = getattr(fn, "__func__", fn)
    return converted_source(fn)


# --- static functions ----------------------------------------------------------------------

DEFAULT_MAX_SIGNATURES = 64      # traced Programs kept per StaticFunction (least recently used dropped first)
WARN_AT = (8, 32)                 # cache sizes that warn with the latest retrace reasons


class _Traced:
    """One signature's Program, its compiled plan, and what it assumes about the world (`guard`)."""

    __slots__ = ("program", "plan", "param_tensors", "n_inputs", "guard", "keep", "fast", "state",
                 "writes_parameters")

    def __init__(self, program, plan, n_inputs, guard, keep, state):
        self.program = program
        self.plan = plan
        self.n_inputs = n_inputs
        self.param_tensors = [program.parameters[v.name] for v in program.inputs[n_inputs:]]
        self.guard = guards.Guard(guard, self.param_tensors)
        self.keep = keep              # argument objects keyed by identity: alive while this entry is
        self.fast = None
        self.state = state            # effects.StateWrites: objects the function writes
        # a training step (it writes tensors that require grad) never goes on the tape; buffer writes may
        self.writes_parameters = any(t.requires_grad for t, *_ in state.in_place)

    def resolve(self):
        """(None, the captured tensors to feed now) or (why this Program no longer fits, None)."""
        reason, params = self.guard.resolve(self.param_tensors)
        if reason is None and self.state:
            reason = self.state.stale()        # a Python value the last run wrote differs from the baked one
            if reason is None:
                params = self.state.param_tensors(params)
        if reason is None:
            params = effects.current(params)  # followed to what a write-back put in their place
        return reason, params


class StaticFunction:
    """A function (or method) run as a static Program, traced per input signature.

    Thread-safe: any number of threads may call it. Tracing holds the function's
    lock (two threads tracing one signature make one entry); running a cached
    Program holds no lock.
    """

    def __init__(self, fn, input_spec=None, full_graph=True, passes=None, instance=None,
                 max_signatures=DEFAULT_MAX_SIGNATURES):
        if not isinstance(max_signatures, int) or isinstance(max_signatures, bool) or max_signatures < 1:
            raise ValueError(f"max_signatures must be a positive int, got {max_signatures!r}")
        self._fn = fn
        self._instance = instance
        # the specs as given: nests (lists, tuples, dicts) of InputSpecs stand for list/dict arguments
        self._spec_tree = None if input_spec is None else list(input_spec)
        self._input_spec = None if input_spec is None else [_as_spec(s) for s in pytree.flatten(list(input_spec))[0]]
        self._full_graph = full_graph
        self._passes = passes
        self._max_signatures = max_signatures
        self._cache = collections.OrderedDict()   # signature key -> _Traced, least recently used first
        self._trace_lock = threading.RLock()      # held while tracing only
        self._cache_lock = threading.Lock()       # held for a moment around changes of _cache
        self._newest = None                       # the most recently used key (the end of _cache)
        # first argument's shape -> the fast call of a cached entry (mixed-shape serving), most recent last:
        # read without a lock, changed only under _cache_lock, at most max_signatures shapes
        self._fast_by_shape = {}
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
            with self._cache_lock:
                bound = self._bound.get(instance)
                if bound is None:
                    bound = StaticFunction(self._fn, self._spec_tree, self._full_graph, self._passes, instance,
                                           self._max_signatures)
                    self._bound[instance] = bound
        return bound

    @property
    def code(self):
        """The converted Python source (a `not_to_static` function's own: it is traced as written)."""
        if getattr(self._fn, NOT_TO_STATIC, False):
            return parse_function(self._fn).source
        return converted_source(self._fn)

    @property
    def cache_size(self):
        return len(self._cache)

    def rollback(self):
        """The original Python function (bound to the instance for methods)."""
        return self._fn if self._instance is None else types.MethodType(self._fn, self._instance)

    def traceable(self):
        """The converted function, bound: what another static function calls to inline this one."""
        fn = self._fn if getattr(self._fn, NOT_TO_STATIC, False) else convert_function(self._fn)
        reads = guards.current()
        if reads is not None:
            reads.function(self._fn, self._instance)
        if self._instance is not None:
            effects.note_instance(self._instance)
        return fn if self._instance is None else types.MethodType(fn, self._instance)

    def __repr__(self):
        return f"<StaticFunction {self._fn.__qualname__}>"

    def derived(self, wrapper):
        """A static function of `wrapper` (library code calling this one, e.g. its gradient), with this
        one's input_spec and options; it is traced as is, not converted."""
        setattr(wrapper, NOT_TO_STATIC, True)
        return StaticFunction(wrapper, self._spec_tree, self._full_graph, self._passes,
                              max_signatures=self._max_signatures)

    # --- calling ---------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        fast = self.__dict__.get("_fast_call")      # the last signature's guard + plan call (see _fast_call)
        if fast is not None and not kwargs:
            out = fast(args)
            if out is not _MISS:
                return out
            if args and args[0].__class__ is rt.Tensor:    # mixed signatures: the fast call of this shape
                fast = self._fast_by_shape.get(args[0].data.shape)
                if fast is not None:
                    out = fast(args)
                    if out is not _MISS:
                        self._fast_call = fast
                        return out
        if tracing.current_block() is not None:
            return self.traceable()(*args, **kwargs)
        if self._fallback is not None:
            return self.rollback()(*args, **kwargs)
        leaves, treedef = pytree.flatten((args, kwargs))
        key, positions, keep = self._signature(leaves, treedef)
        try:
            traced, params = self._find_or_trace(key, leaves, treedef, positions, keep, (args, kwargs))
        except ConversionError as e:
            if self._full_graph:
                raise
            self._fallback = e
            self.__dict__.pop("_fast_call", None)      # every call runs eagerly from now on
            warn_fallback(self._fn, e)
            return self.rollback()(*args, **kwargs)
        plan = traced.plan
        backend = plan.backend
        arrays = [_array(leaves[i], backend) for i in positions]
        for j, t in enumerate(params):
            if t.backend is not backend:
                raise _device_mismatch(traced.program.inputs[traced.n_inputs + j].name, t, plan)
            arrays.append(t.data)
        rng_state = rng.get_state() if GRAD_MODE.enabled and draws_random(traced.program) else None
        outs = plan(*arrays)
        if not kwargs:
            if traced.fast is None or (traced.fast and traced.fast.generation != effects.GENERATION[0]):
                traced.fast = _fast_call(self, traced, args, key) or False
            if traced.fast:
                self._fast_call = traced.fast
                if args and args[0].__class__ is rt.Tensor:
                    self._index_fast(args[0].data.shape, key, traced)
        outs = [wrap_output(o, backend) for o in outs]
        if GRAD_MODE.enabled and not traced.writes_parameters:   # on the tape as one op when some input or
            # captured tensor requires grad; a Program that writes tensors requiring grad (a training step)
            # is not a function of them that a later backward() could go through; one that writes buffers
            # only (BatchNorm's running statistics while training) is one
            record_call(traced.program, arrays, [leaves[i] for i in positions] + list(params), outs, backend,
                        rng_state)
        traced.state.store(outs)
        return tracing.rebuild_outputs(traced.program, outs)

    def get_program(self, *args, optimized=False, grad=False, **kwargs):
        """The Program for these arguments (Tensors, arrays or InputSpecs), as traced or after passes.

        `grad=True`: its backward Program instead — what `backward()` runs for this call: inputs are
        the forward's inputs (captured tensors included) and `d_<output>` cotangents, outputs the
        cotangents of every float input, in order."""
        leaves, treedef = pytree.flatten((args, kwargs))
        key, positions, keep = self._signature(leaves, treedef)
        traced, params = self._find_or_trace(key, leaves, treedef, positions, keep)
        program = traced.program
        for var, tensor in zip(program.inputs[traced.n_inputs:], params):
            program.parameters[var.name] = tensor      # what a call would feed now (a rebound global, ...)
        if grad:
            program = backward_program(program)
        return run_passes(program, self._passes) if optimized else program

    def deployed_program(self, input_spec=None):
        """The Program that stands for this function when it is saved, exported or pickled.

        The one traced for `input_spec` (else the input_spec given to to_static);
        with neither, the only signature traced so far. Several traced signatures
        and no spec is a ValueError: which Program to ship is the caller's choice.
        """
        specs = input_spec if input_spec is not None else self._spec_tree
        if specs is None:
            with self._cache_lock:
                entries = list(self._cache.values())
            if len(entries) == 1:
                return entries[0].program
            traced = f"been traced for {self.cache_size} signatures" if self.cache_size else "not been traced yet"
            raise ValueError(f"{self!r}: pass input_spec=[InputSpec(shape, dtype, name), ...] (to save or export) or "
                             f"use to_static(fn, input_spec=[...]) (to pickle) to say which Program stands for it: "
                             f"it has {traced}")
        leaves, tree = pytree.flatten(list(specs))
        return self.get_program(*pytree.unflatten(tree, [_as_spec(s) for s in leaves]))

    def __reduce__(self):
        """Pickled as a LoadedProgram of `deployed_program()`: Program JSON and parameters, never code.

        Unpickling gives that LoadedProgram (called with the Program's tensor inputs),
        checked as `transpiler.load` checks files.
        """
        program = self.deployed_program()
        device = next((t.device for t in program.parameters.values()), "cpu")
        return program_from_payload, program_payload(program) + (device, None)

    def __copy__(self):         # the copy module would otherwise take __reduce__ and give a LoadedProgram
        copied = object.__new__(StaticFunction)
        copied.__dict__.update(self.__dict__)
        return copied

    def __deepcopy__(self, memo):
        raise TypeError(f"{self!r} cannot be deep-copied (it pickles as its Program); call to_static on a copy "
                        "of the function or layer instead")

    def _find(self, key):
        """(entry, captured tensors to feed) when a cached Program fits; else (None, why the entry for key did not)."""
        traced = self._cache.get(key)
        if traced is None:
            return None, None
        reason, params = traced.resolve()
        if reason is not None:
            return None, reason
        with self._cache_lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                self._newest = key
        return traced, params

    def _find_or_trace(self, key, leaves, treedef, positions, keep, call=None):
        traced, params = self._find(key)
        if traced is not None:
            return traced, params
        with self._trace_lock:             # one trace at a time; a thread that waited finds the entry made
            traced, found = self._find(key)
            if traced is None:
                traced = self._trace(key, leaves, treedef, positions, keep, stale=found, call=call)
                reason, found = traced.resolve()
                if reason is not None:     # the trace itself changed what it read (`self.n += 1`): run it once
                    found = traced.param_tensors
            return traced, found

    def _signature(self, leaves, treedef):
        """The cache key: tensor shapes/dtypes/devices (InputSpec None dims stay dynamic), other
        arguments by exact value (Python and NumPy scalars, see guards.freeze) or else by identity
        (the objects are kept alive with the entry, so an id is never reused while it is a key),
        the argument structure, and a layer's train/eval mode. Returns (key, tensor positions, kept objects)."""
        parts, positions, keep = [], [], []
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
                frozen = guards.freeze(leaf)
                if frozen is None:
                    keep.append(leaf)
                    frozen = ("id", id(leaf), type(leaf).__name__)
                parts.append(("V", frozen))
        training = getattr(self._instance, "training", None)
        return (treedef, tuple(parts), training), positions, keep

    def _arg_name(self, n):
        names = self._param_names()
        return names[n] if n < len(names) else f"argument {n}"

    def _param_names(self):
        params = list(inspect.signature(self._fn).parameters)
        return params[1:] if self._instance is not None else params

    def _trace(self, key, leaves, treedef, positions, keep, stale=None, call=None):
        """Trace and compile one signature, then cache it.

        A trace that fails (any exception, a KeyboardInterrupt included) leaves nothing behind: no
        entry, and every place it wrote holds what it held before — `.grad`s, attributes, globals,
        closure variables, containers and the random generator. The one journal of those places is
        `effects.Effects.written` (runtime.state cells, and what comparing with the snapshots finds).

        `call` is the call's (args, kwargs): lists and dicts it passed that the function writes get
        the new values after each run (see effects.objects.ArgumentWrites)."""
        places = effects.Effects(self._fn, self._instance, *pytree.unflatten(treedef, leaves), call)
        try:
            traced = self._record(leaves, treedef, positions, keep, call, places)
            self._store(key, traced, stale)
        except BaseException:
            _to_the_end(places.undo)
            raise
        return traced

    def _record(self, leaves, treedef, positions, keep, call, places):
        """The trace and compiled plan of one signature; its written places are noted in `places`'s journal."""
        specs = []
        names = self._param_names()
        paths = pytree.leaf_paths(treedef)
        for n, i in enumerate(positions):
            leaf = leaves[i]
            base = self._input_spec[n] if self._input_spec is not None and n < len(self._input_spec) else None
            shape = base.shape if base is not None else tuple(leaf.shape)
            name = (base.name if base is not None and base.name else None) or _leaf_name(paths[i], names, n)
            specs.append(rt.InputSpec(shape, leaf.dtype, name))

        named = list(self._instance.named_parameters()) if isinstance(self._instance, rt.nn.Layer) else []
        if isinstance(self._instance, rt.nn.Layer):
            named += self._instance.named_buffers()
        try:
            with guards.recording() as reads, tracing.parameter_names(named), places.collecting():
                args, kwargs = pytree.unflatten(treedef, leaves)
                labels = {**{id(a): name for a, name in zip(args, names)}, **{id(v): k for k, v in kwargs.items()}}
                for obj in keep:
                    reads.argument(obj, labels.get(id(obj), "an argument"))
                fn = self.traceable()

                def body(*variables):
                    filled = list(leaves)
                    for i, var in zip(positions, variables):
                        filled[i] = var
                    args, kwargs = pytree.unflatten(treedef, filled)
                    places.traced_with(args, kwargs)
                    return fn(*args, **kwargs)
                recording = tracing.record(body, specs, name=self._fn.__name__, keeps_writes=True,
                                           written=places.written)
            program = recording.program
            places.collect()
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
        device = _device(leaves[positions[0]]) if positions else "cpu"
        roots = (call if call is not None else pytree.unflatten(treedef, leaves), self._instance, self._fn,
                 [(f, f.__globals__) for f in [self._fn] + reads.functions])
        state = places.state_writes(program, [program.parameters[v.name] for v in program.inputs[len(positions):]],
                                    roots, recording.made)
        plan = Executor(device, self._passes).compile(state.runnable(program))
        return _Traced(program, plan, len(positions), reads.watches, keep, state)

    def _index_fast(self, shape, key, traced):
        """Serve arguments whose first has this shape with traced's fast call, while traced is the cached entry
        for key (a thread may have evicted it meanwhile); the least recently indexed shape goes first."""
        with self._cache_lock:
            if self._cache.get(key) is not traced or not traced.fast:
                return
            by_shape = self._fast_by_shape      # a plain dict (the read is one dict.get), in insertion order
            by_shape.pop(shape, None)
            by_shape[shape] = traced.fast
            while len(by_shape) > self._max_signatures:
                del by_shape[next(iter(by_shape))]

    def _store(self, key, traced, stale):
        """Cache a new entry (replacing a stale one for the same key), evicting the least recently used."""
        with self._cache_lock:
            if self._cache:
                reason = stale or _retrace_reason(self._newest, key)
                self.retrace_reasons.append(reason)
                del self.retrace_reasons[:-self._max_signatures]
            old = self._cache.pop(key, None)
            self._cache[key] = traced
            self._newest = key
            evicted = [old] if old is not None else []
            while len(self._cache) > self._max_signatures:
                evicted.append(self._cache.popitem(last=False)[1])
            size = len(self._cache)
            dropped = {id(e.fast) for e in evicted if e.fast}
            if id(self.__dict__.get("_fast_call")) in dropped:
                self.__dict__.pop("_fast_call", None)
            if evicted:
                live = {id(e.fast) for e in self._cache.values() if e.fast}
                for shape in [s for s, f in self._fast_by_shape.items() if id(f) not in live]:
                    del self._fast_by_shape[shape]
        recent = "; ".join(self.retrace_reasons[-3:])
        if size in WARN_AT and not (old is not None and len(evicted) == 1):
            warnings.warn(f"{self._fn.__qualname__} has been traced for {size} input signatures "
                          f"(latest retraces: {recent}); pass input_spec with None dims to stop retracing on "
                          "shape changes, or keep Python arguments constant", UserWarning, stacklevel=5)
        elif len(evicted) > (old is not None) and not getattr(self, "_warned_full", False):
            self._warned_full = True
            warnings.warn(f"{self._fn.__qualname__}: more than max_signatures={self._max_signatures} input "
                          f"signatures; the least recently used Programs are dropped and retraced when needed "
                          f"(latest retraces: {recent})", UserWarning, stacklevel=5)


_MISS = guards.MISS
_SCALARS = (bool, int, str, type(None))


def _fast_call(static, traced, args, key):
    """A function running `traced` for arguments of exactly this signature, or returning _MISS.

    Generated per signature: a guard of identity and equality checks on the
    arguments (Tensors on the plan's backend with this shape and dtype, equal
    Python scalars, no trace being recorded in this thread, the layer's train/eval
    mode), the checks of `traced.guard` on the globals, closure cells and
    attributes the trace may have read (captured tensors are read from their
    places here), parameters still on the plan's backend, then the plan's
    function called directly. Anything else returns _MISS and takes the general
    path, which decides, traces and raises exactly as before. None when the
    signature has arguments the guard does not handle (nests, arrays, other objects).
    """
    if traced.state.entries:
        return None     # places written through Python objects after each run: the general path
    if draws_random(traced.program):
        return None     # a backward() through it needs the generator state from before each run: the general path
    plan, program = traced.plan, traced.program
    backend = plan.backend
    ns = {"MISS": _MISS, "STATE": tracing._state, "ACTIVE": tracing._active, "Tensor": rt.Tensor, "BE": backend,
          "FN": plan.fn, "PLAN": plan, "LOCATED": located_in_plan, "WRAP": wrap_output,
          "ND": type(backend.asarray(np.zeros(1))), "REBUILD": tracing.rebuild_outputs, "PROGRAM": program,
          "INST": static._instance, "COPYSIGN": math.copysign}
    lines = [f"if (ACTIVE[0] and STATE.blocks) or len(args) != {len(args)}:", "    return MISS"]
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
        elif type(a) in _SCALARS:
            ns[f"V{i}"] = a
            lines += [f"if args[{i}].__class__ is not {type(a).__name__ if a is not None else 'type(None)'} "
                      f"or args[{i}] != V{i}:", "    return MISS"]
        elif type(a) is float and a == a:
            ns[f"V{i}"], ns[f"SIGN{i}"] = a, math.copysign(1.0, a)      # 0.0 == -0.0, yet 1/x differs
            lines += [f"if args[{i}].__class__ is not float or args[{i}] != V{i} "
                      f"or COPYSIGN(1.0, args[{i}]) != SIGN{i}:", "    return MISS"]
        else:
            return None
    if static._instance is not None and key[2] is not None:
        ns["TRAINING"] = key[2]
        lines += ["if getattr(INST, 'training', None) != TRAINING:", "    return MISS"]
    guard_lines, sources = traced.guard.code(ns)
    lines += guard_lines
    params = []
    for j, (t, source) in enumerate(zip(traced.param_tensors, sources)):
        ns[f"P{j}"] = t
        params.append(source or f"P{j}")
    feeds += [f"{p}.data" for p in params]
    if params:
        lines += ["if " + " or ".join(f"{p}.backend is not BE" for p in params) + ":", "    return MISS"]
    stores = []
    for j, (tensor, k, shape, dtype) in enumerate(traced.state.in_place):   # tensors the Program writes
        ns[f"WT{j}"], ns[f"WS{j}"], ns[f"WD{j}"] = tensor, shape, dtype
        lines += [f"if WT{j}.data.shape != WS{j} or WT{j}.data.dtype != WD{j} or WT{j}.backend is not BE:",
                  "    return MISS"]
        stores.append(f"WT{j}.data = outs[{k}] if outs[{k}].__class__ is ND else WRAP(outs[{k}], BE).data")
    ns["GEN"], ns["G0"] = effects.GENERATION, effects.GENERATION[0]
    lines += ["if GEN[0] != G0:", "    return MISS"]       # a write-back replaced a captured tensor
    lines += ["try:", f"    outs = FN({', '.join(feeds)})", "except Exception as e:",
              "    raise LOCATED(e, PLAN) from None"]
    sources = [] if traced.writes_parameters else [f"a{i}" for i, a in enumerate(args) if type(a) is rt.Tensor] + params
    if sources:
        lines.append(f"fed = [{', '.join(feeds)}]")     # the arrays this run read, before the writes below
    lines += stores
    if sources:     # some input requires grad: the call goes on the tape (see runtime.autodiff.static_call)
        ns["GRAD"], ns["TRACKED"] = GRAD_MODE, _tracked_call
        tracked = " or ".join(f"{s}._ag is not None" for s in sources)
        lines += [f"if ({tracked}) and GRAD.enabled:",
                  f"    return TRACKED(PROGRAM, fed, [{', '.join(sources)}], outs, BE)"]
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


def _to_the_end(fn):
    """Run fn (which may run again from the start: putting back is idempotent) to its end even when a Ctrl-C
    arrives meanwhile; the KeyboardInterrupt is raised after it."""
    interrupted = None
    while True:
        try:
            fn()
            break
        except KeyboardInterrupt as e:
            interrupted = e
    if interrupted is not None:
        raise interrupted


def _tracked_call(program, arrays, sources, outs, backend):
    """The fast call's tail when some input requires grad: wrap, record on the tape, rebuild."""
    outs = [wrap_output(o, backend) for o in outs]
    record_call(program, arrays, sources, outs, backend)
    return tracing.rebuild_outputs(program, outs)


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
            what = [f"{k} {guards.key_part(k, x)} -> {guards.key_part(k, y)}"
                    for k, x, y in zip(("shape", "dtype", "device"), a[1:], b[1:]) if x != y]
            return f"tensor argument {i}: " + ", ".join(what)
        if a[0] == b[0] == "V":
            return f"argument {i}: {guards.show_frozen(a[1])} -> {guards.show_frozen(b[1])}"
        return f"argument {i} kind"
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


def _device_mismatch(name, tensor, plan):
    return ValueError(f"parameter '{name}' is on device '{tensor.device}' but the inputs are on device "
                      f"'{plan.backend.name}'; move the layer (or tensor) with .to('{plan.backend.name}')")


def _leaf_name(path, names, n):
    """An input's name: its parameter's (`inputs_2` for item 2 of a list argument `inputs`, a keyword's
    name for a keyword argument), else `x<n>`."""
    positional = re.match(r"\[0\]\[(\d+)\](.*)$", path)
    if positional and int(positional.group(1)) < len(names):
        base, rest = names[int(positional.group(1))], positional.group(2)
    else:
        keyword = re.match(r"\[1\]\['(\w+)'\](.*)$", path)
        if keyword is None:
            return f"x{n}"
        base, rest = keyword.group(1), keyword.group(2)
    inner = re.findall(r"\w+", rest)
    return "_".join([base] + inner)


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


def _check_against_spec(value, spec, name):
    shape, dtype = tuple(value.shape), np.dtype(value.dtype)
    if len(shape) != len(spec.shape) or any(e != -1 and e != a for e, a in zip(spec.shape, shape)):
        raise ValueError(f"argument '{name}': expected shape {shape_text(spec.shape)} (input_spec), "
                         f"got {shape_text(shape)}")
    if dtype != spec.dtype:
        raise TypeError(f"argument '{name}': expected dtype {spec.dtype.name} (input_spec), got {dtype.name}; "
                        f"cast it with .astype('{spec.dtype.name}')")


def to_static(fn=None, *, input_spec=None, full_graph=True, passes=None, max_signatures=None):
    """Convert fn (a function or method) into a StaticFunction; usable bare or with arguments.

    On a Layer (as `paddle.jit.to_static(net)`) it gives the layer a static `forward` and returns
    the same layer: `net(x)` then runs the Program, parameters stay the layer's own.

    `max_signatures` bounds the traced Programs kept (default DEFAULT_MAX_SIGNATURES): past
    it the least recently used one is dropped (and retraced if it is needed again).
    """
    def wrap(f):
        if isinstance(f, StaticFunction):
            if input_spec is None and passes is None and full_graph and max_signatures is None:
                return f
            return StaticFunction(f._fn, input_spec if input_spec is not None else f._spec_tree, full_graph,
                                  passes if passes is not None else f._passes, f._instance,
                                  max_signatures or f._max_signatures)
        limit = DEFAULT_MAX_SIGNATURES if max_signatures is None else max_signatures
        if isinstance(f, rt.nn.Layer):
            f.forward = wrap(f.forward)          # an instance attribute: shadows the class's forward
            return f
        if isinstance(f, types.MethodType):
            static = StaticFunction(f.__func__, input_spec, full_graph, passes, max_signatures=limit)
            return static.__get__(f.__self__, type(f.__self__))
        if not isinstance(f, types.FunctionType):
            raise TypeError(f"to_static expects a function, a method or a Layer, got {type(f).__name__}")
        return StaticFunction(f, input_spec, full_graph, passes, max_signatures=limit)
    return wrap if fn is None else wrap(fn)
