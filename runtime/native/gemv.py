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

A loop's product by one matrix may read it in panels (`panel_rows`, `emit(..., panel=)`, `emit_panels`:
copied once a call, read forwards and backwards in turn, so each iteration starts on the panel the last
one left in L1); the same sums in the same order per output, self-tested both ways (kind "p<rows>").
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


def applies(dtype, k, n, kind="n"):
    """'' when an inline gemv of k numbers by n outputs (kind "n": (1, k) @ (k, n); "t": by W.T, W
    (n, k)) may be tried for dtype, else why not."""
    if np.dtype(dtype) != np.float32:
        return f"inline gemv of {np.dtype(dtype)} (float32 only: dgemv's kernels sum in another order)"
    if kind == "n" and not (2 <= k <= MAX_K and 4 <= n <= MAX_N):
        return f"inline gemv of (1, {k}) @ ({k}, {n}): outside the shapes modelled"
    # sgemv_t: k <= 8 is another kernel, k % 4 and n % 4 other code, k > NBMAX blocks
    if kind == "t" and not (k > 8 and k % 4 == 0 and k <= MAX_N and n % 4 in (0, 2) and 2 <= n <= MAX_K):
        return f"inline gemv of (1, {k}) @ ({n}, {k}).T: outside the shapes modelled"
    return ""


def function_name(k, n, kind="n"):
    """The function's name; for a panel kind ("p64": `panel_rows`), its self-test entry's (`emit_panel_test`)."""
    return f"dy2s_sgemv{'' if kind == 'n' else '_' + kind}_{k}_{n}"


PANEL_BYTES, L1_BYTES, SNAKE_BYTES = 32 << 10, 40 << 10, 96 << 10


def panel_rows(k, n):
    """Rows per panel (`emit(..., panel=)`) for a loop's (1, k) @ (k, n) by one matrix, or 0: none. Only
    for the 4x8 kernel's shapes (k > 48), a matrix beyond L1 (~40 KiB used: below, every call reads it
    from L1 anyway) whose panels of 64, 32 or 16 rows fit half of it, two panels at least; and where
    the panels gain (measured, bench/RESULTS.md): a matrix up to ~2x L1 (the panel read last and more
    stay in L1 for the next call: W3's 64 KiB, ~25% faster), or rows n floats apart that are not whole
    cache lines apart (n % 16: every other row's vectors straddle two lines; the panels' rows do not:
    ~15-35% faster). A larger matrix of whole-line rows streams from L2 as fast without them."""
    rows = n & -4
    vector_rows = rows - (rows & 12)
    if k <= HEAD_CHAINS_K or k * n * 4 <= L1_BYTES or (n % LANES == 0 and k * n * 4 > SNAKE_BYTES):
        return 0
    for rows_per in (64, 32, 16):
        if k * rows_per * 4 <= PANEL_BYTES and vector_rows // rows_per >= 2:
            return rows_per
    return 0


def panel_floats(k, n, panel):
    """Floats of the panels' copy of a (k, n) matrix."""
    rows = n & -4
    return (rows - (rows & 12)) // panel * panel * k


def emit(module, k, n, name=None, panel=0):
    """Define `void name(float *x, float *a, float *y)`: y[0:n] = x[0:k] @ a (C-contiguous (k, n)) in
    OpenBLAS's order; the function, or the one the module already holds. Rows go LANES at a time in
    blocks of up to BLOCK vectors whose sums stay in registers across all column groups (a group's
    chains of the block's vectors are independent: the FMA units stay busy); the few head and tail rows
    whose order differs are scalar.

    `panel` (`panel_rows`): `void name(float *x, float *a, float *y, float *panels, i64 backwards)`: the
    vector rows in whole panels of `panel` rows read from `panels` (`emit_panels`: each panel's k x panel
    numbers contiguous), the panels in order, or last to first where `backwards` is odd. A caller
    alternating it each call (a loop's product by the same matrix) starts on the panels the last call
    read last, still in L1: the same sums, in the same order per output, fewer reads from L2."""
    import llvmlite.ir as ir
    name = name or function_name(k, n, f"p{panel}" if panel else "n")
    if name in module.globals:
        return module.globals[name]
    f32, i64 = ir.FloatType(), ir.IntType(64)
    fn, b = _vector_function(ir, module, name, panels=bool(panel))
    x, a, y = fn.args[:3]
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

    def load(col, row, width, panel_at=None):
        if panel_at is None:
            at = b.gep(a, [b.add(b.mul(col, c64(n)), row)])
        else:           # (the panel's first row, its numbers): row-major k x panel
            first, numbers = panel_at
            at = b.gep(numbers, [b.add(b.mul(col, c64(panel)), b.sub(row, first))])
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

    def chain(cols, xs, row, width, panel_at=None):
        acc = const(0.0, width)
        for col, xv in zip(cols, xs):
            acc = fma(width, load(col, row, width, panel_at), xv, acc)
        return acc

    def x_at(col, width):
        return splat(b.load(b.gep(x, [col])), width)

    def for_range(start, stop, emit_body):
        """for i in range(start, stop): emit_body(i), python int bounds (nothing when empty)."""
        if stop > start:
            ew._loop(ir, b, fn, c64(stop - start), lambda i: emit_body(b.add(i, c64(start))))

    def rows_of(row0, width, count, split=False, panel_at=None):
        """Outputs row0 .. row0 + width * count - 1 of the 4x8 kernel: each group's chains, then y +
        them; `split`: the asm kernel's head rows (even and odd columns apart, added first); `panel_at`:
        read from a panel (`load`)."""
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
                    b.store(fma(width, chain(cols, xs, row, width, panel_at), one, b.load(slot)), slot)
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
    if panel:
        panels, backwards = fn.args[3:]
        whole = (rows - head) // panel
        flip = b.and_(backwards, c64(1))

        def in_panel(i):            # the i-th panel read: i, or whole - 1 - i backwards
            q = b.add(b.mul(b.sub(c64(1), b.mul(flip, c64(2))), i), b.mul(flip, c64(whole - 1)))
            first = b.add(c64(head), b.mul(q, c64(panel)))
            rows_of(first, LANES, panel // LANES,
                    panel_at=(first, b.gep(panels, [b.mul(q, c64(k * panel))])))
        ew._loop(ir, b, fn, c64(whole), in_panel)
        blocks(head + whole * panel, rows, rows_of)
    else:
        blocks(head, rows, rows_of)
    for i in range(rows, n):            # the last n % 4 outputs (C code): one chain over all k, fma(1, temp, +0)
        temp = slots[1][0]
        b.store(const(0.0, 1), temp)
        ew._loop(ir, b, fn, c64(k), lambda j: b.store(fma(1, load(j, c64(i), 1), x_at(j, 1), b.load(temp)), temp))
        b.store(fma(1, const(1.0, 1), b.load(temp), const(0.0, 1)), b.gep(y, [c64(i)]))
    b.ret_void()
    return fn


def _vector_function(ir, module, name, panels=False):
    """`void name(float *x, float *matrix, float *y)` (`panels`: and `float *panels, i64 backwards`),
    its pointers noalias, and a builder at its entry block: what both product kernels (emit, emit_t) define."""
    ptr = ir.PointerType(ir.FloatType())
    extra = [ptr, ir.IntType(64)] if panels else []
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ptr, ptr, ptr] + extra), name)
    for arg in fn.args[:4]:
        arg.add_attribute("noalias")
    return fn, ir.IRBuilder(fn.append_basic_block("entry"))


def _vector_fma(ir, module, vec):
    name = f"llvm.fma.v{vec.count}f32"
    if name in module.globals:
        return module.globals[name]
    return ir.Function(module, ir.FunctionType(vec, [vec] * 3), name)


def check(k, n, kind="n"):
    """'' when the inline gemv gives np.matmul's bits for float32 (1, k) @ (k, n) (kind "n"; kind "t":
    (1, k) @ W.T for a C-contiguous W (n, k), and W @ (k, 1)) here, else why not; compiled alone and
    tested once per shape (the compiler thread)."""
    panel = int(kind[1:]) if kind.startswith("p") else 0
    why = applies(np.float32, k, n, "n" if panel else kind)
    if why:
        return why
    if panel and panel != panel_rows(k, n):
        return f"inline gemv of (1, {k}) @ ({k}, {n}) in panels of {panel} rows: not a shape panels take"
    key = (kind, k, n)
    with _LOCK:
        if key in _CHECKED:
            return _CHECKED[key]
    eng = engine()
    if eng is None:
        return "no LLVM"
    import llvmlite.ir as ir
    name = function_name(k, n, kind)
    module = ir.Module(name=name)
    module.triple = eng.target_machine.triple
    if panel:
        emit_panel_test(module, k, n, panel)
    else:
        (emit if kind == "n" else emit_t)(module, k, n)
    why = test_function(eng.compile(str(module), [name])[name], k, n, kind)
    with _LOCK:
        _CHECKED[key] = why
    return why


def test_function(address, k, n, kind="n"):
    """'' when the compiled function at `address` gives NumPy's bits on special and random values of
    that shape (np.matmul and ndarray.dot, in each form the plan may call for it), else why not."""
    panel = int(kind[1:]) if kind.startswith("p") else 0
    if panel:           # the self-test entry: panels made, read forwards and backwards (`emit_panel_test`)
        test = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 5)(address)
        panels = np.empty(max(panel_floats(k, n, panel), 1), np.float32)
        backwards = np.empty((1, n), np.float32)

        def call(x, w, y):
            test(x, w, y, panels.ctypes.data, backwards.ctypes.data)
        kind = "n"
    else:
        call = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)(address)
        backwards = None
    rng = np.random.default_rng(27)
    shape = (k, n) if kind == "n" else (n, k)
    # special values at every position class, repeated (a shape's own 50K-element probe costs ~20 ms)
    special = np.resize(np.roll(probe_values(np.float32, 4099), 7), k * n).reshape(shape)
    for trial in range(3):      # at disk load too: cheap (~0.3-1 ms a shape)
        if trial == 0:
            x, w = probe_values(np.float32, k).reshape(1, k), special
        elif trial == 1:        # the specials in the matrix, the vector finite
            x, w = rng.standard_normal((1, k)).astype(np.float32), special
        else:
            x = (rng.standard_normal((1, k)) * 100.0).astype(np.float32)
            w = rng.standard_normal(shape).astype(np.float32)
        got = np.empty((1, n), np.float32)
        with np.errstate(all="ignore"):
            if kind == "n":
                wants = [np.matmul(x, w), x.dot(w)]
            else:       # x @ W.T, and W @ x as a column (the same sgemv call in NumPy)
                wants = [np.matmul(x, w.T), np.matmul(w, x.T).T, w.dot(x.T).T]
            call(x.ctypes.data, w.ctypes.data, got.ctypes.data)
        if not all(same_bits(got, want) for want in wants):
            return f"self-test: the inline sgemv_{kind} differs from NumPy's matmul for {k} by {n}"
        if backwards is not None and not same_bits(backwards, wants[0]):
            return (f"self-test: the inline sgemv in panels of {panel} rows read backwards differs from "
                    f"NumPy's matmul for {k} by {n}")
    return ""


def emit_t(module, k, n, name=None):
    """Define `void name(float *x, float *w, float *y)`: y[j] = w[j] . x for a C-contiguous w (n, k) in
    the order of OpenBLAS's sgemv_t 4x4 kernel (`sgemv_t_microk_haswell-4.c`), which NumPy's matmul
    runs for x @ W.T and W @ column: eight lanes per output, lane l summing (fma, from +0) elements l,
    l + 8, ... of each 16 (after a first 4 into lanes 0-3 where k & 4, and 8 where k & 8); then
    (l4 + l0, l5 + l1, l6 + l2, l7 + l3) added pairwise, ((0 + 1) + (2 + 3)), y = that * 1 + 0. Outputs
    go eight at a time (eight independent chains). The last two outputs where n % 4 == 2 are
    `sgemv_kernel_4x2`'s (SSE, in sgemv_t_4.c): four lanes, lane l adding the products (mulps, addps:
    no fma) of elements l, l + 4, ... from +0, then two haddps, ((0 + 1) + (2 + 3)); y = 0 + that * 1.
    (n % 4 == 1 or 3 takes a 4x1 kernel whose order is not modelled: the CBLAS call stays.)"""
    import llvmlite.ir as ir
    name = name or function_name(k, n, "t")
    if name in module.globals:
        return module.globals[name]
    f32, i64, i32 = ir.FloatType(), ir.IntType(64), ir.IntType(32)
    fn, b = _vector_function(ir, module, name)
    x, w, y = fn.args
    width = 8
    vec = ir.VectorType(f32, width)
    slots = [b.alloca(vec) for _ in range(BLOCK)]        # SROA: registers
    body = fn.append_basic_block("body")
    b.branch(body)
    b.position_at_end(body)
    fma = _vector_fma(ir, module, vec)
    zero = ir.Constant(vec, [0.0] * width)

    def c64(v):
        return ir.Constant(i64, int(v))

    def load(base, at, lanes):
        """`lanes` floats from base[at] as a vector of 8 (the rest 0: a 4-lane fma leaves lanes 4-7 alone)."""
        if lanes == width:
            value = b.load(b.bitcast(b.gep(base, [at]), ir.PointerType(vec)))
            value.align = 4
            return value
        value = zero
        for lane in range(lanes):
            value = b.insert_element(value, b.load(b.gep(base, [b.add(at, c64(lane))])), ir.Constant(i32, lane))
        return value

    def outputs(j0, count):
        """Outputs j0 .. j0 + count - 1."""
        accs = slots[:count]
        for slot in accs:
            b.store(zero, slot)

        def step(at, lanes):
            xv = load(x, at, lanes)
            for v, slot in enumerate(accs):
                row = b.mul(b.add(j0, c64(v)), c64(k))
                b.store(b.call(fma, [load(w, b.add(row, at), lanes), xv, b.load(slot)]), slot)
        first = 0
        if k & 4:
            step(c64(0), 4)
            first = 4
        if k & 8:
            step(c64(first), 8)
            first += 8
        if k - first >= 16:
            ew._loop(ir, b, fn, c64((k - first) // 16), lambda i: (
                step(b.add(c64(first), b.mul(i, c64(16))), 8),
                step(b.add(c64(first + 8), b.mul(i, c64(16))), 8)))
        for v, slot in enumerate(accs):
            acc = b.load(slot)
            lane = [b.extract_element(acc, ir.Constant(i32, j)) for j in range(width)]
            s = [b.fadd(lane[j + 4], lane[j]) for j in range(4)]
            total = b.fadd(b.fadd(s[0], s[1]), b.fadd(s[2], s[3]))
            b.store(b.fadd(b.fmul(total, ir.Constant(f32, 1.0)), ir.Constant(f32, 0.0)),
                    b.gep(y, [b.add(j0, c64(v))]))

    def pair_outputs(js):
        """Outputs js of sgemv_kernel_4x2: four lanes each of separately rounded products and sums (the
        two chains in one loop, as the kernel runs them: their latencies overlap)."""
        vec4 = ir.VectorType(f32, 4)
        here = b.block
        b.position_at_start(fn.entry_basic_block)      # entry allocas: SROA keeps them in registers
        accs = [b.alloca(vec4) for _ in js]
        b.position_at_end(here)
        for acc in accs:
            b.store(ir.Constant(vec4, [0.0] * 4), acc)

        def quad(i):
            at = b.mul(i, c64(4))
            xs = b.load(b.bitcast(b.gep(x, [at]), ir.PointerType(vec4)))
            xs.align = 4
            for j, acc in zip(js, accs):
                ws = b.load(b.bitcast(b.gep(w, [b.add(c64(j * k), at)]), ir.PointerType(vec4)))
                ws.align = 4
                b.store(b.fadd(b.load(acc), b.fmul(ws, xs)), acc)

        ew._loop(ir, b, fn, c64(k // 4), quad)
        for j, acc in zip(js, accs):
            total = b.load(acc)
            lane = [b.extract_element(total, ir.Constant(i32, at)) for at in range(4)]
            total = b.fadd(b.fadd(lane[0], lane[1]), b.fadd(lane[2], lane[3]))
            b.store(b.fadd(ir.Constant(f32, 0.0), b.fmul(total, ir.Constant(f32, 1.0))), b.gep(y, [c64(j)]))

    full, rest = divmod(n & -4, BLOCK)
    if full:
        ew._loop(ir, b, fn, c64(full), lambda i: outputs(b.mul(i, c64(BLOCK)), BLOCK))
    if rest:
        outputs(c64(full * BLOCK), rest)
    if n % 4:
        pair_outputs(range(n & -4, n))
    b.ret_void()
    return fn


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


def emit_panels(module, k, n, panel, name=None):
    """Define `void name(float *a, float *panels)`: the whole panels of `panel` rows of a C-contiguous
    (k, n) matrix (after the 4x8 kernel's head rows), each k x panel row-major, one after the other: what
    `emit(..., panel=panel)` reads. A copy: the numbers, so the sums, are a's."""
    import llvmlite.ir as ir
    name = name or f"dy2s_sgemv_panels{panel}_{k}_{n}"
    if name in module.globals:
        return module.globals[name]
    f32, i64 = ir.FloatType(), ir.IntType(64)
    vec = ir.PointerType(ir.VectorType(f32, LANES))
    ptr = ir.PointerType(f32)
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ptr, ptr]), name)
    for arg in fn.args:
        arg.add_attribute("noalias")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    a, panels = fn.args
    rows = n & -4
    head = rows & 12

    def c64(v):
        return ir.Constant(i64, int(v))

    def row(q, j):
        src = b.add(b.mul(j, c64(n)), b.add(c64(head), b.mul(q, c64(panel))))
        dst = b.mul(b.add(b.mul(q, c64(k)), j), c64(panel))
        for v in range(panel // LANES):
            value = b.load(b.bitcast(b.gep(a, [b.add(src, c64(v * LANES))]), vec))
            value.align = 4
            b.store(value, b.bitcast(b.gep(panels, [b.add(dst, c64(v * LANES))]), vec)).align = 4

    ew._loop(ir, b, fn, c64((rows - head) // panel), lambda q: ew._loop(ir, b, fn, c64(k), lambda j: row(q, j)))
    b.ret_void()
    return fn


def emit_panel_test(module, k, n, panel, prefix=""):
    """(product, packing): `emit(..., panel=panel)` and `emit_panels`, defined with the self-test entry
    `void name(float *x, float *a, float *y, float *panels, float *y2)` (name: prefix +
    function_name(k, n, "p<panel>")): the panels of a made, y = x @ a read forwards and y2 backwards; a
    region exporting it lets `test_function` check the loaded code."""
    import llvmlite.ir as ir
    product = emit(module, k, n, name=f"{prefix}dy2s_sgemv_{k}_{n}_in_panels{panel}", panel=panel)
    packing = emit_panels(module, k, n, panel, name=f"{prefix}dy2s_sgemv_panels{panel}_{k}_{n}")
    name = prefix + function_name(k, n, f"p{panel}")
    if name not in module.globals:
        ptr = ir.PointerType(ir.FloatType())
        fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ptr] * 5), name)
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        x, a, y, panels, y2 = fn.args
        b.call(packing, [a, panels])
        for out, backwards in ((y, 0), (y2, 1)):
            b.call(product, [x, a, out, panels, ir.Constant(ir.IntType(64), backwards)])
        b.ret_void()
    return product, packing
