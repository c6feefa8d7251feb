"""When a region is worth compiling: once its calls on NumPy have taken THRESHOLD seconds in all.

A region new to the process (not compiled before in it, not in the disk cache) runs on NumPy, each
call timed (two `perf_counter` reads, ~0.1 µs against a NumPy chain's several µs); the call that
takes its total past the threshold queues the compile (`compiler.submit`) and the region runs on
NumPy, untimed, until the compiled kernel is swapped in. The threshold is
DY2STATIC_NATIVE_THRESHOLD_MS (milliseconds; default DEFAULT_MS, 0 compiles at once): compiling a
chain costs ~0.1-0.3 s of a CPU (LLVM, linking, the self-test) and saves 30-50% of the NumPy
chain's time on every later call, so a region that never runs long never pays for LLVM, and one
that has run as long as a compile takes has, by then, paid at most about twice what is best
in hindsight (the ski-rental bound). bench/RESULTS.md has the measurements.
"""
import os
import threading
from time import perf_counter

ENV = "DY2STATIC_NATIVE_THRESHOLD_MS"
DEFAULT_MS = 100.0


def threshold():
    """Seconds a region runs on NumPy before it is compiled (DY2STATIC_NATIVE_THRESHOLD_MS)."""
    text = os.environ.get(ENV, "").strip()
    if not text:
        return DEFAULT_MS / 1e3
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{ENV} must be a number of milliseconds (0 compiles at once), not {text!r}") from None
    if not value >= 0:
        raise ValueError(f"{ENV} must be a number of milliseconds >= 0, not {text!r}")
    return value / 1e3


def timed(run, seconds, start, settle):
    """`run`, timed: once its calls have taken `seconds` in all, `start()` is called once (it queues
    the compile) and `settle(run)` puts the untimed `run` in its place."""
    spent = [0.0]
    once = threading.Lock()

    def timed_run(*arrays):
        began = perf_counter()
        try:
            return run(*arrays)
        finally:
            spent[0] += perf_counter() - began
            if spent[0] >= seconds and once.acquire(blocking=False):    # never waits: one caller starts it
                settle(run)
                start()

    return timed_run
