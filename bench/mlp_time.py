"""Where the exported MLP's time goes on the native GEMM: `python -m bench.mlp_time [--batch 256 64]`.

Pinned to one CPU (bench/pin.py), thread CPU time (`time.thread_time`), min of interleaved rounds. Parts
of one `to_static` call of examples/mlp.py's MLP under `rt.no_grad()` with the native tier on
(`DY2STATIC_NATIVE=1`; the kernels are compiled and self-tested before timing): each native `linear`
(+ ReLU) kernel packing its weight inside the call, the same on the weight packed whole once (what a
kept packed copy costs per call), the packing alone, the last layer as the plan runs it (NumPy: its
m * n * k is OpenBLAS's small-matrix kernel's), and the Python around them (the whole call minus the
parts). Also the whole call with kept packed copies turned off (every call packs, as before they were
kept), onnxruntime (one thread) on the exported model where it imports, and the core's FMA peak (24
independent 16-float FMA chains in registers, no loads) against which each kernel's rate is given.
"""
import argparse
import os
import sys
import tempfile
import time

from .pin import pin

PINNED_CPU = pin()

import numpy as np  # noqa: E402


def best(fn, rounds=60, calls=5):
    out = []
    for _ in range(rounds):
        t0 = time.thread_time()
        for _ in range(calls):
            fn()
        out.append((time.thread_time() - t0) / calls * 1e6)
    return min(out), float(np.median(out))


def fma_peak():
    """Billions of float32 FMAs a second this core sustains (min time of 3 runs of 24 independent chains of
    16-float FMAs, 1e6 iterations, thread CPU time), or None without llvmlite."""
    import ctypes
    from runtime.native.llvm import engine
    if engine() is None:
        return None
    v, chains = "<16 x float>", 24
    lines = [f"declare {v} @llvm.fma.v16f32({v}, {v}, {v})", "define void @peak(i64 %n, ptr %out) {", "entry:",
             "  br label %loop", "loop:", "  %i = phi i64 [0, %entry], [%in, %loop]"]
    lines += [f"  %a{j} = phi {v} [zeroinitializer, %entry], [%b{j}, %loop]" for j in range(chains)]
    lines += [f"  %b{j} = call {v} @llvm.fma.v16f32({v} %a{j}, {v} splat (float 1.0), {v} splat (float 1.0))"
              for j in range(chains)]
    lines += ["  %in = add i64 %i, 1", "  %more = icmp ult i64 %in, %n", "  br i1 %more, label %loop, label %exit",
              "exit:"]
    total = "%b0"
    for j in range(1, chains):
        lines.append(f"  %s{j} = fadd {v} {total}, %b{j}")
        total = f"%s{j}"
    lines += [f"  store {v} {total}, ptr %out, align 4", "  ret void", "}"]
    fn = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_void_p)(engine().compile("\n".join(lines) + "\n", ["peak"])["peak"])
    out, n, times = np.zeros(16, np.float32), 1_000_000, []
    for _ in range(3):
        t0 = time.thread_time()
        fn(n, out.ctypes.data)
        times.append(time.thread_time() - t0)
    return n * chains * 16 / min(times) / 1e9


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m bench.mlp_time", description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, nargs="*", default=[256, 64])
    args = p.parse_args(argv)
    os.environ.setdefault("DY2STATIC_NATIVE", "1")
    import runtime as rt
    from runtime import native, nn
    from runtime.native import gemm
    from runtime.nn import functional as F
    from transpiler import to_static
    from .cnn import ours_mlp
    try:
        import onnxruntime as ort
    except Exception:  # noqa: BLE001
        ort = None
    rt.seed(0)
    model = ours_mlp(nn, F)
    static = to_static(model.forward)
    print(f"pinned to CPU {PINNED_CPU}; load {os.getloadavg()[0]:.1f}; min / median of 60 rounds of 5 calls, "
          "thread CPU µs")
    session = None
    if ort is not None:
        import transpiler
        from transpiler import InputSpec
        folder = tempfile.mkdtemp()
        path = transpiler.export_onnx(model.forward, os.path.join(folder, "mlp.onnx"),
                                      input_spec=[InputSpec([None, 512], "float32", "x")])
        options = ort.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    original = gemm.Call.packed_weight
    peak = fma_peak()
    if peak:
        print(f"core FMA peak: {peak:.1f} G float32 FMA/s")
    for batch in args.batch:
        x = np.random.default_rng(0).standard_normal((batch, 512)).astype(np.float32)
        xt = rt.tensor(x)

        def call():
            with rt.no_grad():
                return static(xt)
        for _ in range(3):
            call()
        native.wait()
        for _ in range(3):
            call()
        w = [fc.weight.array for fc in (model.fc1, model.fc2, model.fc3)]
        b = [fc.bias.array for fc in (model.fc1, model.fc2, model.fc3)]
        h1 = np.maximum(x @ w[0].T + b[0], 0)
        h2 = np.maximum(h1 @ w[1].T + b[1], 0)
        parts = {}
        for i, (a, found) in enumerate(((x, (512, 256, True, True)), (h1, (256, 128, True, True)))):
            c = gemm.Call(found)
            packed = c.pack(w[i])
            out = np.empty((batch, found[1]), np.float32)
            parts[f"layer {i + 1} kernel, packing inside"] = lambda a=a, c=c, i=i, found=found, out=out: \
                gemm.multiply(found, a, w[i], b[i], out, c)
            parts[f"layer {i + 1} kernel, packed copy"] = lambda a=a, c=c, i=i, found=found, out=out, p=packed: \
                gemm.multiply(found, a, w[i], b[i], out, c, p)
            parts[f"layer {i + 1} packing alone"] = lambda c=c, i=i: c.pack(w[i])
        parts["layer 3 (NumPy: x @ w.T + b)"] = lambda: np.add(np.matmul(h2, w[2].T), b[2])
        rows = {"static call (packed copies kept)": call}

        def call_packing():
            gemm.Call.packed_weight = lambda self, w: self.packs.clear()    # nothing kept: packed inside
            try:
                return call()
            finally:
                gemm.Call.packed_weight = original
        rows["static call, packing every call"] = call_packing
        if session is not None:
            rows["onnxruntime"] = lambda: session.run(None, {"x": x})
        rows.update(parts)
        print(f"\nbatch {batch}")
        results = {k: best(f) for k, f in rows.items()}
        fmas = {"layer 1": batch * 512 * 256, "layer 2": batch * 256 * 128}
        for k, (lo, med) in results.items():
            rate = [f"{fmas[k[:7]] / lo / 1e3:5.1f} G FMA/s ({fmas[k[:7]] / lo / 1e3 / peak:.0%} of peak)"
                    for _ in (1,) if peak and k[:7] in fmas and "kernel" in k]
            print(f"  {k:<40} {lo:>9.1f} {med:>9.1f}  " + "".join(rate))
        kernels = sum(results[f"layer {i} kernel, packed copy"][0] for i in (1, 2)) + \
            results["layer 3 (NumPy: x @ w.T + b)"][0]
        print(f"  {'Python and the rest (call - parts)':<40} {results['static call (packed copies kept)'][0] - kernels:>9.1f}")
        if session is not None:
            print(f"  static / onnxruntime: {results['static call (packed copies kept)'][0] / results['onnxruntime'][0]:.2f} "
                  f"(packing every call: {results['static call, packing every call'][0] / results['onnxruntime'][0]:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
