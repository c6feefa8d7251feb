"""Long elementwise chains native in pieces (runtime/native/pieces.py): compile time and steady state.

`python -m bench.long_chains [--sizes 1000 4000] [--forms lines mixed_lines] [--shapes 8x8 64x1024]`
builds bench.pass_scaling's n-op chain (`chain_source`: one fused op of ~n steps), compiles its pieces
in this thread with the disk cache off (CPU seconds: in all, per piece, and per step of the pieces that
call NumPy loops or not), then times calls of the NumPy plan (`native=False`, what the chain ran as
before it was split: more than 64 steps stayed on NumPy) and of the native plan, alternating, best of
`--repeat` rounds of `--calls` calls, CPU time of this thread; checks both give the same bits.
"""
import argparse
import importlib
import os
import sys
import tempfile
import time

import numpy as np

os.environ["DY2STATIC_NATIVE_CACHE"] = "0"          # compile, do not load: the compile time is measured

import runtime as rt  # noqa: E402
from runtime import native  # noqa: E402
from runtime.native import pieces  # noqa: E402
from runtime.native.numpy_loops import same_bits  # noqa: E402
from bench.pass_scaling import chain_source  # noqa: E402


def _program(n, form, shape):
    from transpiler import to_static
    folder = tempfile.mkdtemp()
    sys.path.insert(0, folder)
    name = f"long_chain_{form}_{n}"
    with open(os.path.join(folder, name + ".py"), "w") as f:
        f.write(chain_source(n, form))
    module = importlib.import_module(name)
    x = rt.tensor(np.linspace(-1, 1, int(np.prod(shape)), dtype=np.float32).reshape(shape))
    return to_static(module.chain).get_program(x), x


def _fused(program):
    return [op for op in program.ops() if op.type == "fused_elementwise"]


def _thread_clock():
    return time.thread_time()       # this thread's CPU: the compiler thread's work is not the caller's


def measure(n, form, shape, calls, repeat):
    program, x = _program(n, form, shape)
    feed = {program.inputs[0].name: x}
    numpy_plan = rt.Executor(native=False).compile(program)
    native_plan = rt.Executor(native=True).compile(program)
    native.wait()
    want = numpy_plan.run(feed)[0].numpy()
    with np.errstate(all="ignore"):
        for _ in range(40):             # through the trial (tiering.judged)
            got = native_plan.run(feed)[0].numpy()
    regions = [why for _, why in native_plan.native_regions]
    best = {"numpy": float("inf"), "native": float("inf")}
    with np.errstate(all="ignore"):
        for _ in range(repeat):
            for label, plan in (("numpy", numpy_plan), ("native", native_plan)):
                start = _thread_clock()
                for _ in range(calls):
                    plan.run(feed)
                best[label] = min(best[label], (_thread_clock() - start) / calls)
    return {"regions": regions, "same_bits": bool(same_bits(got, want)), **best}


def compile_cost(n, form):
    """CPU seconds compiling the chain's pieces here (disk cache off), in all and per piece (pieces that
    repeat an earlier one's steps share its kernel: the chains here repeat one pattern)."""
    program, _ = _program(n, form, (8, 8))
    op = max(_fused(rt.passes.run_passes(program)), key=lambda o: len(o.attrs["steps"]))
    steps = op.attrs["steps"]
    job = pieces.split_job(op.inputs, op.outputs[0], steps)
    start = _thread_clock()
    kernel = job()
    seconds = _thread_clock() - start
    count = len(kernel.kernels) if isinstance(kernel, pieces.SplitKernel) else 0
    return {"steps": len(steps), "pieces": count, "seconds": seconds,
            "per_piece": seconds / max(count, 1), "why": "" if count else kernel}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 4000])
    parser.add_argument("--forms", nargs="+", default=["lines", "mixed_lines"])
    parser.add_argument("--shapes", nargs="+", default=["8x8", "64x1024"])
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-compile", action="store_true", help="skip the compile-time table")
    args = parser.parse_args(argv)
    os.environ.setdefault("DY2STATIC_NATIVE_THRESHOLD_MS", "0")
    for form in args.forms:
        for n in args.sizes:
            if not args.no_compile:
                c = compile_cost(n, form)
                print(f"{form:<12} {n:>5} ops: {c['steps']} steps, {c['pieces']} pieces, compile "
                      f"{c['seconds']:.2f} s CPU ({c['per_piece'] * 1e3:.0f} ms a piece) {c['why']}", flush=True)
            for shape in args.shapes:
                dims = tuple(int(d) for d in shape.split("x"))
                r = measure(n, form, dims, args.calls, args.repeat)
                print(f"{form:<12} {n:>5} ops {shape:>8}: NumPy plan {r['numpy'] * 1e3:8.3f} ms, native "
                      f"{r['native'] * 1e3:8.3f} ms (x{r['native'] / r['numpy']:.2f}), bits equal "
                      f"{r['same_bits']}, regions {sorted(set(r['regions']))}", flush=True)


if __name__ == "__main__":
    main()
