"""How fast `load` reads big Programs: ops per second for chains of 10k and 100k ops.

    python -m bench.loader                 # 10k and 100k ops
    python -m bench.loader 10000 300000    # other sizes (past load's max_ops default, it is raised)

Each Program is written as a save would write it (a chain of elementwise ops and
reductions over a [None, 4] input, with sub-blocks: a `cond` every 100 ops), then
loaded with every check the loader makes for untrusted files (CPU seconds beside wall
time: the machine may be shared), then loaded again under tracemalloc for its peak
memory; compiling the plan and one run are timed apart. Reading must stay linear:
ops per CPU second about the same at both sizes.
"""
import json
import os
import sys
import tempfile
import time
import tracemalloc

import numpy as np

import runtime as rt
from runtime.deploy import load_program, save_program
from runtime.serialization import MAX_OPS

COND_EVERY = 100         # a cond (two sub-blocks) every 100 ops: reading must not slow down with many blocks


def chain_document(n_ops):
    """The JSON data of a saved Program of about `n_ops` ops (made from a small traced one)."""
    def small(x):
        y = x * 1.5 + 0.5
        return rt.cond(rt.sum(y) > 0, lambda: y, lambda: -y)
    program, _, _ = rt.trace(small, [rt.InputSpec([None, 4], "float32", "x")])
    with tempfile.TemporaryDirectory() as folder:
        json_path, _ = save_program(program, os.path.join(folder, "small"))
        with open(json_path) as f:
            doc = json.load(f)
    doc.pop("params_sha256", None)
    main = doc["blocks"][0]
    cond_op = next(op for op in main["ops"] if op["type"] == "cond")
    template_blocks = doc["blocks"][1:]
    x = doc["inputs"][0]
    main["vars"] = [v for v in main["vars"] if v["name"] == x]
    main["ops"] = []
    doc["blocks"] = [main]
    current, k = x, 0

    def var(name, shape):
        main["vars"].append({"name": name, "shape": shape, "dtype": "float32", "persistable": False,
                             "weak": False, "kind": "dense"})

    while len(main["ops"]) < n_ops:
        k += 1
        if k % COND_EVERY == 0:         # a cond whose branches yield the value and its negation
            total, pred, out = f"s{k}", f"p{k}", f"v{k}"
            var(total, [])
            main["vars"].append({"name": pred, "shape": [], "dtype": "bool", "persistable": False, "weak": False,
                                 "kind": "dense"})
            var(out, [-1, 4])
            main["ops"].append({"type": "sum", "inputs": [current], "outputs": [total],
                                "attrs": {"axis": None, "keepdims": False}, "origin": f"model.py:{k}"})
            main["ops"].append({"type": "greater", "inputs": [total, {"lit": 0}], "outputs": [pred],
                                "attrs": {}, "origin": f"model.py:{k}"})
            t_idx, f_idx = len(doc["blocks"]), len(doc["blocks"]) + 1
            branches = json.loads(json.dumps(template_blocks))
            neg = f"n{k}"
            branches[0].update(idx=t_idx, parent=0, vars=[], params=[], results=[current], ops=[])
            branches[1].update(idx=f_idx, parent=0, params=[], results=[neg],
                               vars=[{"name": neg, "shape": [-1, 4], "dtype": "float32", "persistable": False,
                                      "weak": False, "kind": "dense"}],
                               ops=[{"type": "negative", "inputs": [current], "outputs": [neg], "attrs": {},
                                     "origin": f"model.py:{k}"}])
            doc["blocks"] += branches
            main["ops"].append({"type": "cond", "inputs": [pred, current], "outputs": [out],
                                "attrs": {"true_block": t_idx, "false_block": f_idx},
                                "origin": cond_op.get("origin")})
        else:
            out = f"v{k}"
            var(out, [-1, 4])
            op_type, literal = ("multiply", 0.999) if k % 2 else ("add", 0.001)
            main["ops"].append({"type": op_type, "inputs": [current, {"lit": literal}], "outputs": [out],
                                "attrs": {}, "origin": f"model.py:{k}"})
        current = out
    doc["outputs"] = [current]
    doc["output_tree"] = None
    doc["output_consts"] = {}
    return doc


def measure(n_ops):
    doc = chain_document(n_ops)
    ops = sum(len(b["ops"]) for b in doc["blocks"])
    with tempfile.TemporaryDirectory() as folder:
        prefix = os.path.join(folder, "chain")
        with open(prefix + ".program.json", "w") as f:
            json.dump(doc, f, indent=1)
        size = os.path.getsize(prefix + ".program.json")
        save_empty_params(prefix)
        start, cpu = time.perf_counter(), time.process_time()
        loaded = load_program(prefix, max_ops=max(ops, MAX_OPS))
        load_s, load_cpu_s = time.perf_counter() - start, time.process_time() - cpu
        del loaded
        tracemalloc.start()             # a second load, for its memory (tracemalloc slows it down)
        loaded = load_program(prefix, max_ops=max(ops, MAX_OPS))
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    start = time.perf_counter()
    loaded(np.ones((2, 4), np.float32))
    run_s = time.perf_counter() - start
    return {"ops": ops, "blocks": len(doc["blocks"]), "json_mb": round(size / 2 ** 20, 1), "load_s": round(load_s, 2),
            "load_cpu_s": round(load_cpu_s, 2), "ops_per_cpu_s": round(ops / load_cpu_s),
            "load_peak_mb": round(peak / 2 ** 20), "bytes_per_op": round(peak / ops),
            "compile_and_run_s": round(run_s, 2)}


def save_empty_params(prefix):
    from runtime.serialization import write_params
    write_params(prefix + ".params.npz", {})


def main(sizes):
    for n in sizes:
        print(json.dumps(measure(n)), flush=True)


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [10_000, 100_000])
