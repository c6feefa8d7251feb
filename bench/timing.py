"""Timing: warm-up, then the median of interleaved repeats of calibrated loops.

Where the native tier is on (the default: runtime/native/), the warm-up lets it reach its steady state
(`settle`): hot regions compiled in the background (`native.wait()`) and past their trial against NumPy, so
a table reports what a long-running caller gets, not the first 0.1 s.

`clock` is wall time (time.perf_counter) unless `BENCH_CLOCK=process` sets the process's CPU time
(`time.process_time`, every thread of it) or a caller passes another (`time.thread_time`: the calling
thread's CPU time; a single-threaded BLAS runs in that thread). On a machine shared with other jobs the
wall clock counts the time the pinned core ran someone else; CPU time does not (the caches they evict
still cost).
"""
import gc
import os
import statistics
import sys
import time

CLOCK = time.process_time if os.environ.get("BENCH_CLOCK") == "process" else time.perf_counter


def _loop(fn, number, sync, clock=CLOCK):
    start = clock()
    for _ in range(number):
        fn()
    if sync is not None:
        sync()
    return clock() - start


def calibrate(fn, target_s, sync=None, clock=CLOCK):
    """How many calls make one repeat last about target_s."""
    number = 1
    while True:
        elapsed = _loop(fn, number, sync, clock)
        if elapsed >= target_s / 4 or number >= 1 << 22:
            return max(1, int(number * target_s / max(elapsed, 1e-9)))
        number *= 4


SETTLE_S = 5.0         # at most this long per variant for the native tier to settle


def settle(fn, warmup_s):
    """Call fn until the native tier, where it is on, settles: rounds of calls (each at least the tier's
    threshold long, so a region that takes most of a call gets hot) and `native.wait()` until a round
    compiles nothing new, then enough calls for each swapped-in kernel's trial (tiering.SAMPLES each side)."""
    native = sys.modules.get("runtime.native")
    if native is None or not native.available():
        return
    round_s = max(warmup_s, 2 * native.tiering.threshold())
    deadline, before = time.perf_counter() + SETTLE_S, None
    while time.perf_counter() < deadline:
        until = time.perf_counter() + round_s
        while time.perf_counter() < until:
            fn()
        native.wait()
        stats = native.stats()
        now = (stats["native"], stats["numpy"], stats["compiling"])
        if now == before:
            break
        before = now
    for _ in range(2 * native.tiering.SAMPLES + 2):     # the trials: native and NumPy calls interleaved
        fn()


def measure(variants, repeats=7, target_s=0.05, warmup_s=0.05, sync=None, clock=CLOCK):
    """{name: median µs per call}: every variant warmed up, then `repeats` rounds, each
    round timing every variant once (interleaved, so drift hits all of them alike). Each
    round starts one variant later than the last: a variant that always ran right after
    another would inherit its cache and allocator state in every round."""
    numbers = {}
    for name, fn in variants.items():
        deadline = time.perf_counter() + warmup_s
        fn()
        while time.perf_counter() < deadline:
            fn()
        settle(fn, warmup_s)
        numbers[name] = calibrate(fn, target_s, sync, clock)
    samples = {name: [] for name in variants}
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        order = list(variants.items())
        for r in range(repeats):
            k = r % max(len(order), 1)
            for name, fn in order[k:] + order[:k]:
                samples[name].append(_loop(fn, numbers[name], sync, clock) / numbers[name] * 1e6)
            gc.collect()
    finally:
        if gc_was_enabled:
            gc.enable()
    return {name: statistics.median(s) for name, s in samples.items()}, samples
