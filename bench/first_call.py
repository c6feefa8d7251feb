"""W6: the first call in a fresh process — convert + trace + compile + run — and the peers' first calls.

Run as `python -m bench.first_call WORKLOAD VARIANT`: imports are done (and timed)
before the clock starts; it prints one JSON line.
"""
import json
import sys
import time


def main(workload, variant):
    from .pin import pin
    pin()                   # one CPU, as the timed runs
    t0 = time.perf_counter()
    import numpy as np  # noqa: F401
    import runtime as rt  # noqa: F401
    from transpiler import to_static
    from . import workloads as W
    imported = time.perf_counter() - t0
    if workload == "mlp_b1":
        ws = W.mlp_weights()
        x = W._rng().standard_normal((1, W.MLP_DIMS[0])).astype(np.float32)
        args = [x] + ws
    else:
        x, u, w, b = W.rnn_weights()
        args = [x, u, w, b]
    if variant == "dy2static":
        tensors = [rt.tensor(a) for a in args]
        start, cpu = time.perf_counter(), time.thread_time()
        if workload == "mlp_b1":
            static = to_static(W.make_rt_mlp(tensors[1:]))
        else:
            static = to_static(W.make_rt_rnn(*tensors[1:]))
        out = static(tensors[0])
        out.numpy()
        elapsed = time.perf_counter() - start
        cpu = time.thread_time() - cpu       # the caller's own CPU time: steadier than the clock on a loaded machine
    else:
        from . import peers
        try:                                  # the peer's own import is not part of its first call
            {"torch.jit.script": peers._torch, "jax.jit": peers._jax, "tf.function": peers._tf,
             "paddle.jit": peers._paddle}[variant]()
        except Exception as e:  # noqa: BLE001
            print(json.dumps({"skipped": f"{type(e).__name__}: {e}"[:120]}))
            return
        start = time.perf_counter()
        built = (peers.mlp(args[0], args[1:], (variant,)) if workload == "mlp_b1"
                 else peers.rnn(*args, W.RNN_T, (variant,)))
        elapsed = time.perf_counter() - start     # building a peer includes its first call
        if variant not in built:
            print(json.dumps({"skipped": peers.SKIPPED.get(variant, "not available")}))
            return
    result = {"first_call_ms": elapsed * 1e3, "import_ms": imported * 1e3}
    if variant == "dy2static":
        result["first_call_cpu_ms"] = cpu * 1e3
    if variant == "dy2static" and rt.Executor().native:       # DY2STATIC_NATIVE on: how its regions started
        result["native_regions"] = {k: v for k, v in rt.native.stats().items() if k != "reasons" and v}
        result["llvmlite_imported"] = "llvmlite" in sys.modules
    print(json.dumps(result))


if __name__ == "__main__":
    main(*sys.argv[1:3])
