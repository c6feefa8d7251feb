"""Training Programs on the native tier: `python -m bench.train_native [--rounds N] [--quick]`.

The GRU training step of bench/train.py (T=50, batch 16) and the digits CNN epoch of bench/cnn.py,
as static Programs, timed with the native tier off (`DY2STATIC_NATIVE=0`) and on, compiled before
timing (`DY2STATIC_NATIVE=sync`). The setting is read once per process, so each round runs one
child process per setting, alternately (off, on, off, on, ...), each pinned to the same CPU with
one thread; the table gives the median over rounds of each child's median, and the native tier's
`stats()`: how many regions run native and why the others stay on NumPy.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

WORKLOADS = ("GRU step", "digits CNN epoch")


def child(quick):
    from .pin import pin
    pin()
    from . import cnn, timing, train
    import runtime.native as native
    variants = {}
    steps, _, _ = train.gru_steps(None)
    variants["GRU step"] = steps["static"]
    epochs, _, _, _ = cnn.cnn_variants(None)
    variants["digits CNN epoch"] = epochs["static"]
    for fn in variants.values():
        fn()
    native.wait()
    medians, _ = timing.measure(variants, repeats=5 if quick else 9, target_s=0.05 if quick else 0.2)
    return {"median_us": medians, "stats": native.stats(), "available": native.why_unavailable() or "yes"}


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m bench.train_native", description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--json", metavar="PATH")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.quick)))
        return 0
    runs = {"off": [], "sync": []}
    for _ in range(args.rounds):
        for setting in runs:
            env = dict(os.environ, DY2STATIC_NATIVE="0" if setting == "off" else "sync",
                       OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
            command = [sys.executable, "-m", "bench.train_native", "--child"] + (["--quick"] if args.quick else [])
            out = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
            runs[setting].append(json.loads(out.stdout.strip().splitlines()[-1]))
    report = {"rounds": args.rounds, "workloads": {}, "native_stats": runs["sync"][-1]["stats"],
              "native_available": runs["sync"][-1]["available"]}
    print(f"native tier: {report['native_available']}; stats of one native child: {report['native_stats']}")
    for name in WORKLOADS:
        off = statistics.median(r["median_us"][name] for r in runs["off"])
        on = statistics.median(r["median_us"][name] for r in runs["sync"])
        report["workloads"][name] = {"off_us": off, "native_us": on, "native / off": on / off}
        print(f"{name:<18} off {off:>11,.0f} µs   native {on:>11,.0f} µs   native / off {on / off:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
