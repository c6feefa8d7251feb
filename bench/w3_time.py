"""Where W3's native time goes: its pieces as native code alone, and the whole call.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 taskset -c 0 python -m bench.w3_time

Each piece is a compiled function looping `reps` times over one product or NumPy loop (thread CPU time,
median of 11 interleaved rounds, ns per piece); x 50 (W3's iterations) is its share of a call. The
whole call is the region's kernel (its Python entry, a builtin) and the static function around it.
The 128x128 product runs as the loop runs it (panels read forwards and backwards in turn), and for
comparison in the plain layout at a 64-byte boundary and 16 bytes off one (NumPy's allocator gives 16).
"""
import ctypes
import os
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

from runtime.native import elementwise as ew, gemv  # noqa: E402
from runtime.native.llvm import engine  # noqa: E402
from runtime.native.numpy_loops import strided_loop  # noqa: E402

from . import workloads as W  # noqa: E402


def _at(a, offset_floats=0):
    """A copy of a starting offset_floats past a 64-byte boundary."""
    buf = np.empty(a.size + 32, a.dtype)
    at = (-buf.ctypes.data % 64) // a.itemsize + offset_floats
    out = buf[at:at + a.size].reshape(a.shape)
    out[...] = a
    return out


def _piece(body):
    """`f(x, a, y, t, reps)`: body(module, builder, function, x, a, y, t, i) run reps times."""
    import llvmlite.ir as ir
    eng = engine()
    f32p, i64 = ir.PointerType(ir.FloatType()), ir.IntType(64)
    module = ir.Module(name="piece")
    module.triple = eng.target_machine.triple
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [f32p] * 4 + [i64]), "piece")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    fail = fn.append_basic_block("fail")
    ir.IRBuilder(fail).ret_void()
    start = fn.append_basic_block("start")
    b.branch(start)
    b.position_at_end(start)
    x, a, y, t, reps = fn.args
    prepare = body(module, b, fn, x, a, y, t, None)
    if prepare:
        prepare()
    ew._loop(ir, b, fn, reps, lambda i: body(module, b, fn, x, a, y, t, i))
    b.ret_void()
    return ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 4, ctypes.c_int64)(eng.compile(str(module), ["piece"])["piece"])


def _product(k, n, panel=0):
    def body(module, b, fn, x, a, y, t, i):
        if not panel:
            return None if i is None else b.call(gemv.emit(module, k, n), [x, a, y])
        product, packing = gemv.emit_panel_test(module, k, n, panel)
        if i is None:
            return lambda: b.call(packing, [a, t])
        return b.call(product, [x, a, y, t, i])
    return _piece(body)


def _ufunc_loop(ufunc, n, reduce=False):
    import llvmlite.ir as ir
    loop = strided_loop(ufunc, [np.float32] * (3 if reduce else 2))

    def body(module, b, fn, x, a, y, t, i):
        if i is None:
            return None
        one, zero = ir.Constant(ir.IntType(64), 1), ir.Constant(ir.IntType(64), 0)
        operands = [(y, zero, np.dtype(np.float32))] if reduce else []
        operands.append((x, one, np.dtype(np.float32)))
        ew._call_loop(ir, b, loop, None, operands, y, ir.Constant(ir.IntType(64), n), fn.blocks[1], fn,
                      out_stride=zero if reduce else None)
    return _piece(body)


def pieces(rounds=11):
    k_in, hidden = W.RNN_IN, W.RNN_HIDDEN
    rng = np.random.default_rng(0)
    x = _at(rng.standard_normal(hidden).astype(np.float32))
    w = rng.standard_normal((hidden, hidden)).astype(np.float32)
    u = _at(rng.standard_normal((k_in, hidden)).astype(np.float32))
    t = _at(np.zeros(hidden * hidden, np.float32))
    y = _at(np.zeros(hidden, np.float32))
    panel = gemv.panel_rows(hidden, hidden)
    found = {
        f"h @ W {hidden}x{hidden}, panels of {panel} (the loop's)": (_product(hidden, hidden, panel), _at(w)),
        f"h @ W {hidden}x{hidden}, plain, 64-byte boundary": (_product(hidden, hidden), _at(w)),
        f"h @ W {hidden}x{hidden}, plain, 16 bytes off": (_product(hidden, hidden), _at(w, 4)),
        f"x[i] @ U {k_in}x{hidden} (hoisted, 64-byte boundary)": (_product(k_in, hidden), u),
        f"tanh over {hidden} (NumPy's loop)": (_ufunc_loop(np.tanh, hidden), u),
        f"h.sum() over {hidden} (NumPy's add, reduce form)": (_ufunc_loop(np.add, hidden, reduce=True), u),
    }
    times = {name: [] for name in found}
    reps = 2000
    for _ in range(rounds):
        for name, (f, a) in found.items():
            began = time.thread_time_ns()
            f(x.ctypes.data, a.ctypes.data, y.ctypes.data, t.ctypes.data, reps)
            times[name].append((time.thread_time_ns() - began) / reps)
    return {name: sorted(ts)[len(ts) // 2] for name, ts in times.items()}


def whole(rounds=11, calls=300):
    """(kernel µs, static call µs, NumPy floor µs) of W3, the region compiled at once."""
    os.environ.update({"DY2STATIC_NATIVE": "sync", "DY2STATIC_NATIVE_CACHE": "0"})
    import runtime as rt
    from runtime import native
    from runtime.native import loop_emitter
    from transpiler import to_static
    kernels, seen = [], []
    load = loop_emitter.load_kernel

    def recorded(*args, **kwargs):
        """The kernel, its Python entry wrapped to keep the arguments of a call (before the plan
        takes the entry)."""
        kernel = load(*args, **kwargs)
        if not isinstance(kernel, str):
            entry = kernel.fast

            def keeping(*args):
                if not seen:
                    seen.append(args)
                return entry(*args)
            kernel.fast = keeping
            kernels.append((kernel, entry))
        return kernel
    loop_emitter.load_kernel = recorded
    try:
        x, u, w, b = W.rnn_weights()
        xt, ut, wt, bt = (rt.tensor(a) for a in (x, u, w, b))
        static = to_static(W.make_rt_rnn(ut, wt, bt))
        static(xt)
        native.wait()
    finally:
        loop_emitter.load_kernel = load
    seen.clear()
    static(xt)              # (the wrapper keeps the first call's arguments, and costs ~0.1 µs a call)
    entry, args = kernels[-1][1], seen[0]
    variants = {"kernel": lambda: entry(*args), "static": lambda: static(xt),
                "numpy": lambda: W.numpy_rnn(x, u, w, b)}
    times = {name: [] for name in variants}
    for _ in range(rounds):
        for name, f in variants.items():
            began = time.thread_time_ns()
            for _ in range(calls):
                f()
            times[name].append((time.thread_time_ns() - began) / calls / 1000)
    return {name: sorted(ts)[len(ts) // 2] for name, ts in times.items()}


def main():
    print(f"load average: {os.getloadavg()[0]:.2f}")
    for name, ns in pieces().items():
        print(f"  {name:<58} {ns:8.1f} ns   x50 = {ns * 50 / 1000:5.1f} µs")
    found = whole()
    print(f"  W3 kernel (its builtin entry)                              {found['kernel']:8.1f} µs")
    print(f"  W3 static call                                             {found['static']:8.1f} µs")
    print(f"  W3 NumPy floor                                             {found['numpy']:8.1f} µs   "
          f"(static/floor {found['static'] / found['numpy']:.3f})")


if __name__ == "__main__":
    main()
