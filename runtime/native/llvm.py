"""llvmlite, loaded once: the host's target machine, modules compiled to callable functions.

llvmlite is a dependency (the native tier is on by default) but may be missing: `engine()` is None when
it is absent or does not initialise, and callers fall back to the NumPy plan. The native code reads NumPy arrays
through `PyArrayObject`'s public struct layout; `ARRAY_LAYOUT` holds the offsets, checked against
live arrays at load (`layout_ok`), so a NumPy or CPython build with another layout turns the tier off
instead of reading the wrong field.
"""
import atexit
import ctypes
import os
import threading
from importlib.util import find_spec as _find_spec

import numpy as np

# Byte offsets in PyArrayObject_fields (and PyArray_Descr.type_num) on 64-bit CPython.
ARRAY_LAYOUT = {"ob_type": 8, "data": 16, "nd": 24, "dimensions": 32, "strides": 40, "descr": 56,
                "type_num": 28}

_LOCK = threading.Lock()
_STATE = {}
EXIT_WAIT_S = 60.0      # the longest exit waits for LLVM calls in flight (one call takes well under that)


class _Gate:
    """LLVM calls in flight, closed at interpreter exit. Exit runs C++ static destructors that tear down
    LLVM's globals; a compile still inside LLVM in the (daemon) compiler thread then aborts the process
    with an LLVM assertion after the user's program has finished. Exit waits for the calls inside instead,
    and a call after it raises (the job fails; its region was going to be dropped anyway)."""

    def __init__(self):
        self.inside = 0
        self.closed = False
        self.changed = threading.Condition()

    def __enter__(self):
        with self.changed:
            if self.closed:
                raise RuntimeError("not compiled: the interpreter is exiting")
            self.inside += 1

    def __exit__(self, *exc):
        with self.changed:
            self.inside -= 1
            self.changed.notify_all()

    def close(self, timeout=EXIT_WAIT_S):
        """Refuse new calls; wait (at most `timeout` s) until none is inside. True when none is."""
        with self.changed:
            self.closed = True
            return self.changed.wait_for(lambda: not self.inside, timeout)


GATE = _Gate()
atexit.register(lambda: GATE.close())


def _after_fork_in_child():
    """A forked child has no thread inside LLVM (and the gate's lock may have been held at the fork)."""
    global GATE
    GATE = _Gate()


os.register_at_fork(after_in_child=_after_fork_in_child)


class Engine:
    """One LLVM JIT: `compile(module_text, names)` -> {name: address}; the engines stay alive with it."""

    def __init__(self, llvm):
        self.llvm = llvm
        target = llvm.Target.from_default_triple()
        # host CPU and features (vector width), default optimisation; no fast-math anywhere: IEEE bits
        self.target_machine = target.create_target_machine(
            cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(), opt=2)
        # the same, position-independent: object code that is linked, cached and loaded anywhere in memory
        self.pic_machine = target.create_target_machine(
            cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(), opt=2, reloc="pic")
        self.engines = []

    def optimized(self, text):
        """The module parsed, verified and optimised (O2, no fast-math)."""
        llvm = self.llvm
        with GATE:
            module = llvm.parse_assembly(text)
            module.verify()
            pto = llvm.create_pipeline_tuning_options(speed_level=2)
            pb = llvm.create_pass_builder(self.target_machine, pto)
            pb.getModulePassManager().run(module, pb)
        return module

    def emit_object(self, text):
        """The module as position-independent object code (bytes), for objects.py and the disk cache."""
        module = self.optimized(text)
        with GATE, _LOCK:
            return self.pic_machine.emit_object(module)

    def load_object(self, obj, names):
        """({name: address}, the engine) for object code made by emit_object."""
        llvm = self.llvm
        with GATE, _LOCK:
            engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), self.pic_machine)
            engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
            engine.finalize_object()
            self.engines.append(engine)
        return {name: engine.get_global_value_address(name) for name in names}, engine

    def compile(self, text, names):
        module = self.optimized(text)
        with GATE, _LOCK:
            engine = self.llvm.create_mcjit_compiler(module, self.target_machine)
            engine.finalize_object()
            self.engines.append(engine)
        return {name: engine.get_function_address(name) for name in names}


def engine():
    """The process's Engine, or None without a usable llvmlite (or with an unknown array layout)."""
    if "engine" not in _STATE:
        with _LOCK:
            if "engine" not in _STATE:
                _STATE["engine"] = _load()
    return _STATE["engine"]


def may_be_available():
    """Whether `engine()` can be expected to load, without loading llvmlite (~50-100 ms) when it has
    not loaded yet: the compiler thread pays that, not a plan's first call."""
    if "engine" in _STATE:
        return _STATE["engine"] is not None
    found = _STATE.get("found")
    if found is None:           # asked once: a search of sys.path (~0.1 ms) a plan build made several times
        found = _STATE["found"] = _find_spec("llvmlite") is not None and ctypes.sizeof(ctypes.c_void_p) == 8
    return found


def why_unavailable():
    """Why `engine()` is None ('' when it is not)."""
    engine()
    return _STATE.get("why", "")


def _load():
    if ctypes.sizeof(ctypes.c_void_p) != 8:
        _STATE["why"] = "the native tier needs a 64-bit build"
        return None
    if not layout_ok():
        _STATE["why"] = "NumPy's array struct layout is not the one the native tier reads"
        return None
    try:
        import llvmlite.binding as llvm
    except ImportError:
        _STATE["why"] = "llvmlite is not installed (pip install llvmlite)"
        return None
    try:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        return Engine(llvm)
    except Exception as e:          # a broken llvmlite build: run on NumPy instead
        _STATE["why"] = f"llvmlite did not initialise: {e}"
        return None


def layout_ok():
    """Whether live arrays hold their data pointer, rank, dims, strides and dtype number at ARRAY_LAYOUT."""
    def word(address, ctype=ctypes.c_int64):
        return ctype.from_address(address).value

    a = np.zeros((3, 5), np.float32)[:, ::2]
    base = id(a)
    try:
        dims, strides = word(base + ARRAY_LAYOUT["dimensions"]), word(base + ARRAY_LAYOUT["strides"])
        descr = word(base + ARRAY_LAYOUT["descr"])
        return (word(base + ARRAY_LAYOUT["ob_type"]) == id(np.ndarray)
                and word(base + ARRAY_LAYOUT["data"]) == a.__array_interface__["data"][0]
                and word(base + ARRAY_LAYOUT["nd"], ctypes.c_int32) == 2
                and [word(dims), word(dims + 8)] == [3, 3] and [word(strides), word(strides + 8)] == [20, 8]
                and word(descr + ARRAY_LAYOUT["type_num"], ctypes.c_int32) == a.dtype.num)
    except Exception:
        return False
