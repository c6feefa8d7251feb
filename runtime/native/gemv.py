"""A float32 vector @ matrix product inline in native code, summed in OpenBLAS's own order.

NumPy's matmul of a (1, k) row by a C-contiguous (k, n) matrix is one sgemv call (`blas.product_call`:
row-major, transposed, which OpenBLAS runs as its `sgemv_n` kernel on the matrix read column-major).
A call costs ~0.4 µs beyond its arithmetic (the CBLAS interface, y scaled by beta, the kernel's
dispatch); a loop making one per iteration, or NumPy's 50 calls for a (50, 1, k) stack, pays it each
time. Here the same sums are emitted as LLVM IR, each output's terms added in the order of OpenBLAS
0.3.x's SkylakeX kernels (`kernel/x86_64/sgemv_n_4.c` with `sgemv_n_microk_haswell-4.c` and
`sgemv_n_microk_skylakex-8.c`), every step one correctly rounded `llvm.fma` or `fadd` (no fast-math:
the bits do not depend on how LLVM schedules them). With y = 0 (beta 0) and alpha 1:

- k <= 48 and k != 4 (`sgemv_kernel_n_128`): acc = fma(A[j, i], x[j], acc) for j = 0..k-1 from +0, then
  y[i] = fma(acc, 1, +0);
- otherwise (the 4x8 kernel) over rows i < n & -4: for each group of 8 columns (then one of 4, then 2,
  then 1) t = fma chain over the group's columns from +0, y[i] = fma(t, 1, y[i]); except the first
  (NB & 4) + (NB & 8) rows (NB = n & -4), which the asm kernel's head takes with two chains, the even
  and the odd columns of the group, added (t4 + t5) before y[i] + that (groups of 8 and 4 only); the
  last n % 4 rows (scalar C code, contracted to fma): temp = fma(A[j, i], x[j], temp) over all k,
  y[i] = fma(1, temp, +0).

Nothing is assumed: `check(k, n)` compiles the function alone and takes it only where it gives
np.matmul's (and ndarray.dot's) bits on that shape here, on special and random values; a region that
inlines it exports the function too, and `test_function` runs the same test on the loaded code, at
compile and at disk load. Other shapes, dtypes and BLAS builds keep the CBLAS call.
"""
import ctypes
import threading

import numpy as np

from . import elementwise as ew
from .fast_math import _intrinsic
from .llvm import ARRAY_LAYOUT, engine
from .numpy_loops import probe_values, same_bits

MAX_N, MAX_K = 4096, 1 << 16
HEAD_CHAINS_K = 48          # sgemv_kernel_n_128 takes k <= 48 (but k == 4) columns
LANES, BLOCK = 16, 8         # rows a vector, vectors a block (AVX-512: 16 floats; 8 chains in flight)
_CHECKED = {}
_LOCK = threading.Lock()


def applies(dtype, k, n):
    """'' when an inline gemv of (1, k) @ (k, n) may be tried for dtype, else why not."""
    if np.dtype(dtype) != np.float32:
        return f"inline gemv of {np.dtype(dtype)} (float32 only: dgemv's kernels sum in another order)"
    if not (2 <= k <= MAX_K and 4 <= n <= MAX_N):
        return f"inline gemv of (1, {k}) @ ({k}, {n}): outside the shapes modelled"
    return ""


def function_name(k, n):
    return f"dy2s_sgemv_{k}_{n}"


def emit(module, k, n, name=None):
    """Define `void name(float *x, float *a, float *y)`: y[0:n] = x[0:k] @ a (C-contiguous (k, n)) in
    OpenBLAS's order; the function, or the one the module already holds. Rows go LANES at a time in
    blocks of up to BLOCK vectors whose sums stay in registers across all column groups (a group's
    chains of the block's vectors are independent: the FMA units stay busy); the few head and tail rows
    whose order differs are scalar."""
    import llvmlite.ir as ir
    name = name or function_name(k, n)
    if name in module.globals:
        return module.globals[name]
    f32, i64 = ir.FloatType(), ir.IntType(64)
    ptr = ir.PointerType(f32)
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ptr, ptr, ptr]), name)
    for arg in fn.args:
        arg.add_attribute("noalias")
    x, a, y = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    vec = ir.VectorType(f32, LANES)
    types = {1: f32, LANES: vec}
    slots = {1: [b.alloca(f32)], LANES: [b.alloca(vec) for _ in range(BLOCK)]}    # SROA: registers
    body = fn.append_basic_block("body")
    b.branch(body)
    b.position_at_end(body)
    fmas = {1: _intrinsic(ir, module, "llvm.fma"), LANES: _vector_fma(ir, module, vec)}

    def c64(v):
        return ir.Constant(i64, int(v))

    def const(value, width):
        return ir.Constant(types[width], value if width == 1 else [value] * width)

    def fma(width, p, q, r):
        return b.call(fmas[width], [p, q, r])

    def splat(value, width):
        if width == 1:
            return value
        one_lane = b.insert_element(ir.Constant(vec, ir.Undefined), value, ir.Constant(ir.IntType(32), 0))
        return b.shuffle_vector(one_lane, ir.Constant(vec, ir.Undefined),
                                ir.Constant(ir.VectorType(ir.IntType(32), width), [0] * width))

    def load(col, row, width):
        at = b.gep(a, [b.add(b.mul(col, c64(n)), row)])
        if width == 1:
            return b.load(at)
        value = b.load(b.bitcast(at, ir.PointerType(vec)))
        value.align = 4
        return value

    def store(value, row, width):
        at = b.gep(y, [row])
        if width == 1:
            b.store(value, at)
        else:
            b.store(value, b.bitcast(at, ir.PointerType(vec))).align = 4

    def chain(cols, xs, row, width):
        acc = const(0.0, width)
        for col, xv in zip(cols, xs):
            acc = fma(width, load(col, row, width), xv, acc)
        return acc

    def x_at(col, width):
        return splat(b.load(b.gep(x, [col])), width)

    def for_range(start, stop, emit_body):
        """for i in range(start, stop): emit_body(i), python int bounds (nothing when empty)."""
        if stop > start:
            ew._loop(ir, b, fn, c64(stop - start), lambda i: emit_body(b.add(i, c64(start))))

    def rows_of(row0, width, count, split=False):
        """Outputs row0 .. row0 + width * count - 1 of the 4x8 kernel: each group's chains, then y +
        them; `split`: the asm kernel's head rows (even and odd columns apart, added first)."""
        ys = slots[width][:count]
        zero, one = const(0.0, width), const(1.0, width)
        for slot in ys:
            b.store(zero, slot)

        def group(cols):
            xs = [x_at(col, width) for col in cols]
            for v, slot in enumerate(ys):
                row = b.add(row0, c64(v * width))
                if split and len(cols) >= 4:
                    t = b.fadd(chain(cols[0::2], xs[0::2], row, width), chain(cols[1::2], xs[1::2], row, width))
                    b.store(b.fadd(b.fmul(t, one), b.load(slot)), slot)
                else:
                    b.store(fma(width, chain(cols, xs, row, width), one, b.load(slot)), slot)
        if k // 8:
            ew._loop(ir, b, fn, c64(k // 8), lambda g: group([b.add(b.mul(g, c64(8)), c64(j)) for j in range(8)]))
        col = k // 8 * 8
        for size in (4, 2, 1):
            if k - col >= size:
                group([c64(col + j) for j in range(size)])
                col += size
        for v, slot in enumerate(ys):
            store(b.load(slot), b.add(row0, c64(v * width)), width)

    def columns_of(row0, width, count):
        """Outputs of sgemv_kernel_n_128 (k <= 48): one chain over all k columns from +0, then fma(acc, 1, +0)."""
        cols = [c64(j) for j in range(k)]
        xs = [x_at(col, width) for col in cols]
        for v in range(count):
            row = b.add(row0, c64(v * width))
            store(fma(width, chain(cols, xs, row, width), const(1.0, width), const(0.0, width)), row, width)

    def blocks(first, last, emit_rows):
        """Rows first .. last - 1 (a multiple of LANES) as blocks of BLOCK vectors, then the rest."""
        vectors = (last - first) // LANES
        full, rest = divmod(vectors, BLOCK)
        if full:
            ew._loop(ir, b, fn, c64(full), lambda i: emit_rows(b.add(c64(first), b.mul(i, c64(BLOCK * LANES))),
                                                               LANES, BLOCK))
        if rest:
            emit_rows(c64(first + full * BLOCK * LANES), LANES, rest)

    if k <= HEAD_CHAINS_K and k != 4:
        vectors_end = n // LANES * LANES
        blocks(0, vectors_end, columns_of)
        for_range(vectors_end, n, lambda i: columns_of(i, 1, 1))
        b.ret_void()
        return fn

    rows = n & -4
    head = (rows & 4) + (rows & 8)
    for_range(0, head, lambda i: rows_of(i, 1, 1, split=True))
    blocks(head, rows, rows_of)
    for i in range(rows, n):            # the last n % 4 outputs (C code): one chain over all k, fma(1, temp, +0)
        temp = slots[1][0]
        b.store(const(0.0, 1), temp)
        ew._loop(ir, b, fn, c64(k), lambda j: b.store(fma(1, load(j, c64(i), 1), x_at(j, 1), b.load(temp)), temp))
        b.store(fma(1, const(1.0, 1), b.load(temp), const(0.0, 1)), b.gep(y, [c64(i)]))
    b.ret_void()
    return fn


def _vector_fma(ir, module, vec):
    name = f"llvm.fma.v{vec.count}f32"
    if name in module.globals:
        return module.globals[name]
    return ir.Function(module, ir.FunctionType(vec, [vec] * 3), name)


def check(k, n):
    """'' when the inline gemv gives np.matmul's bits for float32 (1, k) @ (k, n) here, else why not;
    compiled alone and tested once per shape (the compiler thread)."""
    why = applies(np.float32, k, n)
    if why:
        return why
    key = (k, n)
    with _LOCK:
        if key in _CHECKED:
            return _CHECKED[key]
    eng = engine()
    if eng is None:
        return "no LLVM"
    import llvmlite.ir as ir
    module = ir.Module(name=function_name(k, n))
    module.triple = eng.target_machine.triple
    emit(module, k, n)
    address = eng.compile(str(module), [function_name(k, n)])[function_name(k, n)]
    why = test_function(address, k, n)
    with _LOCK:
        _CHECKED[key] = why
    return why


def test_function(address, k, n):
    """'' when the compiled function at `address` gives np.matmul's and ndarray.dot's bits on special
    and random values of that shape, else why not."""
    call = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)(address)
    rng = np.random.default_rng(27)
    for trial in range(4):
        if trial == 0:
            x = probe_values(np.float32, k).reshape(1, k)
            w = np.roll(probe_values(np.float32, k * n), 7).reshape(k, n)
        elif trial == 1:        # the specials in the matrix, the vector finite
            x = rng.standard_normal((1, k)).astype(np.float32)
            w = np.roll(probe_values(np.float32, k * n), 3).reshape(k, n)
        else:
            x = (rng.standard_normal((1, k)) * 10.0 ** (trial - 2)).astype(np.float32)
            w = rng.standard_normal((k, n)).astype(np.float32)
        got = np.empty((1, n), np.float32)
        with np.errstate(all="ignore"):
            want, dot = np.matmul(x, w), x.dot(w)
            call(x.ctypes.data, w.ctypes.data, got.ctypes.data)
        if not (same_bits(got, want) and same_bits(got, dot)):
            return f"self-test: the inline sgemv differs from NumPy's matmul on (1, {k}) @ ({k}, {n})"
    return ""


_STACKED = {}


def stacked_known(batch, k, n):
    """What `stacked_kernel` made for that shape before (a function or why not), or None: not yet."""
    return _STACKED.get((batch, k, n))


def stacked_kernel(batch, k, n):
    """`f(a, b, out)` for C-contiguous float32 ndarrays a (batch, 1, k), b (k, n), out (batch, 1, n):
    out[t] = a[t] @ b for every t, each row the inline gemv (NumPy's matmul makes `batch` sgemv calls
    for it: a recurrent layer's hoisted input product); or why not. The caller checks the operands."""
    key = (batch, k, n)
    if key not in _STACKED:
        _STACKED[key] = _stacked(batch, k, n)
    return _STACKED[key]


def _stacked(batch, k, n):
    why = check(k, n)
    if why:
        return why
    import llvmlite.ir as ir
    eng = engine()
    name = f"dy2s_stacked_sgemv_{batch}_{k}_{n}"
    module = ir.Module(name=name)
    module.triple = eng.target_machine.triple
    inner = emit(module, k, n)
    i8p, f32p = ir.PointerType(ir.IntType(8)), ir.PointerType(ir.FloatType())
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [i8p] * 3), name)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    at = ir.Constant(ir.IntType(64), ARRAY_LAYOUT["data"])
    x, w, y = (b.load(b.bitcast(b.gep(obj, [at]), ir.PointerType(f32p))) for obj in fn.args)
    ew._loop(ir, b, fn, ir.Constant(ir.IntType(64), batch), lambda t: b.call(
        inner, [b.gep(x, [b.mul(t, ir.Constant(ir.IntType(64), k))]), w,
                b.gep(y, [b.mul(t, ir.Constant(ir.IntType(64), n))])]))
    b.ret_void()
    address = eng.compile(str(module), [name])[name]
    call = ctypes.PYFUNCTYPE(None, ctypes.py_object, ctypes.py_object, ctypes.py_object)(address)
    rng = np.random.default_rng(29)
    a = rng.standard_normal((batch, 1, k)).astype(np.float32)
    w = rng.standard_normal((k, n)).astype(np.float32)
    got = np.empty((batch, 1, n), np.float32)
    call(a, w, got)
    if not same_bits(got, np.matmul(a, w)):
        return f"self-test: the stacked inline sgemv differs from NumPy's matmul on {batch} x (1, {k}) @ ({k}, {n})"
    call.inline_gemvs = 1           # for native.stats()
    return call
