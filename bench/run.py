"""One workload, in this (fresh, single-threaded) process: `python -m bench.run NAME [--quick] [--device gpu]`.

Builds every variant, checks they agree, times them interleaved and prints one
JSON line: median µs per call, each variant's ratio to the floor (hand-written
NumPy, or CuPy on the GPU), the Program's op types, and skipped peers.
"""
import argparse
import json
import sys

from .pin import pin

PINNED_CPU = pin()      # before NumPy or a peer starts a thread

from . import peers, suite, timing, workloads  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("workload", choices=sorted(suite.ALL))
    p.add_argument("--quick", action="store_true")
    p.add_argument("--device", default="cpu", choices=("cpu", "gpu"))
    p.add_argument("--no-peers", action="store_true")
    args = p.parse_args(argv)
    peer_names = () if args.no_peers or args.device == "gpu" else peers.ALL
    w = suite.ALL[args.workload](args.device, peer_names)
    variants = w["variants"]
    w["check"](workloads.run_variants_once(variants))
    sync = workloads._sync_of(args.device)
    repeats = 7 if args.quick else 15
    target = 0.01 if args.quick else 0.05
    if args.workload == "gelu_1m":
        target *= 2
    medians, samples = timing.measure(variants, repeats=repeats, target_s=target,
                                      warmup_s=0.02 if args.quick else 0.1, sync=sync)
    floor = next(iter(variants))
    result = {
        "workload": args.workload, "device": args.device, "pinned_cpu": PINNED_CPU, "floor": floor, "repeats": repeats,
        "median_us": medians, "ratio": {k: v / medians[floor] for k, v in medians.items()},
        "spread_us": {k: [min(s), max(s)] for k, s in samples.items()},
        "program_ops": w["ops"], "skipped_peers": dict(peers.SKIPPED), **w.get("extra", {}),
    }
    json.dump(result, sys.stdout)
    print()


if __name__ == "__main__":
    main()
