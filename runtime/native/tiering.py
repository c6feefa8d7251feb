"""When a region is worth compiling: once its NumPy code has taken THRESHOLD seconds in all.

A region new to the process (not compiled before in it, not in the disk cache) runs the NumPy plan's own
code, which the plan times (`Warming.numpy_took`: two `perf_counter` reads, ~0.1 µs against a NumPy
chain's several µs); the call that takes its total past the threshold queues the compile
(`compiler.submit`), and the region keeps running on NumPy until the compiled kernel is swapped in.
Chains, whole loops, conds and products alike: building a plan and its first call compile nothing.
The threshold is DY2STATIC_NATIVE_THRESHOLD_MS (milliseconds; default DEFAULT_MS, 0 compiles at once):
compiling a chain costs ~0.1-0.15 s of a CPU (LLVM, linking, the self-test) and saves 35-45% of the NumPy
chain's time on every later call (a loop: ~0.07 s, ~35%), so a region that never runs long never pays for
LLVM, and one that has run as long as a compile takes has, by then, paid at most about twice what is best
in hindsight (the ski-rental bound). bench/RESULTS.md has the measurements.

A compiled region is not always faster: NumPy's own AVX-512 loops beat a chain that gathers a broadcast
operand per block. So once the kernel is swapped in, `judged` times its first SAMPLES calls against
SAMPLES NumPy calls (those timed while warming, else NumPy calls interleaved with the native ones: both
give the same bits) and keeps the kernel only where its median call is at least MARGIN faster; else the
region is back on NumPy for good.

A chain of more than `pieces.PIECE_STEPS` steps compiles as pieces (`pieces.py`), its threshold that many
chains' (`plan._warm_split`): LLVM's time grows faster than a function's steps.
"""
import os
import threading
from collections import deque
from statistics import median
from time import perf_counter

ENV = "DY2STATIC_NATIVE_THRESHOLD_MS"
DEFAULT_MS = 100.0
SAMPLES = 16        # calls timed on each side before a swapped-in kernel is judged
MARGIN = 0.05       # a kernel stays only where its median call takes at most (1 - MARGIN) of NumPy's


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


def samples():
    """Where `timed` keeps a region's last NumPy call times (seconds), for `judged`."""
    return deque(maxlen=SAMPLES)


def meter(seconds, start, kept=None):
    """`add(took)` for a region whose NumPy code is timed by its caller (a loop's, a product's): once the
    times added reach `seconds` in all, `start()` is called once (it queues the compile); the last times go
    to `kept` (a `samples()` deque) where given."""
    spent = [0.0]
    once = threading.Lock()

    def add(took):
        spent[0] += took
        if kept is not None:
            kept.append(took)
        if spent[0] >= seconds and once.acquire(blocking=False):    # never waits: one caller starts it
            start()

    return add


class Warming:
    """A region whose NumPy code the plan runs (and times: `numpy_took`) where its `run` returns None:
    while warming the times go to `warm` (`plan._warm`), once the kernel is on trial to `numpy_times`."""
    warm = None
    numpy_times = None

    def __init__(self):
        self.warm_times = samples()     # the last NumPy times while warming, for the trial

    def numpy_took(self, began):
        """The plan ran its NumPy code for this region, from perf_counter() `began` on."""
        took = perf_counter() - began
        if self.numpy_times is not None:
            self.numpy_times.append(took)
        elif self.warm is not None:
            self.warm(took)


def judged(native, numpy, numpy_times, verdict, numpy_timed=True):
    """`native` on trial: its first SAMPLES calls timed (with NumPy calls interleaved until `numpy_times`,
    a list of NumPy call times, e.g. those timed while warming, holds SAMPLES); then `verdict(faster)` is
    called once, `faster` being whether native's median call took at most (1 - MARGIN) of NumPy's (the
    caller then puts `native` or `numpy` in place for good). Both compute the same bits, so a caller cannot
    tell which ran. With `numpy_timed` False, `numpy` returns None and the caller runs NumPy's code and
    appends its time to `numpy_times` itself (a loop: its NumPy code is the plan's own); a native call
    returning None (declined: NumPy's code runs) is not timed."""
    native_times = []
    del numpy_times[:-SAMPLES]
    once = threading.Lock()

    def trial_run(*arrays):
        on_numpy = len(numpy_times) < SAMPLES and len(numpy_times) <= len(native_times)
        began = perf_counter()
        result = (numpy if on_numpy else native)(*arrays)
        took = perf_counter() - began
        if on_numpy and numpy_timed:
            numpy_times.append(took)
        elif not on_numpy and result is not None:
            native_times.append(took)
        if len(native_times) >= SAMPLES and len(numpy_times) >= SAMPLES and once.acquire(blocking=False):
            verdict(median(native_times) <= (1 - MARGIN) * median(numpy_times[:SAMPLES]))
        return result

    return trial_run
