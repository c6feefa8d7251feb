"""Pass scaling: each default pass timed on Programs of 2k, 4k, 8k and 16k ops.

Every pass must be near-linear in the number of ops (a 2 MiB Program file, or a
function of 8000 elementwise ops, must not cost seconds per pass). The shapes:
  chain   one long elementwise chain (`h = h * a + b`, fused into one op)
  mixed   elementwise runs broken by reductions and matmuls (many fused ops)
  loop    the chain inside a `while` body (licm, dce and cse on loop state)
  branches  a `cond` every few ops (many small blocks: per-block work must not copy the program)
  loops   a small `while` every few ops (licm and loop-state dce per loop)
  wide    one `while` with thousands of loop-state values, most of them dead
Run as `python -m bench.pass_scaling [--sizes 2000 4000 ...] [--shapes chain ...] [--gc]`; prints a
table of CPU seconds per pass (best of 3, GC paused unless --gc) and the growth of the time from the
smallest to the largest size over the growth of the op count (about 1 when linear).

`python -m bench.pass_scaling --first-call [--sizes 1000 2000 4000]` times what a user waits for
before a function of n elementwise ops has its first result (issue 27: 4000 ops in <= 0.5 s), phase
by phase, in CPU seconds, in a fresh process per size (the GC as a user has it: paused only where the
library pauses it): `x = x * 1.0001 + 0.5` repeated as written out in the source (`lines`: n/2 lines to
convert) or by a Python loop (`loop`: a few lines that trace to n ops), each also with unary ops mixed in
(`mixed_*`: tanh, exp, abs, sqrt).
"""
import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import runtime as rt
from runtime import passes as _passes
from runtime.codegen.plan import compile_plan
from runtime.gc_pause import paused_gc

SIZES = (2000, 4000, 8000, 16000)
W = rt.tensor(np.full((8, 8), 0.01, np.float32))


def chain(n):
    def f(x):
        h = x
        for i in range(n // 2):
            h = h * 1.0001 + float(i % 7)
        return h
    return f


def mixed(n):
    def f(x):
        h = x
        for i in range(n // 4):
            h = h * 0.5 + 1.0
            if i % 8 == 7:
                h = rt.matmul(h, W) - rt.sum(h)
        return h
    return f


def loop(n):
    def body(h, i):
        for k in range(n // 2):
            h = h * 0.999 + float(k % 5)
        return h, i + 1

    def f(x):
        i = rt.zeros((), "int64")
        h, i = rt.while_loop(lambda h, i: i < 3, body, (x, i))
        return h
    return f


def branches(n):
    def f(x):
        h = x
        for i in range(n // 8):
            h = h * 0.5 + 1.0
            h = rt.cond(rt.sum(h) > float(i), lambda: h - 1.0, lambda: h + 1.0)
        return h
    return f


def loops(n):
    def f(x):
        h = x
        for _ in range(n // 12):
            h = h * 0.5 + 1.0
            i = rt.zeros((), "int64")
            h, i = rt.while_loop(lambda h, i: i < 2, lambda h, i: (h * 0.9 + rt.sum(x), i + 1), (h, i))
        return h
    return f


def wide(n):
    k = n // 4

    def body(i, *hs):
        return (i + 1,) + tuple(h * 0.5 for h in hs)

    def f(x):
        state = (rt.zeros((), "int64"),) + tuple(x * float(j) for j in range(k))
        out = rt.while_loop(lambda i, *hs: i < 2, body, state)
        return out[1] + out[-1]           # the rest of the loop state is dead
    return f


SHAPES = {"chain": chain, "mixed": mixed, "loop": loop, "branches": branches, "loops": loops, "wide": wide}


def program_of(shape, n):
    program, _, _ = rt.trace(SHAPES[shape](n), [rt.InputSpec([8, 8], "float32", "x")])
    return program


def time_passes(program, repeats=3, collect=False):
    """{pass: best CPU seconds of `repeats`} running the default pipeline in order on a clone, then
    compiling; with the cyclic GC paused unless `collect` (its full collections grow with the whole
    heap, which hides how the pass itself scales)."""
    best = {}
    for _ in range(repeats):
        gc.collect()
        if not collect:
            gc.disable()
        try:
            _time_once(program, best)
        finally:
            gc.enable()
    return best


def _time_once(program, best):
    current = program.clone()
    for name in _passes.DEFAULT_PIPELINE + ["compile"]:
        start = time.process_time()
        if name == "compile":
            compile_plan(current, rt.Executor().backend)
        else:
            current = _passes.PASSES[name](current)
        seconds = time.process_time() - start
        best[name] = min(best.get(name, seconds), seconds)


# --- the first call of an n-op chain: convert, trace, passes, plan, run --------------------------

FIRST_CALL_SIZES = (1000, 2000, 4000)
FORMS = ("lines", "mixed_lines", "loop", "mixed_loop")
_UNARY = ("xp.tanh(x)", "xp.exp(x * -0.001)", "xp.abs(x)", "xp.sqrt(xp.abs(x) + 1.0)")


def chain_source(n, form):
    """Source of a module defining `chain(x)`, n elementwise ops long (see the module doc for the forms)."""
    mixed = form.startswith("mixed")
    if form.endswith("loop"):
        body = ["for i in range(%d):" % (n // (5 if mixed else 2)),
                "    x = xp.tanh(x * 1.0001 + 0.5)" if mixed else "    x = x * 1.0001 + 0.5"]
        if mixed:
            body.append("    x = xp.sqrt(xp.abs(x) + 1.0)")
    else:
        body, ops = [], 0
        while ops < n:
            if mixed and len(body) % 3 == 2:
                unary = _UNARY[(len(body) // 3) % len(_UNARY)]
                body.append(f"x = {unary}")
                ops += unary.count("(") + unary.count(" * ") + unary.count(" + ")
            else:
                body.append("x = x * 1.0001 + 0.5")
                ops += 2
    return "import runtime as xp\n\n\ndef chain(x):\n" + "".join(f"    {line}\n" for line in body) + "    return x\n"


def first_call_phases(n, form):
    """{phase: CPU seconds} of one n-op chain's first call, phase by phase, after a 10-op chain of the same
    form went through every phase (imports and caches: what any first call of the process pays once); then
    the whole first call as a user makes it (guards and write-back too) of a second copy of the module."""
    from transpiler import to_static
    from transpiler.api import convert_function
    x = rt.tensor(np.linspace(-1, 1, 64, dtype=np.float32).reshape(8, 8))
    times = {}
    with tempfile.TemporaryDirectory() as folder:
        sys.path.insert(0, folder)
        modules = []
        for copy, size in (("a", n), ("b", n), ("warm", 10)):
            name = f"chain_{form}_{size}_{copy}"
            with open(os.path.join(folder, name + ".py"), "w") as f:
                f.write(chain_source(size, form))
            modules.append(__import__(name))
        to_static(modules[2].chain)(x)
        start = time.process_time()
        converted = convert_function(modules[0].chain)
        times["convert"] = time.process_time() - start
        start = time.process_time()
        program, _, _ = rt.trace(converted, [rt.InputSpec([8, 8], "float32", "x")])
        times["trace"] = time.process_time() - start
        with paused_gc():           # as Executor.compile runs them
            start = time.process_time()
            optimized = _passes.run_passes(program)
            times["passes"] = time.process_time() - start
            start = time.process_time()
            plan = compile_plan(optimized, rt.Executor().backend)
            times["plan"] = time.process_time() - start
        start = time.process_time()
        plan(x.array)
        times["run"] = time.process_time() - start
        times["sum"] = sum(times.values())
        start = time.process_time()
        to_static(modules[1].chain)(x)
        times["first call"] = time.process_time() - start
    times["ops"] = sum(1 for _ in program.ops())
    return times


def first_call_table(sizes, forms):
    for form in forms:
        rows, ops = {}, []
        for n in sizes:
            out = subprocess.run([sys.executable, "-m", "bench.pass_scaling", "--phases-of", form, str(n)],
                                 check=True, capture_output=True, text=True).stdout
            phases = json.loads(out.splitlines()[-1])
            ops.append(phases.pop("ops"))
            for name, seconds in phases.items():
                rows.setdefault(name, []).append(seconds)
        print(f"\n{form}: CPU seconds to the first result ({' / '.join(map(str, ops))} traced ops)")
        print(f"{'phase':<14}" + "".join(f"{n:>10}" for n in sizes) + f"{'scaling':>10}")
        for name, times in rows.items():
            growth = (times[-1] / max(times[0], 1e-9)) / (sizes[-1] / sizes[0])
            print(f"{name:<14}" + "".join(f"{t:>10.3f}" for t in times) + f"{growth:>10.2f}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=None)
    parser.add_argument("--shapes", nargs="+", default=list(SHAPES), choices=list(SHAPES))
    parser.add_argument("--gc", action="store_true", help="keep the cyclic GC running while timing")
    parser.add_argument("--first-call", action="store_true", help="time the first call of n-op chains instead")
    parser.add_argument("--forms", nargs="+", default=list(FORMS), choices=FORMS)
    parser.add_argument("--phases-of", nargs=2, metavar=("FORM", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.phases_of:
        print(json.dumps(first_call_phases(int(args.phases_of[1]), args.phases_of[0])))
        return
    if args.first_call:
        first_call_table(args.sizes or FIRST_CALL_SIZES, args.forms)
        return
    args.sizes = args.sizes or SIZES
    for shape in args.shapes:
        rows = {}
        ops = []
        for n in args.sizes:
            program = program_of(shape, n)
            ops.append(sum(1 for _ in program.ops()))
            for name, seconds in time_passes(program, collect=args.gc).items():
                rows.setdefault(name, []).append(seconds)
        print(f"\n{shape}: seconds per pass ({' / '.join(map(str, ops))} ops)")
        print(f"{'pass':<22}" + "".join(f"{n:>10}" for n in args.sizes) + f"{'scaling':>10}")
        for name, times in rows.items():
            growth = (times[-1] / max(times[0], 1e-9)) / (ops[-1] / ops[0])
            print(f"{name:<22}" + "".join(f"{t:>10.3f}" for t in times) + f"{growth:>10.2f}")


if __name__ == "__main__":
    main()
