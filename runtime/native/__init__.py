"""The native tier: regions of a Program compiled to machine code with LLVM (llvmlite), NumPy's bits kept.

On by default wherever llvmlite is installed (a regular dependency), tiered; off with
`Executor(native=False)` or `DY2STATIC_NATIVE=0` for every Executor that does not say (`to_static`
functions included; `1` is on, `sync` compiles each region before its first call). A region compiled
before, in this process or one before it (the disk cache, `disk_cache.py`), runs native from its first call; a new one runs on NumPy until it is hot
(`tiering.py`), then compiles in a background thread while the plan still runs it on NumPy (`wait()`
blocks until all queued have compiled); `DY2STATIC_NATIVE=sync` compiles it before the first call instead.
`fast_math` (opt-in, `fast_math.py`) approximates float32 exp and tanh within a documented ulp bound.
Without llvmlite, or for any region it does not handle, the plan stays the NumPy plan: never an error.
`stats()` counts the regions compiled native, warming, still compiling, and kept on NumPy with the
reason; a plan lists its own in `plan.native_regions`.

- `llvm.py`: llvmlite loaded once, the host target, modules compiled to function addresses;
- `numpy_loops.py`: NumPy's own strided ufunc loops, for native code to call (self-tested);
- `elementwise.py`: a fused elementwise chain as one native function;
- `gemv.py`: float32 vector-matrix products inline, in OpenBLAS's order of sums (self-tested);
- `fast_math.py`: the opt-in approximations;
- `objects.py`: object code, linked into a shared library, loaded (dlopen or MCJIT);
- `disk_cache.py`: compiled code on disk, checksummed and keyed;
- `relocations.py`: the process addresses a compiled loop reads from a table the loader fills;
- `dynamic.py`: a region with dynamic dims made static for one call's dims (one kernel per distinct dims);
- `tiering.py`: when a new region has run long enough to compile;
- `pieces.py`: a chain too long for one function as pieces, each its own kernel;
- `compiler.py`: the background compiler thread;
- `plan.py`: `NativePlanCodegen`, the NumPy plan with those chains as native calls.
"""
import os

from . import tiering
from .compiler import wait
from .llvm import may_be_available, why_unavailable
from .plan import compile_native_plan, reset_stats, stats

ENV = "DY2STATIC_NATIVE"
FAST_MATH_ENV = "DY2STATIC_FAST_MATH"


def available():
    """Whether the native tier can compile here (llvmlite present and NumPy's array layout known)."""
    return not why_unavailable()


def setting(native):
    """An Executor's `native` argument as a bool. None follows DY2STATIC_NATIVE: unset (the default) on
    wherever llvmlite can be imported (found, not imported: a plan's first call never loads LLVM); '1' on,
    'sync' on and compiling before the first call, '0' off."""
    if native is None:
        text = os.environ.get(ENV, "").strip()
        if text not in ("", "0", "1", "sync"):
            raise ValueError(f"{ENV} must be 0 (off), 1 (on, tiered) or sync (on, compiled before the first "
                             f"call), or unset (on where llvmlite is installed), not {text!r}")
        return text in ("1", "sync") or (text == "" and may_be_available())
    if not isinstance(native, bool):
        raise ValueError(f"native must be True, False or None, not {native!r}")
    return native


def fast_math_setting(fast_math, native):
    """An Executor's `fast_math` as a bool (None follows DY2STATIC_FAST_MATH: '1' on, else off), and
    its `native` with it: fast_math is the native tier's, so it turns the tier on unless native=False,
    which with fast_math=True is an error."""
    if fast_math is None:
        fast_math = os.environ.get(FAST_MATH_ENV, "0").strip() == "1"
    elif not isinstance(fast_math, bool):
        raise ValueError(f"fast_math must be True, False or None, not {fast_math!r}")
    if fast_math and native is False:
        raise ValueError("fast_math=True needs the native tier: drop native=False")
    return fast_math, (True if fast_math and native is None else native)


__all__ = ["available", "compile_native_plan", "reset_stats", "setting", "stats", "tiering", "wait",
           "why_unavailable", "fast_math_setting", "ENV",
           "FAST_MATH_ENV"]
