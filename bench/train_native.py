"""Training Programs on the native tier: `python -m bench.train_native [--quick] [--json PATH]`.

The GRU training step of bench/train.py (T=50, batch 16) and the digits CNN epoch of bench/cnn.py, as
static Programs, each built twice in one process (pinned to one CPU, one thread): once traced with the
native tier off (`DY2STATIC_NATIVE=0` while it traces: the setting is read when a Program is compiled)
and once on (`DY2STATIC_NATIVE=sync`: its regions compile before the first call). Both copies start
from the same weights and are timed interleaved (bench/timing.py). The native tier's `stats()` says how
many regions run native and why the others stay on NumPy.
"""
import argparse
import json
import os
import sys

from .pin import pin

PINNED_CPU = pin()      # before NumPy starts a thread

from . import cnn, timing, train  # noqa: E402

WORKLOADS = {"GRU step": lambda: train.gru_steps(None)[0]["static"],
             "digits CNN epoch": lambda: cnn.cnn_variants(None)[0]["static"]}


def variants():
    """{(workload, 'off' / 'native'): one step}, each traced under its setting."""
    import runtime.native as native
    made = {}
    before = os.environ.get(native.ENV)
    try:
        for setting, value in (("off", "0"), ("native", "sync")):
            os.environ[native.ENV] = value
            for name, build in WORKLOADS.items():
                made[name, setting] = fn = build()
                fn()                            # traces (and compiles, native) under this setting
    finally:
        if before is None:
            os.environ.pop(native.ENV, None)
        else:
            os.environ[native.ENV] = before
    native.wait()
    return made


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m bench.train_native", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--json", metavar="PATH")
    args = p.parse_args(argv)
    import runtime.native as native
    if not native.available():
        print(f"native tier unavailable: {native.why_unavailable()}")
        return 0
    made = variants()
    stats = native.stats()
    report = {"pinned_cpu": PINNED_CPU, "native_stats": stats, "workloads": {}}
    print(f"pinned to CPU {PINNED_CPU}, one thread; native tier stats: {stats}")
    for name in WORKLOADS:
        pair = {setting: made[name, setting] for setting in ("off", "native")}
        medians, samples = timing.measure(pair, repeats=5 if args.quick else 11, target_s=0.05 if args.quick else 0.3)
        ratio = medians["native"] / medians["off"]
        report["workloads"][name] = {"median_us": medians, "spread_us": {k: [min(v), max(v)] for k, v in samples.items()},
                                     "native / off": ratio}
        print(f"{name:<18} off {medians['off']:>11,.0f} µs   native {medians['native']:>11,.0f} µs   "
              f"native / off {ratio:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
