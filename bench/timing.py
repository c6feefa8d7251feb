"""Timing: warm-up, then the median of interleaved repeats of calibrated loops.

`clock` is wall time (time.perf_counter) unless `BENCH_CLOCK=process` sets the process's CPU time
(`time.process_time`, every thread of it) or a caller passes another (`time.thread_time`: the calling
thread's CPU time; a single-threaded BLAS runs in that thread). On a machine shared with other jobs the
wall clock counts the time the pinned core ran someone else; CPU time does not (the caches they evict
still cost).
"""
import gc
import os
import statistics
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
