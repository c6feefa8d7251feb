"""The native tier against the NumPy plan and the hand-written NumPy floor, one process, one core.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 taskset -c 0 python -m bench.native [results.json]

Each workload runs three ways: `numpy` (the floor), `dy2static` (to_static, the NumPy plan) and
`dy2static native` (to_static with DY2STATIC_NATIVE=1 when it traced: its fused chains compiled by
runtime/native/). The two static variants must give the same bits, checked before timing; the table
gives median µs per call and the ratio to the floor. The workloads: W3 (the while-loop RNN, whose
body chain runs native), W5 (GELU over 1M float32) and GELU over 1K float32 (a chain where the
per-call cost, not memory, dominates).
"""
import json
import os
import sys

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

import runtime as rt  # noqa: E402
from runtime import native  # noqa: E402
from runtime.native.numpy_loops import same_bits  # noqa: E402
from transpiler import to_static  # noqa: E402

from . import timing, workloads as W  # noqa: E402


def _static(fn, args, on, fast_math=False):
    """fn converted, traced now with the native tier (and fast_math) on or off (read when it traces)."""
    settings = {native.ENV: "1" if on else "0", native.FAST_MATH_ENV: "1" if fast_math else "0",
                native.tiering.ENV: "0"}        # steady state: compile at once, not once hot
    before = {k: os.environ.get(k) for k in settings}
    os.environ.update(settings)
    try:
        static = to_static(fn)
        static(*args)
        native.wait()                   # its chains compiled in the background: time them native
    finally:
        for k, v in before.items():
            if v is None:
                del os.environ[k]
            else:
                os.environ[k] = v
    return static


def variants(fn, args, floor, fast_math=False):
    off, on = _static(fn, args, False), _static(fn, args, True)
    a, b = off(*args).numpy(), on(*args).numpy()
    if not same_bits(a, b):
        raise AssertionError(f"{fn.__name__}: the native tier's bits differ from the NumPy plan's")
    found = {"numpy": floor, "dy2static": lambda: off(*args), "dy2static native": lambda: on(*args)}
    if fast_math:           # approximations: close, not the same bits
        fast = _static(fn, args, True, fast_math=True)
        if not np.allclose(fast(*args).numpy(), a, rtol=1e-5, atol=1e-6):
            raise AssertionError(f"{fn.__name__}: fast_math results are not close to the NumPy plan's")
        found["dy2static fast_math"] = lambda: fast(*args)
    return found


def workloads():
    x, u, w, b = W.rnn_weights()
    xt, ut, wt, bt = (rt.tensor(a) for a in (x, u, w, b))
    found = {"W3 while_rnn": variants(W.make_rt_rnn(ut, wt, bt), (xt,), lambda: W.numpy_rnn(x, u, w, b))}
    g = W._rng().standard_normal(W.GELU_N).astype(np.float32)
    found["W5 gelu_1m"] = variants(W.rt_gelu, (rt.tensor(g),), lambda: W.numpy_gelu(g), fast_math=True)
    small = g[:1000].copy()
    found["gelu_1k"] = variants(W.rt_gelu, (rt.tensor(small),), lambda: W.numpy_gelu(small), fast_math=True)
    return found


def main():
    if not native.available():
        print(f"native tier unavailable: {native.why_unavailable()}")
        return 1
    affinity = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    print(f"CPUs this process may run on: {affinity}")
    native.reset_stats()
    found = workloads()
    print(f"native regions: {native.stats()}")
    report = {}
    for name, vs in found.items():
        medians, _ = timing.measure(vs, repeats=9, target_s=0.1 if "1m" in name else 0.05)
        report[name] = medians
        print(f"{name}:")
        for label, us in medians.items():
            print(f"    {label:<20} {us:>10.1f} µs  {us / medians['numpy']:5.2f}×")
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
