"""What each part buys: the static workloads with the default pipeline, with one pass left
out, and with no passes (the plan's code generation alone), plus where a first call's
time goes. `python -m bench.ablation` (one thread; numbers in µs / ms, one process).
"""
import json
import sys
import time

import numpy as np

import runtime as rt
from runtime import passes
from runtime.codegen.plan import compile_plan
from transpiler import to_source, to_static

from . import timing, workloads as W


def _pipelines():
    default = list(passes.DEFAULT_PIPELINE)
    out = {"default": None, "no passes": []}
    for name in ("hoist_gather_matmul", "fold_gather_addend", "strength_reduce", "fuse_elementwise", "inplace", "licm",
                 "cse"):
        out[f"without {name}"] = [p for p in default if p != name]
    return out


def static_variants(fn, args, floor):
    variants = {"numpy": floor}
    for label, pipeline in _pipelines().items():
        static = to_static(fn, passes=pipeline)
        variants[label] = (lambda s: lambda: s(*args))(static)
    return variants


def first_call_breakdown():
    x, u, w, b = W.rnn_weights()
    xt, ut, wt, bt = (rt.tensor(a) for a in (x, u, w, b))
    fn = W.make_rt_rnn(ut, wt, bt)
    t0 = time.perf_counter()
    to_source(fn)
    t1 = time.perf_counter()
    program = to_static(fn, passes=[]).get_program(xt)      # trace (+ a pass-free compile)
    t2 = time.perf_counter()
    copy = program.clone()
    t3 = time.perf_counter()
    for name in passes.DEFAULT_PIPELINE:
        copy = passes.PASSES[name](copy)
    t4 = time.perf_counter()
    plan = compile_plan(copy, rt.Executor().backend)
    t5 = time.perf_counter()
    plan(x, u, w, b)
    t6 = time.perf_counter()
    return {"convert": t1 - t0, "trace (+ plain compile)": t2 - t1, "clone": t3 - t2, "passes": t4 - t3,
            "compile": t5 - t4, "first run": t6 - t5}


def main():
    breakdown = first_call_breakdown()       # first: nothing converted or compiled yet in this process
    results = {}
    x, u, w, b = W.rnn_weights()
    xt, ut, wt, bt = (rt.tensor(a) for a in (x, u, w, b))
    results["while_rnn"] = static_variants(W.make_rt_rnn(ut, wt, bt), (xt,), lambda: W.numpy_rnn(x, u, w, b))
    g = W._rng().standard_normal(W.GELU_N).astype(np.float32)
    gt = rt.tensor(g)
    results["gelu_1m"] = static_variants(W.rt_gelu, (gt,), lambda: W.numpy_gelu(g))
    ws = W.mlp_weights()
    m = W._rng().standard_normal((1, W.MLP_DIMS[0])).astype(np.float32)
    results["mlp_b1"] = static_variants(W.make_rt_mlp([rt.tensor(a) for a in ws]), (rt.tensor(m),),
                                        lambda: W.numpy_mlp(m, *ws))
    report = {}
    for name, variants in results.items():
        medians, _ = timing.measure(variants, repeats=9, target_s=0.05 if name != "gelu_1m" else 0.1)
        report[name] = medians
        print(f"{name}:")
        for label, us in medians.items():
            print(f"    {label:<30} {us:>10.1f} µs  {us / medians['numpy']:5.2f}×")
    report["first_call_breakdown_ms"] = {k: v * 1e3 for k, v in breakdown.items()}
    print("while_rnn first call, by stage (fresh process, imports done):")
    for k, v in breakdown.items():
        print(f"    {k:<30} {v * 1e3:>8.2f} ms")
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
