"""A retrace of `x * 2` in a user module with and without an unrelated 1M-item list global.

Run as `python -m bench.retrace_globals [--items N] [--retraces K]`: each module is a real file
imported from a temporary folder (its functions convert from source, as a user's do); every timed
call passes a new shape, so each one traces and compiles a new signature; the modules take turns.
It prints the median (and min) retrace of each module and their ratio (the target is 1.0 +- 10%:
registering the globals a trace left holding traced values must not walk the values it never read).
Before the fix (0082630) it read 8,200 ms against 1.00 ms (`--retraces 9`, a loaded 2-core machine).
"""
import argparse
import gc
import importlib.util
import os
import statistics
import sys
import tempfile
import time
import warnings

import numpy as np

import runtime as rt
from transpiler import to_static

SOURCE = '''
{big}

def double(x):
    return x * 2
'''


def _module(folder, name, big):
    path = os.path.join(folder, f"{name}.py")
    with open(path, "w") as fh:
        fh.write(SOURCE.format(big=big))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def retrace_ms(fns, retraces, first_shape=2):
    """Median milliseconds of a retrace of each fn: `retraces` calls with shapes not seen before
    (each a trace and a compile), the fns taking turns (each first half of the time) so that load
    on the machine hits both alike."""
    statics = [to_static(fn) for fn in fns]
    for static in statics:
        static(rt.tensor(np.ones(1, np.float32)))       # conversion and first trace: not timed
    times = [[] for _ in fns]
    for n in range(first_shape, first_shape + retraces):
        turn = list(zip(statics, times))
        for static, spent in turn if n % 2 else turn[::-1]:     # who goes first alternates
            x = rt.tensor(np.ones(n, np.float32))
            t0 = time.perf_counter()
            static(x)
            spent.append(time.perf_counter() - t0)
    assert all(len(static.retrace_reasons) >= min(retraces, 8) for static in statics), "every call must retrace"
    return [(statistics.median(spent) * 1e3, min(spent) * 1e3) for spent in times]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10 ** 6, help="items of the unrelated list global")
    parser.add_argument("--retraces", type=int, default=101)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        plain = _module(folder, "retrace_plain", "")
        big = _module(folder, "retrace_big", f"big = [[i] for i in range({args.items})]")
        assert len(big.big) == args.items
        gc.collect()
        gc.freeze()       # the collector skips what exists now: a full collection would cost by heap size, in both
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")               # "traced for N input signatures": the point here
            retrace_ms([plain.double, big.double], 8, first_shape=10 ** 4)    # warm-up, the same for both
            without, with_big = retrace_ms([plain.double, big.double], args.retraces)
        gc.unfreeze()
    print(f"retrace of x * 2 over {args.retraces} new shapes each, median (min):")
    print(f"  without a big global: {without[0]:9.2f} ms ({without[1]:.2f})")
    print(f"  with a {args.items:,}-item list global: {with_big[0]:9.2f} ms ({with_big[1]:.2f})")
    print(f"  ratio: {with_big[0] / without[0]:.2f} ({with_big[1] / without[1]:.2f})")

if __name__ == "__main__":
    sys.exit(main())
