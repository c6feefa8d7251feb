"""The native tier's tiering threshold and disk cache, measured (one pinned core, CPU time).

    OMP_NUM_THREADS=1 taskset -c 0 python -m bench.tiering

1. Compiling one chain (LLVM, linking, self-test) against what it saves a call, at three sizes: how
   many calls and how much NumPy time pay for the compile (the threshold, DY2STATIC_NATIVE_THRESHOLD_MS).
2. W6's first call in a fresh process (bench.first_call, while_rnn) with the tier off, on with an
   empty disk cache, and on with a warm one (filled by a DY2STATIC_NATIVE=sync process).
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _cpu(f, repeats):
    f()
    start = time.process_time()
    for _ in range(repeats):
        f()
    return (time.process_time() - start) / repeats


def break_even():
    os.environ["DY2STATIC_NATIVE_CACHE"] = "off"
    os.environ["DY2STATIC_NATIVE_THRESHOLD_MS"] = "0"
    import runtime as rt
    from runtime import native
    rows = []
    for k, n in enumerate((1000, 30_000, 1_000_000)):
        scale = 0.5 + k / 64            # a new constant: a chain not compiled before in this process

        def gelu(x):
            return scale * x * (1 + rt.tanh(0.79788456 * (x + 0.044715 * x * x * x)))

        program, _, _ = rt.trace(gelu, [rt.InputSpec([n], "float32", name="x")])
        x = np.random.default_rng(k).standard_normal(n).astype(np.float32)
        numpy_plan = rt.Executor(native=False).compile(program)
        start = time.process_time()
        native_plan = rt.Executor(native=True).compile(program)
        native.wait()
        compile_s = time.process_time() - start
        repeats = max(3, int(2e5 / n))
        t_numpy = _cpu(lambda: numpy_plan.run({"x": x}), repeats)
        t_native = _cpu(lambda: native_plan.run({"x": x}), repeats)
        saved = t_numpy - t_native
        rows.append(_row(f"GELU chain n={n}", compile_s, t_numpy, t_native))
    rows.append(_loop_row(rt, native))
    return rows


def _row(name, compile_s, t_numpy, t_native):
    saved = t_numpy - t_native
    return {"name": name, "compile_ms": compile_s * 1e3, "numpy_us": t_numpy * 1e6, "native_us": t_native * 1e6,
            "calls_to_pay": compile_s / saved if saved > 0 else None,
            "numpy_ms_to_pay": compile_s / saved * t_numpy * 1e3 if saved > 0 else None}


def _loop_row(rt, native):
    """W3's 50-step tensor `while` RNN: a whole loop (its regions are tiered as chains are)."""
    from transpiler import to_static
    from . import workloads as W
    x, u, w, b = W.rnn_weights()
    program = to_static(W.make_rt_rnn(*[rt.tensor(a) for a in (u, w, b)])).get_program(rt.tensor(x))
    feed = {program.inputs[0].name: x}
    numpy_plan = rt.Executor(native=False).compile(program)
    start = time.process_time()
    native_plan = rt.Executor(native=True).compile(program)
    native.wait()
    compile_s = time.process_time() - start
    t_numpy = _cpu(lambda: numpy_plan.run(feed), 300)
    t_native = _cpu(lambda: native_plan.run(feed), 300)
    return _row("while RNN (W3)", compile_s, t_numpy, t_native)


def first_calls(runs=5):
    out = {}
    with tempfile.TemporaryDirectory() as empty_root, tempfile.TemporaryDirectory() as warm:
        base = dict(os.environ, PYTHONPATH=ROOT)
        base.pop("DY2STATIC_NATIVE_THRESHOLD_MS", None)
        fill = dict(base, DY2STATIC_NATIVE="sync", DY2STATIC_NATIVE_CACHE=warm)
        subprocess.run([sys.executable, "-m", "bench.first_call", "while_rnn", "dy2static"], env=fill,
                       check=True, capture_output=True, cwd=ROOT)
        cases = {"off": dict(base, DY2STATIC_NATIVE="0"),
                 "on, empty cache": None,
                 "on, warm cache": dict(base, DY2STATIC_NATIVE="1", DY2STATIC_NATIVE_CACHE=warm)}
        for name, env in cases.items():
            results = []
            for r in range(runs):
                if env is None:     # a new empty folder for every run
                    run_env = dict(base, DY2STATIC_NATIVE="1", DY2STATIC_NATIVE_CACHE=os.path.join(empty_root, str(r)))
                else:
                    run_env = env
                done = subprocess.run([sys.executable, "-m", "bench.first_call", "while_rnn", "dy2static"],
                                      env=run_env, check=True, capture_output=True, text=True, cwd=ROOT)
                results.append(json.loads(done.stdout.strip().splitlines()[-1]))
            out[name] = results
    return out


def main():
    rows = break_even()
    print("compile cost vs saving (CPU time, one core):")
    for r in rows:
        print(f"  {r['name']:>20}: compile {r['compile_ms']:7.1f} ms, call {r['numpy_us']:9.1f} µs NumPy -> "
              f"{r['native_us']:9.1f} µs native; pays after {r['calls_to_pay'] or float('nan'):9.0f} calls "
              f"= {r['numpy_ms_to_pay'] or float('nan'):7.1f} ms on NumPy")
    calls = first_calls()
    print("W6 while_rnn first call, fresh process:")
    for name, results in calls.items():
        ms = sorted(r["first_call_ms"] for r in results)
        cpu = sorted(r["first_call_cpu_ms"] for r in results)
        extra = {k: v for k, v in results[-1].items() if k not in ("first_call_ms", "import_ms", "first_call_cpu_ms")}
        print(f"  {name:<16} wall {', '.join(f'{m:.1f}' for m in ms)} ms; the caller's CPU "
              f"{', '.join(f'{m:.1f}' for m in cpu)} ms (median {statistics.median(cpu):.1f})  {extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
