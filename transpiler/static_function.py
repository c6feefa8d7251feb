"""StaticFunction: a function (or method) run as a static Program, traced per input signature.

It converts its function once (lazily, see `conversion`), traces the converted
code once per input signature into a Program, compiles it, and afterwards runs
only the compiled plan (the steady state: one generated `fast_call`). Also
`converted_callable`, what converted code calls in place of a user's function.
"""
import collections
import functools
import inspect
import threading
import types
import warnings
import weakref

import numpy as np

import runtime as rt
from runtime import pytree, rng, tracing
from runtime.deploy import program_from_payload, program_payload
from runtime.autodiff.static_call import backward_program, draws_random, record_call
from runtime.autodiff.tape import GRAD_MODE
from runtime.errors import SymbolicBoolError
from runtime.codegen.plan import wrap_output
from runtime.executor import Executor
from runtime.passes import run_passes

from . import effects, emit, guards
from .conversion import NOT_TO_STATIC, convert_function, converted_source, is_user_function
from .errors import ConversionError, recursion_error, relocate, warn_fallback
from .fast_call import MISS, compile_fast_call
from .parsing import parse_function
from .signatures import (as_spec, check_against_spec, device_of, feed_array, is_tensor_like, leaf_name,
                         retrace_reason)

def converted_callable(obj):
    """What converted code calls in place of obj: its converted form when obj is user code."""
    if isinstance(obj, StaticFunction):
        return obj.traceable()
    if isinstance(obj, types.FunctionType):
        if not is_user_function(obj):
            return obj
        _note_reads(obj)
        return convert_function(obj)
    if isinstance(obj, types.MethodType):
        if not isinstance(obj.__func__, types.FunctionType) or not is_user_function(obj.__func__):
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
    if isinstance(call, types.FunctionType) and not isinstance(obj, type) and is_user_function(call):
        _note_reads(call, obj)
        return types.MethodType(convert_function(call), obj)
    return obj


def _note_reads(fn, instance=None):
    """While this thread traces: note the globals, cells and attributes fn may read (see guards)."""
    reads = guards.current()
    if reads is not None:
        reads.function(fn, instance)


tracing.install(call_converter=converted_callable)


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

    _fast_call = None       # an instance's own once a signature has one (one attribute read a call)

    def __init__(self, fn, input_spec=None, full_graph=True, passes=None, instance=None,
                 max_signatures=DEFAULT_MAX_SIGNATURES):
        if not isinstance(max_signatures, int) or isinstance(max_signatures, bool) or max_signatures < 1:
            raise ValueError(f"max_signatures must be a positive int, got {max_signatures!r}")
        self._fn = fn
        self._instance = instance
        # the specs as given: nests (lists, tuples, dicts) of InputSpecs stand for list/dict arguments
        self._spec_tree = None if input_spec is None else list(input_spec)
        self._input_spec = None if input_spec is None else [as_spec(s) for s in pytree.flatten(list(input_spec))[0]]
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
        fast = self._fast_call      # the last signature's guard + plan call (see fast_call); None: the class's
        if fast is not None and not kwargs:
            out = fast(args)
            if out is not MISS:
                return out
            if args and args[0].__class__ is rt.Tensor:    # mixed signatures: the fast call of this shape
                fast = self._fast_by_shape.get(args[0].array.shape)
                if fast is not None:
                    out = fast(args)
                    if out is not MISS:
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
        arrays = [feed_array(leaves[i], backend) for i in positions]
        for j, t in enumerate(params):
            if t.backend is not backend:
                raise _device_mismatch(traced.program.inputs[traced.n_inputs + j].name, t, plan)
            arrays.append(t.array)
        rng_state = rng.get_state() if GRAD_MODE.enabled and draws_random(traced.program) else None
        outs = plan(*arrays)
        if not kwargs:
            if traced.fast is None or (traced.fast and traced.fast.generation != effects.GENERATION[0]):
                traced.fast = compile_fast_call(self, traced, args, key) or False
            if traced.fast:
                self._fast_call = traced.fast
                if args and args[0].__class__ is rt.Tensor:
                    self._index_fast(args[0].array.shape, key, traced)
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
        return self.get_program(*pytree.unflatten(tree, [as_spec(s) for s in leaves]))

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
            if is_tensor_like(leaf):
                n = len(positions)
                spec = specs[n] if specs is not None and n < len(specs) else None
                positions.append(i)
                if spec is not None:
                    check_against_spec(leaf, spec, self._arg_name(n))
                    parts.append(("T", spec.shape, spec.dtype.str, device_of(leaf)))
                else:
                    parts.append(("T", tuple(leaf.shape), np.dtype(leaf.dtype).str, device_of(leaf)))
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
            name = (base.name if base is not None and base.name else None) or leaf_name(paths[i], names, n)
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
        device = device_of(leaves[positions[0]]) if positions else "cpu"
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
                reason = stale or retrace_reason(self._newest, key)
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
