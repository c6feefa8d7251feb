"""`linear` (x @ w.T + bias, then ReLU where the plan applies one) as native code with OpenBLAS's bits.

NumPy's matmul of a C-contiguous (m, k) x by w.T (w C-contiguous (n, k)) is one OpenBLAS sgemm call.
On the SkylakeX core (AVX-512; the core NumPy's bundled OpenBLAS picks on this class of CPU) each
element of C is, per `driver/level3/level3.c` and `kernel/x86_64/sgemm_kernel_16x4_skylakex_3.c`:

    C = +0                                      (beta = 0: sgemm_beta zeroes C)
    for each K block [k0, k1) (`blocks`: GEMM_Q = 448, a remainder in (448, 896) split in two):
        acc = +0; for kk in k0..k1-1: acc = fma(x[i, kk], w[j, kk], acc)     (one chain, in k order)
        C = C + acc                             (the kernel's store: fma(acc, alpha = 1, C))

and the plan then adds the bias (`+=`: one rounding) and takes `maximum(., 0)`. This module computes
exactly that in one pass: the FMA chains in registers (tiles of 8 rows x 32 columns of C), the block sums,
the bias and the ReLU applied to the tile before it is stored (NumPy's plan makes two more passes over C).
The weight is packed one 32-row panel and one K block at a time, inside the call, into a buffer that
stays in L1 (16 x 16 blocks transposed in registers) — or, from a weight's second call, read from a copy
packed whole once (`dy2s_pack`, the same layout) and kept while that array lives. A kept copy cannot go
stale: every write the API makes gives a Tensor a new array, and an array user code may write in place
(`layer.weight.numpy()[...] = v`, a NumPy array fed as it is) is marked escaped (`runtime/buffers.py`)
and packed inside each call as before.

Not NumPy's order, so never taken: NumPy's gemv (m or n of 1), OpenBLAS's small-matrix kernels (used
where m * n * k <= 1e6), a k whose split differs between OpenBLAS's one-thread and threaded drivers (a
remainder in (448, 896) whose half is not a multiple of 16), other dtypes (another kernel). Any n is
taken (the last panel is masked). Bits are tested, not assumed: `check(found, m)` compares the kernel with
the plan's NumPy lines for that (k, n, bias, ReLU) on special and random values, every row-tail size and
the traced row count, once per shape and process, in the compiler thread (whether the module was just
compiled or loaded from the disk cache); a shape that differs stays on NumPy.
"""
import ctypes
import threading
import weakref

import numpy as np
from numpy._core import _multiarray_umath

from ..buffers import escaped, unmarked
from . import disk_cache, objects
from .tiering import Warming
from .llvm import ARRAY_LAYOUT, engine, layout_ok, may_be_available
from .loop_emitter import builtin
from .numpy_loops import probe_values, same_bits

HALVES = 2              # 16-float vectors per tile row
NR = 16 * HALVES        # columns of C per tile
MR = 8                  # rows of C per tile (16 accumulators)
UNROLL = 4              # k steps per loop iteration (then one at a time): the order of each chain is unchanged
ROW_TILES = (8, 4, 2, 1)            # the last rows as tiles of 4, 2 and 1 (each element's sum is the same)
GEMM_Q, UNROLL_M = 448, 16          # OpenBLAS SkylakeX: SGEMM_DEFAULT_Q, SGEMM_DEFAULT_UNROLL_M
SMALL_MNK = 1e6         # sgemm_small_kernel_permit_skylakex: small-matrix kernels up to m * n * k = 100^3
BIAS, RELU, PACKED = 1, 2, 4      # the kernel's flags (PACKED: w is dy2s_pack's buffer)
_NAMES = ("dy2s_gemm", "dy2s_pack", "dy2s_gemm_objects", "dy2s_gemm_fast")
_STATE = {}
_LOCK = threading.Lock()
_CHECKED = {}


def openblas_core():
    """The core NumPy's OpenBLAS picked at load ('SkylakeX', 'Haswell', ...), or '' (another BLAS)."""
    try:
        library = ctypes.CDLL(_multiarray_umath.__file__)
    except OSError:
        return ""
    for name in ("scipy_openblas_get_corename64_", "openblas_get_corename64_", "scipy_openblas_get_corename",
                 "openblas_get_corename"):
        fn = getattr(library, name, None)
        if fn is not None:
            fn.restype = ctypes.c_char_p
            return (fn() or b"").decode()
    return ""


def blocks(k):
    """OpenBLAS's K blocks [(k0, k1), ...] for one sgemm of inner size k, or None where its one-thread
    driver (level3.c: the remainder's half rounded up to UNROLL_M) and threaded one (level3_thread.c:
    (r + 1) / 2) split k differently (NumPy's bits then depend on OPENBLAS_NUM_THREADS)."""
    out, ls = [], 0
    while ls < k:
        r = k - ls
        if r >= 2 * GEMM_Q:
            step = GEMM_Q
        elif r > GEMM_Q:
            step = (r // 2 + UNROLL_M - 1) // UNROLL_M * UNROLL_M
            if step != (r + 1) // 2:
                return None
        else:
            step = r
        out.append((ls, ls + step))
        ls += step
    return out


def analyse(form, out, relu):
    """(k, n, has bias, relu) for a `linear` form that may run here, or why not. `relu`: the plan
    applies maximum(., +0) to the result next (and nothing else reads it). A static row count too small
    for OpenBLAS's level-3 driver (its small-matrix kernels sum in another order) is why not."""
    _, x, w, transposed, bias = form
    if not transposed or x.ndim != 2 or w.ndim != 2 or out.ndim != 2:
        return "not a 2-D linear"
    if not np.dtype(x.dtype) == np.dtype(w.dtype) == np.dtype(out.dtype) == np.dtype("float32"):
        return "a linear not of float32 (OpenBLAS's sgemm order is the one modelled)"
    if bias is not None and (np.dtype(bias.dtype) != np.dtype("float32") or bias.ndim != 1):
        return "a bias other than one float32 row"
    n, k = w.static_shape
    if n < 0 or k < 0:
        return "a weight of dynamic shape"
    if n < 2 or k < 2:
        return "a linear NumPy runs without sgemm (gemv or no BLAS)"
    if blocks(k) is None:
        return f"k = {k}: OpenBLAS's one-thread and threaded drivers split it differently"
    if 0 <= x.static_shape[0] < smallest_rows(k, n):
        return "m * n * k <= 1e6: OpenBLAS's small-matrix kernels (or gemv), not the modelled order"
    return (int(k), int(n), bias is not None, bool(relu))


# --- the code ----------------------------------------------------------------------------------------
def _micro(rows, halves):
    """One tile: `rows` rows of C by 16 * `halves` columns (the last vector masked by %mask), K block [k0, k1)."""
    v = "<16 x float>"
    unroll = UNROLL if rows == MR else 1        # the tail tiles run once per panel: less code to compile
    lines = [f"define internal void @micro_{rows}_{halves}(ptr noalias %a, i64 %lda, ptr noalias %bp, ptr noalias %c,"
             " i64 %ldc, i64 %k0, i64 %k1, i1 %first, i1 %last, ptr noalias %bias, i32 %flags, i16 %mask) {",
             "entry:",
             "  %mk = bitcast i16 %mask to <16 x i1>",
             "  %len = sub i64 %k1, %k0",
             f"  %mainlen = and i64 %len, {-unroll}",
             "  %mainend = add i64 %k0, %mainlen",
             "  %hasmain = icmp ugt i64 %mainlen, 0",
             "  br i1 %hasmain, label %main, label %mid",
             "main:",
             "  %kk = phi i64 [%k0, %entry], [%kn, %main]"]
    tiles = [(r, h) for r in range(rows) for h in range(halves)]
    for r, h in tiles:
        lines.append(f"  %acc{r}_{h} = phi {v} [zeroinitializer, %entry], [%u{unroll - 1}acc{r}_{h}, %main]")

    def step(kk, acc, out):
        """One k step: acc{r}_{h} names in, out{r}_{h} names made (FMA chains, one per element)."""
        body = [f"  %{out}boff = mul i64 {kk}, {NR}"]
        for h in range(halves):
            body += [f"  %{out}bo{h} = add i64 %{out}boff, {16 * h}",
                     f"  %{out}bq{h} = getelementptr float, ptr %bp, i64 %{out}bo{h}",
                     f"  %{out}b{h} = load {v}, ptr %{out}bq{h}, align 4"]
        for r in range(rows):
            body += [f"  %{out}ar{r} = mul i64 %lda, {r}",
                     f"  %{out}ao{r} = add i64 %{out}ar{r}, {kk}",
                     f"  %{out}aq{r} = getelementptr float, ptr %a, i64 %{out}ao{r}",
                     f"  %{out}as{r} = load float, ptr %{out}aq{r}, align 4",
                     f"  %{out}ai{r} = insertelement {v} poison, float %{out}as{r}, i32 0",
                     f"  %{out}av{r} = shufflevector {v} %{out}ai{r}, {v} poison, <16 x i32> zeroinitializer"]
            for h in range(halves):
                body.append(f"  %{out}acc{r}_{h} = call {v} @llvm.fma.v16f32({v} %{out}av{r}, {v} %{out}b{h}, "
                            f"{v} %{acc}{r}_{h})")
        return body

    previous = "acc"
    for u in range(unroll):
        lines.append(f"  %kk{u} = add i64 %kk, {u}")
        lines += step(f"%kk{u}", previous, f"u{u}")
        previous = f"u{u}acc"
    lines += ["  %kn = add i64 %kk, " + str(unroll),
              "  %mmore = icmp ult i64 %kn, %mainend",
              "  br i1 %mmore, label %main, label %mid",
              "mid:",
              "  %km = phi i64 [%k0, %entry], [%kn, %main]"]
    for r, h in tiles:
        lines.append(f"  %macc{r}_{h} = phi {v} [zeroinitializer, %entry], [%u{unroll - 1}acc{r}_{h}, %main]")
    lines += ["  %rest = icmp ult i64 %km, %k1",
              "  br i1 %rest, label %tail, label %done",
              "tail:",
              "  %kt = phi i64 [%km, %mid], [%ktn, %tail]"]
    for r, h in tiles:
        lines.append(f"  %tacc{r}_{h} = phi {v} [%macc{r}_{h}, %mid], [%tnacc{r}_{h}, %tail]")
    lines += step("%kt", "tacc", "tn")
    lines += ["  %ktn = add i64 %kt, 1",
              "  %tmore = icmp ult i64 %ktn, %k1",
              "  br i1 %tmore, label %tail, label %done"]
    lines += ["done:"]
    for r, h in tiles:
        lines.append(f"  %nacc{r}_{h} = phi {v} [%macc{r}_{h}, %mid], [%tnacc{r}_{h}, %tail]")
    lines += ["  %fb = and i32 %flags, 1",
              "  %hasbias = icmp ne i32 %fb, 0",
              "  %fr = and i32 %flags, 2",
              "  %hasrelu = icmp ne i32 %fr, 0",
              "  %addbias = and i1 %last, %hasbias",
              "  %dorelu = and i1 %last, %hasrelu"]

    def load(ptr, h, name):
        if h == halves - 1:
            return [f"  %{name} = call {v} @llvm.masked.load.v16f32.p0(ptr {ptr}, i32 4, <16 x i1> %mk, {v} zeroinitializer)"]
        return [f"  %{name} = load {v}, ptr {ptr}, align 4"]

    for h in range(halves):
        lines.append(f"  %zq{h} = getelementptr float, ptr %bias, i64 {16 * h}")
        lines.append(f"  br i1 %addbias, label %lb{h}, label %nb{h}")
        lines.append(f"lb{h}:")
        lines += load(f"%zq{h}", h, f"zl{h}")
        lines.append(f"  br label %nb{h}")
        lines.append(f"nb{h}:")
        pred = "%done" if h == 0 else f"%nb{h - 1}"
        lines.append(f"  %z{h} = phi {v} [zeroinitializer, {pred}], [%zl{h}, %lb{h}]")
    for r, h in tiles:
        t = f"{r}_{h}"
        lines += [f"  %cr{t} = mul i64 %ldc, {r}",
                  f"  %co{t} = add i64 %cr{t}, {16 * h}",
                  f"  %cq{t} = getelementptr float, ptr %c, i64 %co{t}"]
        lines += load(f"%cq{t}", h, f"old{t}")
        lines += [f"  %prev{t} = select i1 %first, {v} zeroinitializer, {v} %old{t}",
                  f"  %s{t} = fadd {v} %prev{t}, %nacc{t}",            # C + acc: the kernel's store
                  f"  %sb{t} = fadd {v} %s{t}, %z{h}",                 # the plan's += bias
                  f"  %w{t} = select i1 %addbias, {v} %sb{t}, {v} %s{t}",
                  f"  %neg{t} = fcmp olt {v} %w{t}, zeroinitializer",  # maximum(w, +0): w is never -0 here
                  f"  %rl{t} = select <16 x i1> %neg{t}, {v} zeroinitializer, {v} %w{t}",
                  f"  %f{t} = select i1 %dorelu, {v} %rl{t}, {v} %w{t}"]
        if h == halves - 1:
            lines.append(f"  call void @llvm.masked.store.v16f32.p0({v} %f{t}, ptr %cq{t}, i32 4, <16 x i1> %mk)")
        else:
            lines.append(f"  store {v} %f{t}, ptr %cq{t}, align 4")
    lines += ["  ret void", "}"]
    return lines


def _row_tile_choice():
    """%r = the largest of ROW_TILES not above %left (the rows left), as a chain of selects."""
    tiles = sorted(ROW_TILES)
    lines, chosen = [], "1"
    for t in tiles[1:]:
        lines += [f"  %ge{t} = icmp uge i64 %left, {t}",
                  f"  %r{t} = select i1 %ge{t}, i64 {t}, i64 {chosen}"]
        chosen = f"%r{t}"
    return lines + [f"  %r = add i64 {chosen}, 0"]


def _driver():
    """gemm(x, m, k, w, n, out, bounds, nblocks, bias, flags, scratch): every K block, panel (packed into
    scratch) and row tile."""
    args = "ptr %ap, i64 %k, ptr %bpp, ptr %cp, i64 %n, i64 %k0, i64 %k1, i1 %first, i1 %last, ptr %zp, i32 %flags, i16 %mask"
    lines = ["define void @dy2s_gemm(ptr noalias %x, i64 %m, i64 %k, ptr noalias %w, i64 %n, ptr noalias %out,"
             " ptr %bounds, i64 %nblocks, ptr %bias, i32 %flags, ptr noalias %scratch) {",
             "entry:",
             f"  %panels0 = add i64 %n, {NR - 1}",
             f"  %panels = udiv i64 %panels0, {NR}",
             "  %lastblock = sub i64 %nblocks, 1",
             f"  %fp = and i32 %flags, {PACKED}",
             "  %prepacked = icmp ne i32 %fp, 0",
             "  br label %block",
             "block:",
             "  %bi = phi i64 [0, %entry], [%bin, %blockend]",
             "  %kbq = getelementptr i64, ptr %bounds, i64 %bi",
             "  %k0 = load i64, ptr %kbq",
             "  %bi1 = add i64 %bi, 1",
             "  %kbq1 = getelementptr i64, ptr %bounds, i64 %bi1",
             "  %k1 = load i64, ptr %kbq1",
             "  %first = icmp eq i64 %bi, 0",
             "  %last = icmp eq i64 %bi, %lastblock",
             "  br label %panel",
             "panel:",
             "  %p = phi i64 [0, %block], [%pn, %panelend]",
             f"  %col = mul i64 %p, {NR}",
             "  %width0 = sub i64 %n, %col",
             f"  %wide = icmp ugt i64 %width0, {NR}",
             f"  %width = select i1 %wide, i64 {NR}, i64 %width0",
             "  %halves0 = add i64 %width, 15",
             "  %halves = lshr i64 %halves0, 4",          # vectors in this panel's rows (the last masked)
             "  %full0 = sub i64 %halves, 1",
             "  %full = shl i64 %full0, 4",
             "  %tailw = sub i64 %width, %full",
             "  %bits0 = shl i64 1, %tailw",
             "  %bits1 = sub i64 %bits0, 1",
             "  %mask = trunc i64 %bits1 to i16",
             "  br i1 %prepacked, label %usepacked, label %packnow",
             "packnow:",                                  # pack this panel's K block into scratch now
             "  %wo = mul i64 %col, %k",
             "  %wp = getelementptr float, ptr %w, i64 %wo",
             "  call void @pack_panel(ptr %wp, i64 %width, i64 %k, i64 %k0, i64 %k1, ptr %scratch)",
             "  br label %packed",
             "usepacked:",                                # w is dy2s_pack's buffer: this panel's K block in it
             "  %poff = call i64 @packed_offset(i64 %k0, i64 %k1, i64 %p, i64 %panels)",
             "  %pbase = getelementptr float, ptr %w, i64 %poff",
             "  br label %packed",
             "packed:",
             "  %buf = phi ptr [%scratch, %packnow], [%pbase, %usepacked]",
             f"  %back0 = mul i64 %k0, {NR}",
             "  %back = sub i64 0, %back0",
             "  %bpp = getelementptr float, ptr %buf, i64 %back",     # the tiles index it by kk * NR
             "  %zp = getelementptr float, ptr %bias, i64 %col",
             "  br label %rows",
             "rows:",
             "  %i = phi i64 [0, %packed], [%in, %tiled]",
             "  %left = sub i64 %m, %i",
] + _row_tile_choice() + [
             "  %ao = mul i64 %i, %k",
             "  %ap = getelementptr float, ptr %x, i64 %ao",
             "  %co0 = mul i64 %i, %n",
             "  %co = add i64 %co0, %col",
             "  %cp = getelementptr float, ptr %out, i64 %co",
             "  %sel0 = shl i64 %r, 3",
             "  %sel = add i64 %sel0, %halves",
             "  switch i64 %sel, label %tiled [" + " ".join(
                 f"i64 {8 * r + h}, label %t{r}_{h}" for r in ROW_TILES for h in range(1, HALVES + 1)) + "]"]
    for r in ROW_TILES:
        for h in range(1, HALVES + 1):
            lines += [f"t{r}_{h}:",
                      f"  call void @micro_{r}_{h}({args})",
                      "  br label %tiled"]
    lines += ["tiled:",
              "  %in = add i64 %i, %r",
              "  %rmore = icmp ult i64 %in, %m",
              "  br i1 %rmore, label %rows, label %panelend",
              "panelend:",
              "  %pn = add i64 %p, 1",
              "  %pmore = icmp ult i64 %pn, %panels",
              "  br i1 %pmore, label %panel, label %blockend",
              "blockend:",
              "  %bin = add i64 %bi, 1",
              "  %bmore = icmp ult i64 %bin, %nblocks",
              "  br i1 %bmore, label %block, label %exit",
              "exit:",
              "  ret void",
              "}"]
    return lines


def _panel_packer():
    """pack_panel(w, width, k, k0, k1, dst): dst[kk - k0, j] = w[j, kk] for j < width (rows of w k apart),
    0 for width <= j < NR: one K block of one NR-row panel of the weight, k-major, as the tiles read it
    (16 x 16 blocks transposed in registers; a K tail of fewer than 16 one element at a time)."""
    v = "<16 x float>"
    lo = ", ".join(f"i32 {x}" for j in range(8) for x in (j, j + 16))
    hi = ", ".join(f"i32 {x}" for j in range(8, 16) for x in (j, j + 16))
    lines = ["define internal void @pack_panel(ptr noalias %w, i64 %width, i64 %k, i64 %k0, i64 %k1, ptr noalias %dst) {",
             "entry:",
             "  br label %kloop",
             "kloop:",
             "  %kk = phi i64 [%k0, %entry], [%kn, %vec]",
             "  %left = sub i64 %k1, %kk",
             "  %full = icmp uge i64 %left, 16",
             "  br i1 %full, label %vec, label %tail",
             "vec:",
             "  %rel = sub i64 %kk, %k0",
             f"  %drow = mul i64 %rel, {NR}"]
    for g in range(HALVES):
        rows = []
        for r in range(16):
            j = 16 * g + r
            t = f"{g}_{r}"
            lines += [f"  %in{t} = icmp ult i64 {j}, %width",
                      f"  %m{t} = select i1 %in{t}, <16 x i1> splat (i1 true), <16 x i1> zeroinitializer",
                      f"  %so{t} = mul i64 %k, {j}",
                      f"  %sa{t} = add i64 %so{t}, %kk",
                      f"  %sq{t} = getelementptr float, ptr %w, i64 %sa{t}",
                      f"  %r{t}_0 = call {v} @llvm.masked.load.v16f32.p0(ptr %sq{t}, i32 4, <16 x i1> %m{t}, {v} zeroinitializer)"]
            rows.append(f"%r{t}_0")
        for stage in range(4):
            new = [None] * 16
            for i in range(8):
                a, b = rows[i], rows[i + 8]
                na, nb = f"%r{g}_{2 * i}_{stage + 1}", f"%r{g}_{2 * i + 1}_{stage + 1}"
                lines += [f"  {na} = shufflevector {v} {a}, {v} {b}, <16 x i32> <{lo}>",
                          f"  {nb} = shufflevector {v} {a}, {v} {b}, <16 x i32> <{hi}>"]
                new[2 * i], new[2 * i + 1] = na, nb
            rows = new
        for t in range(16):
            lines += [f"  %do{g}_{t} = add i64 %drow, {NR * t + 16 * g}",
                      f"  %dq{g}_{t} = getelementptr float, ptr %dst, i64 %do{g}_{t}",
                      f"  store {v} {rows[t]}, ptr %dq{g}_{t}, align 4"]
    lines += ["  %kn = add i64 %kk, 16",
              "  br label %kloop",
              "tail:",
              "  %tdone = icmp uge i64 %kk, %k1",
              "  br i1 %tdone, label %exit, label %tk",
              "tk:",
              "  %tkk = phi i64 [%kk, %tail], [%tkn, %tjend]",
              "  %trel = sub i64 %tkk, %k0",
              f"  %tdrow = mul i64 %trel, {NR}",
              "  br label %tj",
              "tj:",
              "  %j = phi i64 [0, %tk], [%jn, %tj]",
              "  %tin = icmp ult i64 %j, %width",
              "  %tjk = mul i64 %j, %k",
              "  %tsa = add i64 %tjk, %tkk",
              "  %tsafe = select i1 %tin, i64 %tsa, i64 0",
              "  %tsq = getelementptr float, ptr %w, i64 %tsafe",
              "  %tld = load float, ptr %tsq, align 4",
              "  %tval = select i1 %tin, float %tld, float 0.0",
              "  %tdo = add i64 %tdrow, %j",
              "  %tdq = getelementptr float, ptr %dst, i64 %tdo",
              "  store float %tval, ptr %tdq, align 4",
              "  %jn = add i64 %j, 1",
              f"  %jmore = icmp ult i64 %jn, {NR}",
              "  br i1 %jmore, label %tj, label %tjend",
              "tjend:",
              "  %tkn = add i64 %tkk, 1",
              "  %tkmore = icmp ult i64 %tkn, %k1",
              "  br i1 %tkmore, label %tk, label %exit",
              "exit:",
              "  ret void",
              "}"]
    return lines


def _packer():
    """packed_offset(k0, k1, p, panels): where panel p of the K block [k0, k1) starts in a packed weight
    (blocks in k order, each its panels in order, each (k1 - k0) x NR, k-major); dy2s_pack(w, n, k,
    bounds, nblocks, dst): the whole weight packed so (k * panels * NR floats), as the driver packs it
    panel by panel into scratch when the PACKED flag is not set."""
    return ["define internal i64 @packed_offset(i64 %k0, i64 %k1, i64 %p, i64 %panels) {",
            "entry:",
            "  %pb0 = mul i64 %k0, %panels",
            f"  %pb = mul i64 %pb0, {NR}",
            "  %len = sub i64 %k1, %k0",
            "  %pl0 = mul i64 %p, %len",
            f"  %pl = mul i64 %pl0, {NR}",
            "  %off = add i64 %pb, %pl",
            "  ret i64 %off",
            "}",
            "define void @dy2s_pack(ptr noalias %w, i64 %n, i64 %k, ptr %bounds, i64 %nblocks, ptr noalias %dst) {",
            "entry:",
            f"  %panels0 = add i64 %n, {NR - 1}",
            f"  %panels = udiv i64 %panels0, {NR}",
            "  br label %block",
            "block:",
            "  %bi = phi i64 [0, %entry], [%bin, %blockend]",
            "  %kbq = getelementptr i64, ptr %bounds, i64 %bi",
            "  %k0 = load i64, ptr %kbq",
            "  %bi1 = add i64 %bi, 1",
            "  %kbq1 = getelementptr i64, ptr %bounds, i64 %bi1",
            "  %k1 = load i64, ptr %kbq1",
            "  br label %panel",
            "panel:",
            "  %p = phi i64 [0, %block], [%pn, %panel]",
            f"  %col = mul i64 %p, {NR}",
            "  %width0 = sub i64 %n, %col",
            f"  %wide = icmp ugt i64 %width0, {NR}",
            f"  %width = select i1 %wide, i64 {NR}, i64 %width0",
            "  %wo = mul i64 %col, %k",
            "  %wp = getelementptr float, ptr %w, i64 %wo",
            "  %off = call i64 @packed_offset(i64 %k0, i64 %k1, i64 %p, i64 %panels)",
            "  %dp = getelementptr float, ptr %dst, i64 %off",
            "  call void @pack_panel(ptr %wp, i64 %width, i64 %k, i64 %k0, i64 %k1, ptr %dp)",
            "  %pn = add i64 %p, 1",
            "  %pmore = icmp ult i64 %pn, %panels",
            "  br i1 %pmore, label %panel, label %blockend",
            "blockend:",
            "  %bin = add i64 %bi, 1",
            "  %bmore = icmp ult i64 %bin, %nblocks",
            "  br i1 %bmore, label %block, label %exit",
            "exit:",
            "  ret void",
            "}"]


def _object_entry():
    """dy2s_gemm_objects: dy2s_gemm with x, w, out, bias and scratch passed as the arrays themselves (their
    data pointers read at NumPy's struct offset here, not by `.ctypes.data` in Python: ~1 µs each); the
    bias read only where the BIAS flag says, the scratch only where PACKED does not (None otherwise)."""
    at = ARRAY_LAYOUT["data"]
    lines = ["define void @dy2s_gemm_objects(ptr %xo, i64 %m, i64 %k, ptr %wo, i64 %n, ptr %oo, ptr %bounds,"
             " i64 %nblocks, ptr %bo, i32 %flags, ptr %so) {",
             "entry:"]
    for name in ("x", "w", "out"):
        lines += [f"  %{name}q = getelementptr i8, ptr %{name[0]}o, i64 {at}",
                  f"  %{name} = load ptr, ptr %{name}q"]
    lines += ["  %fb = and i32 %flags, 1",
              "  %hasbias = icmp ne i32 %fb, 0",
              "  br i1 %hasbias, label %lb, label %nb",
              "lb:",
              f"  %bq = getelementptr i8, ptr %bo, i64 {at}",
              "  %bl = load ptr, ptr %bq",
              "  br label %nb",
              "nb:",
              "  %bias = phi ptr [null, %entry], [%bl, %lb]",
              f"  %fp = and i32 %flags, {PACKED}",
              "  %prepacked = icmp ne i32 %fp, 0",
              "  br i1 %prepacked, label %ns, label %ls",
              "ls:",
              f"  %sq = getelementptr i8, ptr %so, i64 {at}",
              "  %sl = load ptr, ptr %sq",
              "  br label %ns",
              "ns:",
              "  %scratch = phi ptr [null, %nb], [%sl, %ls]",
              "  call void @dy2s_gemm(ptr %x, i64 %m, i64 %k, ptr %w, i64 %n, ptr %out, ptr %bounds, i64 %nblocks,"
              " ptr %bias, i32 %flags, ptr %scratch)",
              "  ret void",
              "}"]
    return lines


def _fast_entry():
    """dy2s_gemm_fast(self, args, nargs), a METH_FASTCALL function (a builtin: no ctypes marshalling of
    eleven arguments, ~1-3 us a call) for a weight kept packed: `fast(x, packed, out, bias, params)` runs
    dy2s_gemm_objects on x's row count with `params` (an int64 array: k, n, the K bounds' address, their
    count, the flags, and the process's PyEval_SaveThread, PyEval_RestoreThread and Py_IncRef: passed,
    not written in the code, so the object code stays fit for the disk cache) with the GIL released, and
    returns out. Only `Call.fast_params`' arrays are passed to it (`gemm_call`'s checks)."""
    at, dims = ARRAY_LAYOUT["data"], ARRAY_LAYOUT["dimensions"]
    lines = ["define ptr @dy2s_gemm_fast(ptr %self, ptr %argv, i64 %nargs) {",
             "entry:"]
    for j, name in enumerate(("x", "w", "out", "bias", "params")):
        lines += [f"  %a{j} = getelementptr ptr, ptr %argv, i64 {j}",
                  f"  %{name} = load ptr, ptr %a{j}"]
    lines += [f"  %pq = getelementptr i8, ptr %params, i64 {at}",
              "  %pd = load ptr, ptr %pq"]
    for j, name in enumerate(("k", "n", "boundsi", "nblocks", "flags64", "savei", "restorei", "increfi")):
        lines += [f"  %p{j} = getelementptr i64, ptr %pd, i64 {j}",
                  f"  %{name} = load i64, ptr %p{j}"]
    lines += ["  %bounds = inttoptr i64 %boundsi to ptr",
              "  %flags = trunc i64 %flags64 to i32",
              "  %save = inttoptr i64 %savei to ptr",
              "  %restore = inttoptr i64 %restorei to ptr",
              "  %incref = inttoptr i64 %increfi to ptr",
              f"  %dq = getelementptr i8, ptr %x, i64 {dims}",
              "  %dp = load ptr, ptr %dq",
              "  %m = load i64, ptr %dp",
              "  %state = call ptr %save()",
              "  call void @dy2s_gemm_objects(ptr %x, i64 %m, i64 %k, ptr %w, i64 %n, ptr %out, ptr %bounds, i64 %nblocks,"
              " ptr %bias, i32 %flags, ptr null)",
              "  call void %restore(ptr %state)",
              "  call void %incref(ptr %out)",
              "  ret ptr %out",
              "}"]
    return lines


def module_text():
    """The LLVM module: the tile functions, the driver and the packer (no process addresses in it)."""
    v = "<16 x float>"
    lines = [f"declare {v} @llvm.fma.v16f32({v}, {v}, {v})",
             f"declare {v} @llvm.masked.load.v16f32.p0(ptr, i32, <16 x i1>, {v})",
             f"declare void @llvm.masked.store.v16f32.p0({v}, ptr, i32, <16 x i1>)"]
    for r in ROW_TILES:
        for h in range(1, HALVES + 1):
            lines += _micro(r, h)
    lines += _panel_packer() + _packer() + _driver() + _object_entry() + _fast_entry()
    return "\n".join(lines) + "\n"


class Kernel:
    """The loaded module: `gemm(...)` as a ctypes function (the GIL released while it runs)."""

    def __init__(self, addresses, keep, from_disk=False):
        p, i64 = ctypes.c_void_p, ctypes.c_int64
        self.gemm = ctypes.CFUNCTYPE(None, p, i64, i64, p, i64, p, p, i64, p, ctypes.c_int32, p)(addresses[_NAMES[0]])
        self.pack = ctypes.CFUNCTYPE(None, p, i64, i64, p, i64, p)(addresses[_NAMES[1]])
        o = ctypes.py_object       # CFUNCTYPE: the GIL released while it runs (the caller holds the arrays)
        self.gemm_objects = ctypes.CFUNCTYPE(None, o, i64, i64, o, i64, o, p, i64, o, ctypes.c_int32, o)(
            addresses[_NAMES[2]]) if layout_ok() else None
        self.fast = builtin(addresses[_NAMES[3]], _NAMES[3]) if self.gemm_objects is not None else None
        self.keep, self.from_disk = keep, from_disk     # (self.fast[1]: its PyMethodDef, kept alive here)


def kernel():
    """The process's Kernel (compiled once, or loaded from the disk cache), or why not (a string)."""
    if "kernel" not in _STATE:
        with _LOCK:
            if "kernel" not in _STATE:
                _STATE["kernel"] = _load_or_compile()
    return _STATE["kernel"]


def _load_or_compile():
    if not may_be_available():
        return "llvmlite unavailable"
    key = disk_cache.entry_key(repr(("gemm", NR, MR, GEMM_Q, _NAMES, ARRAY_LAYOUT["data"])))
    entry = disk_cache.read(key)
    if entry is not None:
        loaded = objects.load(entry[1], entry[2], list(_NAMES))
        if loaded is not None:
            return Kernel(loaded[0], loaded[1], from_disk=True)
    if engine() is None:
        return "llvmlite unavailable"
    try:
        obj = engine().emit_object(module_text())
    except Exception as e:          # noqa: BLE001 - an LLVM that does not take this IR: NumPy's product stays
        return f"the GEMM kernel did not compile: {e}"
    shared = objects.link(obj)
    loaded = objects.load(obj, shared, list(_NAMES))
    if loaded is None:
        return "the compiled GEMM could not be loaded"
    disk_cache.write(key, {"name": _NAMES[0]}, obj, shared)
    return Kernel(loaded[0], loaded[1])


class Call:
    """The kernel's fixed arguments for one key: K block bounds, flags, the panel buffers (one per call
    running at once: taken from and given back to a list, whose pop and append are atomic), and the
    weights kept packed (`packed_weight`)."""

    def __init__(self, found):
        k, n, has_bias, relu = found
        self.bounds = np.array([b for b, _ in blocks(k)] + [k], np.int64)
        self.nblocks, self.bounds_at = len(self.bounds) - 1, self.bounds.ctypes.data
        self.flags = (BIAS if has_bias else 0) | (RELU if relu else 0)
        self.scratch_shape = (max(e - b for b, e in blocks(k)) * NR,)
        self.packed_shape = (k * -(-n // NR) * NR,)
        self.spare = []
        self.packs = {}         # id(w) -> (weakref to w, its packed copy or None: seen once)
        self.fast = None        # the kernel's builtin entry, once a weight was packed (gemm_call's fast path),
        self.fast_params = None  # and its params (`_fast_entry`)

    def packed_weight(self, w):
        """w packed whole (`dy2s_pack`), kept while w lives, or None (the call packs w panel by panel).

        Kept only for an array no write can reach unseen (`buffers.escaped`: every API write gives a
        Tensor a new array, so w's values are those it was packed from), and only from w's second call:
        a weight replaced at every call (a training step's) is never packed twice. At most PACKS_KEPT
        weights per call site; each entry goes when its array does (weakref)."""
        key = id(w)
        if escaped(w):
            self.packs.pop(key, None)       # (an entry under w's id is w's: entries go with their arrays)
            return None
        entry = self.packs.get(key)
        if entry is not None and entry[0]() is w:
            if entry[1] is not None:
                return entry[1]
            packed = self.pack(w)
            self.packs[key] = (entry[0], packed)
            return packed
        if len(self.packs) >= PACKS_KEPT:
            self.packs.clear()
        packs = self.packs
        self.packs[key] = (weakref.ref(w, lambda ref: packs.get(key, (None,))[0] is ref and packs.pop(key, None)),
                           None)
        return None

    def pack(self, w):
        """w (n, k) packed whole, as `multiply(..., packed=)` reads it."""
        packed = np.empty(self.packed_shape, np.float32)
        if self.fast is None and kernel().fast is not None:
            self.fast_params = np.array([w.shape[1], w.shape[0], self.bounds_at, self.nblocks, self.flags | PACKED]
                                        + [ctypes.cast(getattr(ctypes.pythonapi, name), ctypes.c_void_p).value
                                           for name in ("PyEval_SaveThread", "PyEval_RestoreThread", "Py_IncRef")],
                                        np.int64)
            self.fast = kernel().fast[0]
        kernel().pack(w.ctypes.data, w.shape[0], w.shape[1], self.bounds_at, self.nblocks, packed.ctypes.data)
        return packed


PACKS_KEPT = 4


def multiply(found, x, w, bias, out, call=None, packed=None):
    """out = the plan's linear (and ReLU, where found says) of C-contiguous float32 x (m, k) by w (n, k);
    `packed`: w as `dy2s_pack` packed it (then w is not read)."""
    call = call or Call(found)
    k, n = found[0], found[1]
    loaded = kernel()
    if loaded.gemm_objects is not None:
        scratch = None if packed is not None else call.spare.pop() if call.spare else np.empty(call.scratch_shape,
                                                                                                np.float32)
        loaded.gemm_objects(x, x.shape[0], k, w if packed is None else packed, n, out, call.bounds_at, call.nblocks,
                            bias, call.flags | (PACKED if packed is not None else 0), scratch)
        if scratch is not None and len(call.spare) < 2:
            call.spare.append(scratch)
        return out
    if packed is not None:
        kernel().gemm(x.ctypes.data, x.shape[0], k, packed.ctypes.data, n, out.ctypes.data, call.bounds_at,
                      call.nblocks, bias.ctypes.data if bias is not None else None, call.flags | PACKED, None)
        return out
    try:
        scratch = call.spare.pop()
    except IndexError:
        scratch = np.empty(call.scratch_shape, np.float32)
    kernel().gemm(x.ctypes.data, x.shape[0], k, w.ctypes.data, n, out.ctypes.data, call.bounds_at, call.nblocks,
                  bias.ctypes.data if bias is not None else None, call.flags, scratch.ctypes.data)
    if len(call.spare) < 2:
        call.spare.append(scratch)
    return out


def numpy_linear(x, w, bias, relu):
    """The plan's NumPy lines for the op (and the ReLU after it): the bits to match."""
    out = np.matmul(x, w.T)
    if bias is not None:
        out += bias
    if relu:
        out = np.maximum(out, 0, out=out)
    return out


def smallest_rows(k, n):
    """The fewest rows for which NumPy's sgemm takes OpenBLAS's level-3 driver (not a small-matrix kernel)."""
    return max(2, int(SMALL_MNK // (k * n)) + 1)


def check(found, m=None):
    """'' when the kernel gives the plan's NumPy bits for analyse's key `found`: rows m (where known) and a
    row count of each tail size, special and random values; else why not. Once per key and m."""
    key = (found, m)
    if key not in _CHECKED:
        _CHECKED[key] = _self_test(found, m)
    return _CHECKED[key]


def known(found, m=None):
    """What check found for that key and m before ('' or why not), or None: not checked in this process."""
    return _CHECKED.get((found, m))


def check_job(found, m=None):
    """`job()` loads the kernel and runs check (the compiler thread); `job.cached()` its earlier result, else None."""
    def job():
        return check(found, m)

    job.cached = lambda: known(found, m)
    return job


def _self_test(found, m):
    loaded = kernel()
    if isinstance(loaded, str):
        return loaded
    k, n, has_bias, relu = found
    if blocks(k) is None:
        return f"k = {k}: OpenBLAS's one-thread and threaded drivers split it differently"
    low = smallest_rows(k, n)
    counts = sorted({low + j for j in range(2 * MR)} | ({m} if m is not None and m >= low else set()))
    rng = np.random.default_rng(11)
    most, call = counts[-1], Call(found)
    for trial in range(3):
        if trial == 0:
            xs = probe_values(np.float32, most * k).reshape(most, k)
            w = np.roll(probe_values(np.float32, n * k), 3).reshape(n, k)
        else:
            xs = (rng.standard_normal((most, k)) * 10 ** trial).astype(np.float32)
            w = rng.standard_normal((n, k)).astype(np.float32)
        b = rng.standard_normal(n).astype(np.float32) if has_bias else None
        with np.errstate(all="ignore"):
            whole = numpy_linear(xs, w, b, relu)
        for rows in counts:     # NumPy's rows do not depend on m (its level-3 driver): one call serves each count
            x, want = (xs[most - rows:], whole[most - rows:]) if trial else (xs[:rows], whole[:rows])
            with np.errstate(all="ignore"):
                got = multiply(found, x, w, b, np.empty((rows, n), np.float32), call)
                if rows == most:        # the same product on the weight packed whole (a weight kept packed)
                    again = multiply(found, x, w, b, np.empty((rows, n), np.float32), call, call.pack(w))
                    got = got if same_bits(again, want) else again
            if not same_bits(got, want):
                return (f"self-test: the native GEMM differs from NumPy's sgemm on ({rows}, {k}) @ ({n}, {k}).T "
                        f"(OpenBLAS core: {openblas_core() or 'not OpenBLAS'}; the order modelled is SkylakeX's)")
    return ""


class NativeGemm(Warming):
    """A plan's call of one `linear` (+ ReLU): `run(x, w[, bias])` is None (the plan's NumPy lines run,
    timed while the product warms: `tiering.Warming`) until the kernel passed its self-test, and for any
    call not of the arrays it was checked for."""

    def __init__(self, found, m, status):
        super().__init__()
        self.found, self.m, self.status = found, m, status
        self.run = lambda *arrays: None

    def use(self, why):
        self.warm = None
        if why:
            self.status[1] = why
            return
        self.run = gemm_call(self.found)
        self.status[1] = "native"


def gemm_call(found):
    """The plan's function: out = linear (+ ReLU) of (x, w, bias) natively, or None for arrays of
    another type, dtype, shape or layout, or too few rows (NumPy's small-matrix kernels)."""
    k, n, has_bias, _ = found
    low = smallest_rows(k, n)
    call = Call(found)
    ndarray, float32, empty = np.ndarray, np.dtype("float32"), np.empty
    w_shape, bias_shape = (n, k), (n,)

    packs = call.packs

    def run(x, w, bias=None):
        if (type(x) is not ndarray or type(w) is not ndarray or x.dtype != float32 or w.dtype != float32
                or x.ndim != 2 or x.shape[1] != k or w.shape != w_shape or x.shape[0] < low
                or not x.flags.c_contiguous or not w.flags.c_contiguous):
            return None
        if has_bias and (type(bias) is not ndarray or bias.dtype != float32 or bias.shape != bias_shape
                         or not bias.flags.c_contiguous):
            return None
        entry = packs.get(id(w))
        if entry is not None and entry[1] is not None and entry[0]() is w and unmarked(w) and call.fast:
            # w kept packed, not marked since (a kept w owns its memory and is large: packed_weight checked)
            return call.fast(x, entry[1], empty((x.shape[0], n), float32), bias, call.fast_params)
        return multiply(found, x, w, bias if has_bias else None, empty((x.shape[0], n), float32), call,
                        call.packed_weight(w))
    run.call = call
    return run
