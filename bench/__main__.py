"""`python -m bench [--quick] [--json PATH] [--device cpu|gpu] [--only NAME ...] [--no-peers]`

Runs every workload in a fresh subprocess pinned to one CPU (`os.sched_setaffinity`, see
bench/pin.py; thread variables OMP/OPENBLAS/MKL_NUM_THREADS=1 as well), ours and the peers
alike, prints a table of median µs per call and the
ratio to the NumPy floor measured in the same process, then W6 (first call in a
fresh process; cache-hit overhead) and conversion scaling with its linear fit.
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import time

TARGETS = {  # workload -> (variant, ratio target) — issue 13's bar
    "mlp_b1": {"dy2static": 1.10, "dy2static eager": 2.0},
    "mlp_b256": {"dy2static": 1.0},
    "while_rnn": {"dy2static": 0.40},
    "ifelse_small": {"dy2static": 1.2},
    "gelu_1m": {"dy2static": 0.6},
    **{name: {"dy2static": 1.0} for name in (      # every real model (bench/models.py) at or below NumPy
        "greedy_decode", "beam_search", "nms", "masked_lstm", "kmeans", "encoder_layer", "lenet_b1", "lenet_b64",
        "d2l_mlp_b1", "linearnet_b1")},
}
FIRST_CALL_TARGET_MS = 20.0
CACHE_HIT_TARGET_US = 3.0


def _env():
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS",
                "XLA_FLAGS", "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS"):
        env.pop(var, None)
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", NUMEXPR_NUM_THREADS="1",
               TF_NUM_INTRAOP_THREADS="1", TF_NUM_INTEROP_THREADS="1", TF_CPP_MIN_LOG_LEVEL="3",
               XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
               JAX_PLATFORMS="cpu")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _child(module, *args, timeout=600):
    cmd = [sys.executable, "-m", module, *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_env(), timeout=timeout)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        return {"error": (proc.stderr.strip().splitlines() or ["no output"])[-1][:300]}
    return json.loads(lines[-1])


def _median(values):
    values = sorted(values)
    n = len(values)
    return values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) / 2


def _versions():
    import numpy
    out = {"python": platform.python_version(), "numpy": numpy.__version__}
    try:
        from . import peers
        out.update(peers.versions())
    except Exception:  # noqa: BLE001
        pass
    try:
        import cupy
        out["cupy"] = cupy.__version__
    except Exception:  # noqa: BLE001
        pass
    return out


def _machine():
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "platform": platform.platform()}


def _fmt_us(us):
    return f"{us:,.1f}" if us < 10_000 else f"{us:,.0f}"


def main(argv=None):
    from . import pin, suite
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="fewer, shorter repeats (< 1 minute in all)")
    p.add_argument("--json", metavar="PATH", help="also write every number to PATH")
    p.add_argument("--device", default="cpu", choices=("cpu", "gpu"),
                   help="gpu: the real models, k-means, W2, W3 and W5 on CuPy, against hand-written CuPy")
    p.add_argument("--only", nargs="*", help="workload names (default: all)")
    p.add_argument("--no-peers", action="store_true", help="skip torch/jax/tf/paddle")
    args = p.parse_args(argv)
    started = time.time()
    cpu = pin.choose()
    if cpu is not None:
        os.environ[pin.ENV] = str(cpu)      # every child pins itself to this CPU
    names = list(suite.ALL)
    if args.device == "gpu":
        import runtime
        if not runtime.gpu_available():
            print("--device gpu needs CUDA and CuPy (runtime.gpu_available() is False); nothing to run")
            return 2
        names = [n for n in names if n in suite.GPU_WORKLOADS]
    if args.only:
        names = [n for n in names if n in args.only]
    report = {"command": "python -m bench " + " ".join(argv if argv is not None else sys.argv[1:]),
              "machine": _machine(), "pinned_cpu": cpu, "versions": _versions(), "workloads": {}, "first_call": {},
              "scaling": []}
    extra = (["--quick"] if args.quick else []) + (["--no-peers"] if args.no_peers else []) + ["--device", args.device]

    where = f"pinned to CPU {cpu} (sched_setaffinity), one thread" if cpu is not None else "one thread (not pinned)"
    print(f"dy2static benchmarks — {report['machine']['cpu']}, {where}; "
          f"{', '.join(f'{k} {v}' for k, v in report['versions'].items() if v)}")
    print()
    header = f"{'':4} {'workload':<14} {'variant':<18} {'median µs':>12} {'× floor':>9}  {'target':>7}"
    print(header)
    print("-" * len(header))
    for name in names:
        result = _child("bench.run", name, *extra)
        report["workloads"][name] = result
        label = suite.ALL_LABELS.get(name, "")
        if "error" in result:
            print(f"{label:4} {name:<14} ERROR {result['error']}")
            continue
        for variant, us in result["median_us"].items():
            target = TARGETS.get(name, {}).get(variant)
            ratio = result["ratio"][variant]
            mark = "" if target is None else ("≤%.2f ok" % target if ratio <= target else "≤%.2f MISS" % target)
            print(f"{label:4} {name:<14} {variant:<18} {_fmt_us(us):>12} {ratio:>8.2f}×  {mark}")
        for peer, why in result.get("skipped_peers", {}).items():
            if not args.no_peers:
                print(f"{'':4} {'':<14} {peer:<18} {'skipped':>12}  ({why})")
        if "peak_extra_memory_x_input" in result:
            mem = result["peak_extra_memory_x_input"]
            print(f"{'':4} {'':<14} peak extra memory: " +
                  ", ".join(f"{k} {v:.2f}× input" for k, v in mem.items()) + "  (target dy2static ≤ 2)")
        if "while_iteration_us" in result:
            print(f"{'':4} {'':<14} one iteration of an empty tensor `while`: {result['while_iteration_us']:.2f} µs")
        if name == "cache_hit":
            overhead = result["median_us"]["dy2static"] - result["median_us"]["numpy"]
            report["cache_hit_overhead_us"] = overhead
            print(f"{'W6b':4} {'cache hit':<14} {'overhead':<18} {overhead:>12.2f} µs{'':5}"
                  f"≤{CACHE_HIT_TARGET_US:.0f} µs {'ok' if overhead <= CACHE_HIT_TARGET_US else 'MISS'}")

    if args.device == "cpu" and (not args.only or "first_call" in args.only):
        print()
        runs = 3 if args.quick else 7
        variants = ["dy2static"] + ([] if args.no_peers else ["torch.jit.script", "jax.jit"])
        print(f"W6   first call in a fresh process (convert + trace + compile + run; median of {runs} processes"
              f"{'; peers: 1' if args.quick else ''})")
        for workload in ("mlp_b1", "while_rnn"):
            for variant in variants:
                n = runs if variant == "dy2static" or not args.quick else 1
                results = [_child("bench.first_call", workload, variant) for _ in range(n)]
                times = [r["first_call_ms"] for r in results if "first_call_ms" in r]
                entry = {"runs": results, "median_ms": _median(times) if times else None}
                report["first_call"][f"{workload}/{variant}"] = entry
                if not times:
                    why = results[0].get("skipped") or results[0].get("error")
                    print(f"     {workload:<14} {variant:<18} {'skipped':>12}  ({why})")
                    continue
                mark = ""
                if variant == "dy2static":
                    mark = f"≤{FIRST_CALL_TARGET_MS:.0f} ms {'ok' if entry['median_ms'] <= FIRST_CALL_TARGET_MS else 'MISS'}"
                imports = _median([r["import_ms"] for r in results if "import_ms" in r])
                print(f"     {workload:<14} {variant:<18} {entry['median_ms']:>9.1f} ms  {mark:<12} "
                      f"(imports before the clock: {imports:.0f} ms)")

    if args.device == "cpu" and (not args.only or "scaling" in args.only):
        print()
        print("conversion scaling (convert + trace + compile; fresh process per size)")
        from .scaling import SIZES
        for lines in SIZES[:2] if args.quick else SIZES:
            r = _child("bench.scaling", str(lines))
            report["scaling"].append(r)
            if "error" in r:
                print(f"     {lines:>5} lines  ERROR {r['error']}")
                continue
            print(f"     {r['lines']:>5} lines  convert {r['convert_ms']:8.1f} ms   trace+compile "
                  f"{r['trace_compile_ms']:8.1f} ms   total {r['total_ms']:8.1f} ms   ({r['ops']} ops)")
        points = [(r["lines"], r["total_ms"]) for r in report["scaling"] if "total_ms" in r]
        if len(points) >= 2:
            import numpy as np
            slope, intercept = np.polyfit([p[0] for p in points], [p[1] for p in points], 1)
            report["scaling_fit"] = {"ms_per_line": slope, "intercept_ms": intercept}
            print(f"     linear fit: total ≈ {slope:.3f} ms/line × lines + {intercept:.1f} ms")

    report["elapsed_s"] = time.time() - started
    print()
    print(f"({report['elapsed_s']:.0f} s)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
